/* chat_jinja.c — conversations through the Jinja interpreter (see chat_jinja.h). */
#include <string.h>

#include "common/alloc.h"
#include "common/strbuf.h"
#include "chat_jinja.h"

/* s as a JSON string (the interpreter's context is JSON). */
static void json_str(ember_sbuf *b, const char *s)
{
    ember_sbuf_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') ember_sbuf_add(b, "\\", 1), ember_sbuf_add(b, s, 1);
        else if (c < 0x20) ember_sbuf_printf(b, "\\u%04x", c);
        else ember_sbuf_add(b, s, 1);
    }
    ember_sbuf_add(b, "\"", 1);
}

static ember_status render_context(const ember_jinja *j, const char *bos, const char *eos, const char *messages,
                                   size_t mlen, const char *tools, size_t tlen, bool gen, char **out, size_t *out_len,
                                   ember_err *err)
{
    ember_sbuf b = {0};
    ember_sbuf_puts(&b, "{\"messages\": ");
    ember_sbuf_add(&b, messages, mlen);
    if (tools) ember_sbuf_puts(&b, ", \"tools\": "), ember_sbuf_add(&b, tools, tlen);
    ember_sbuf_printf(&b, ", \"add_generation_prompt\": %s, \"bos_token\": ", gen ? "true" : "false");
    json_str(&b, bos ? bos : "<s>");
    ember_sbuf_puts(&b, ", \"eos_token\": ");
    json_str(&b, eos ? eos : "</s>");
    ember_sbuf_puts(&b, "}");
    size_t len = b.len;
    char *ctx = ember_sbuf_take(&b);
    if (!ctx) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_status s = ember_jinja_render(j, ctx, len, NULL, out, out_len, err);
    ember_free(ctx);
    return s;
}

ember_status ember_chat_jinja_render_json(const ember_jinja *j, const char *bos, const char *eos, const char *messages_json,
                                          size_t messages_len, const char *tools_json, size_t tools_len, bool gen,
                                          char **out, size_t *out_len, ember_err *err)
{
    *out = NULL, *out_len = 0;
    return render_context(j, bos, eos, messages_json, messages_len, tools_json, tools_len, gen, out, out_len, err);
}

static char *messages_json(const ember_chat_message *msgs, size_t n, size_t *len)
{
    ember_sbuf b = {0};
    ember_sbuf_add(&b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        ember_sbuf_puts(&b, i ? ", {\"role\": " : "{\"role\": ");
        json_str(&b, msgs[i].role ? msgs[i].role : "");
        ember_sbuf_puts(&b, ", \"content\": ");
        json_str(&b, msgs[i].content ? msgs[i].content : "");
        ember_sbuf_add(&b, "}", 1);
    }
    ember_sbuf_add(&b, "]", 1);
    *len = b.len;
    return ember_sbuf_take(&b);
}

static ember_status render_msgs(const ember_jinja *j, const char *bos, const char *eos, const ember_chat_message *msgs,
                                size_t n, bool gen, char **out, size_t *out_len, ember_err *err)
{
    size_t len = 0;
    char *m = messages_json(msgs, n, &len);
    if (!m) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_status s = render_context(j, bos, eos, m, len, NULL, 0, gen, out, out_len, err);
    ember_free(m);
    return s;
}

/* The last occurrence of w (n bytes) in s (k bytes), or NULL. */
static const char *last_of(const char *s, size_t k, const char *w, size_t n)
{
    for (size_t i = k >= n ? k - n + 1 : 0; n && i-- > 0;)
        if (memcmp(s + i, w, n) == 0) return s + i;
    return NULL;
}

/* Where the content of the last message ends in prefix (it may be trimmed there). */
static size_t content_end(const char *prefix, size_t len, const char *content)
{
    size_t n = strlen(content), a = 0;
    const char *p = last_of(prefix, len, content, n);
    if (p) return (size_t)(p - prefix) + n;
    while (a < n && strchr(" \t\n\r", content[a])) a++;
    while (n > a && strchr(" \t\n\r", content[n - 1])) n--;
    p = last_of(prefix, len, content + a, n - a);
    return p ? (size_t)(p - prefix) + (n - a) : len;
}

ember_status ember_chat_jinja_render(const ember_jinja *j, const char *bos, const char *eos, const ember_chat_message *msgs,
                                     size_t n, size_t from, bool gen, char **out, size_t *out_len, ember_err *err)
{
    *out = NULL, *out_len = 0;
    ember_status s = render_msgs(j, bos, eos, msgs, n, gen, out, out_len, err);
    if (s != EMBER_OK || from == 0) return s;
    char *prefix = NULL;
    size_t plen = 0;
    s = render_msgs(j, bos, eos, msgs, from, false, &prefix, &plen, err);
    if (s != EMBER_OK) {
        ember_free(*out), *out = NULL;
        return s;
    }
    size_t same = 0, cut = content_end(prefix, plen, msgs[from - 1].content ? msgs[from - 1].content : "");
    while (same < plen && same < *out_len && prefix[same] == (*out)[same]) same++;
    if (cut > same) cut = same; /* the template rewrote what came before: go on from where they part */
    memmove(*out, *out + cut, *out_len - cut + 1);
    *out_len -= cut;
    ember_free(prefix);
    return EMBER_OK;
}

char *ember_chat_jinja_end(const ember_jinja *j, const char *bos, const char *eos)
{
    static const char mark[] = "EMBERREPLYMARK";
    ember_chat_message m[2] = {{"user", "Hi"}, {"assistant", mark}};
    char *text = NULL, *end = NULL;
    size_t len = 0;
    ember_err err;
    if (render_msgs(j, bos, eos, m, 2, false, &text, &len, &err) != EMBER_OK) return NULL;
    const char *p = last_of(text, len, mark, sizeof mark - 1);
    if (p) end = ember_strdup(p + sizeof mark - 1);
    ember_free(text);
    return end;
}
