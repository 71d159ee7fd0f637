/* chat_template.c — recognising a chat template's family and rendering messages the way
 * its Jinja would (see chat_template.h and docs/chat.md). */
#include "common/alloc.h"
#include "chat_jinja.h"
#include "chat_template.h"
#include "engine/grammar/json.h"

#include <stdlib.h>
#include <string.h>

/* ---- a growable string ------------------------------------------------------------ */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    bool oom;  /* sticky: one check at the end instead of one per append */
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = ember_realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void sb_puts(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = ember_malloc(n);
    return p ? memcpy(p, s, n) : NULL;
}

/* ---- names ------------------------------------------------------------------------- */

static const struct {
    const char *name;
    ember_chat_family family;
    bool dated;
} NAMES[] = {
    {"chatml", EMBER_CHAT_CHATML, false},   {"llama2", EMBER_CHAT_LLAMA2, false},
    {"llama3", EMBER_CHAT_LLAMA3, false},   {"llama3.1", EMBER_CHAT_LLAMA3, true},
    {"mistral", EMBER_CHAT_MISTRAL, false}, {"zephyr", EMBER_CHAT_ZEPHYR, false},
    {"gemma", EMBER_CHAT_GEMMA, false},     {"phi3", EMBER_CHAT_PHI3, false},
};
#define N_NAMES (sizeof NAMES / sizeof NAMES[0])

const char *ember_chat_template_names(void)
{
    return "chatml, llama2, llama3, llama3.1, mistral, zephyr, gemma, phi3";
}

const char *ember_chat_template_family(const ember_chat_template *t)
{
    if (t->jinja && !t->family_ok) return "jinja";
    for (size_t i = 0; i < N_NAMES; i++)
        if (NAMES[i].family == t->family && NAMES[i].dated == t->dated) return NAMES[i].name;
    return "?";
}

/* ---- detection --------------------------------------------------------------------- */

/* The first occurrence of needle in s[0..n), or NULL (memmem is not standard C). */
static const char *find(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; k && i + k <= n; i++) {
        const char *p = memchr(s + i, needle[0], n - k + 1 - i);
        if (!p) return NULL;
        i = (size_t)(p - s);
        if (memcmp(p, needle, k) == 0) return p;
    }
    return NULL;
}

static bool has(const char *s, size_t n, const char *needle) { return find(s, n, needle) != NULL; }

/* Qwen's and SmolLM's templates write a default system message as one string literal,
 * '<|im_start|>system\nYou are ...<|im_end|>\n', for conversations without one. Finds
 * it: the literal text between "system\n" and "<|im_end|>", with no quote or brace in
 * between (which would mean an expression such as messages[0]['content']). Jinja's
 * escapes \n, \\ and \' are undone. NULL when there is none (or memory ran out). */
static char *find_default_system(const char *s, size_t n)
{
    static const char open[] = "<|im_start|>system";
    for (const char *p = s; (p = find(p, (size_t)(s + n - p), open)) != NULL; p += sizeof open - 1) {
        if (p == s || (p[-1] != '\'' && p[-1] != '"')) continue;
        const char *q = p + sizeof open - 1, *end = s + n;
        if (end - q >= 2 && q[0] == '\\' && q[1] == 'n') q += 2;
        else if (q < end && q[0] == '\n') q++;
        else continue;
        const char *close = find(q, (size_t)(end - q), "<|im_end|>");
        if (!close || close == q || memchr(q, '\'', (size_t)(close - q)) || memchr(q, '"', (size_t)(close - q)) ||
            memchr(q, '{', (size_t)(close - q)) || memchr(q, '}', (size_t)(close - q)))
            continue;
        strbuf b = {0};
        for (const char *c = q; c < close; c++) {
            if (c[0] == '\\' && c + 1 < close) {
                c++;
                sb_put(&b, *c == 'n' ? "\n" : *c == 't' ? "\t" : c, 1);
            } else {
                sb_put(&b, c, 1);
            }
        }
        if (b.oom) ember_free(b.s);
        return b.oom ? NULL : b.s;
    }
    return NULL;
}

/* Writes the first ~60 bytes of a template into buf, newlines as "\n", for messages. */
static void snippet(const char *s, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && i < 60 && o + 3 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') buf[o++] = '\\', buf[o++] = 'n';
        else buf[o++] = c < 0x20 ? ' ' : (char)c;
    }
    /* Do not end inside a UTF-8 character. */
    while (o > 0 && n > 60 && ((unsigned char)buf[o - 1] & 0xC0) == 0x80) o--;
    if (o > 0 && n > 60 && ((unsigned char)buf[o - 1] & 0xC0) == 0xC0) o--;
    buf[o] = 0;
    if (n > 60 && o + 4 < cap) strcat(buf, "...");
}

static ember_status unknown(const char *what, const char *s, size_t n, ember_err *err)
{
    char shown[256];
    snippet(s, n, shown, sizeof shown);
    return ember_fail(err, EMBER_ERR_UNSUPPORTED, "unknown chat %s '%s'; known templates: %s", what, shown,
                      ember_chat_template_names());
}

/* The family of Jinja source s, by markers that only that family's templates contain
 * (llama.cpp's llm_chat_detect_template, reduced to the families we render). The
 * first rule that matches wins. */
static ember_status detect(ember_chat_template *t, const char *s, size_t n, ember_err *err)
{
    if (has(s, n, "<|im_start|>") && !has(s, n, "<|im_sep|>")) {  /* <|im_sep|>: Phi-4, not ChatML */
        t->family = EMBER_CHAT_CHATML;
        t->default_system = find_default_system(s, n);
    } else if (has(s, n, "<|start_header_id|>") && has(s, n, "<|end_header_id|>")) {
        t->family = EMBER_CHAT_LLAMA3;
        t->dated = has(s, n, "Cutting Knowledge Date");
    } else if (has(s, n, "<start_of_turn>")) {
        t->family = EMBER_CHAT_GEMMA;
    } else if (has(s, n, "[INST]")) {
        t->family = has(s, n, "<<SYS>>") ? EMBER_CHAT_LLAMA2 : EMBER_CHAT_MISTRAL;
    } else if (has(s, n, "<|user|>") && has(s, n, "<|assistant|>")) {
        t->family = has(s, n, "<|end|>") ? EMBER_CHAT_PHI3 : EMBER_CHAT_ZEPHYR;
    } else {
        return unknown("template", s, n, err);
    }
    return EMBER_OK;
}

static bool looks_like_jinja(const char *s) { return strstr(s, "{{") || strstr(s, "{%"); }

static ember_status by_name(ember_chat_template *t, const char *name, ember_err *err)
{
    if (looks_like_jinja(name)) return detect(t, name, strlen(name), err);
    for (size_t i = 0; i < N_NAMES; i++) {
        if (strcmp(NAMES[i].name, name) == 0) {
            t->family = NAMES[i].family;
            t->dated = NAMES[i].dated;
            return EMBER_OK;
        }
    }
    return unknown("template name", name, strlen(name), err);
}

ember_status ember_chat_template_init(ember_chat_template *t, const char *name, const char *jinja,
                                      size_t jinja_len, const char *bos, const char *eos, ember_err *err)
{
    memset(t, 0, sizeof *t);
    ember_status s = EMBER_OK;
    if (name) s = by_name(t, name, err);
    else if (jinja) s = detect(t, jinja, jinja_len, err);
    else t->family = EMBER_CHAT_CHATML;  /* no template in the file: llama.cpp's default too */
    if (s != EMBER_OK) return s;
    t->bos = dup_str(bos ? bos : "<s>");
    t->eos = dup_str(eos ? eos : "</s>");
    if (!t->bos || !t->eos) {
        ember_chat_template_free(t);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    t->family_ok = true;
    return EMBER_OK;
}

ember_status ember_chat_template_init_model(ember_chat_template *t, const char *name, const char *jinja,
                                            size_t jinja_len, const char *bos, const char *eos, ember_err *err)
{
    ember_status s = ember_chat_template_init(t, name, jinja, jinja_len, bos, eos, err);
    if (name || !jinja) return s;
    ember_jinja *j = NULL;
    ember_err jerr;
    if (ember_jinja_parse(jinja, jinja_len, &j, &jerr) != EMBER_OK) return s; /* the family alone, or its refusal */
    if (s != EMBER_OK) { /* no family: the interpreter alone */
        memset(t, 0, sizeof *t);
        t->bos = dup_str(bos ? bos : "<s>");
        t->eos = dup_str(eos ? eos : "</s>");
        if (!t->bos || !t->eos) {
            ember_jinja_free(j);
            ember_chat_template_free(t);
            return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    t->jinja = j;
    return EMBER_OK;
}

void ember_chat_template_free(ember_chat_template *t)
{
    ember_jinja_free(t->jinja);
    ember_free(t->bos);
    ember_free(t->eos);
    ember_free(t->default_system);
    memset(t, 0, sizeof *t);
}

/* ---- rendering --------------------------------------------------------------------- */

enum role { ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT };

typedef struct render {
    const ember_chat_template *t;
    const ember_chat_message *msgs;
    const enum role *roles;
    size_t n, from;
    bool gen;
    strbuf out, tmp;  /* tmp: a part that is stripped as a whole before it joins out */
    size_t cut;       /* where the returned text starts (in out, or in tmp when cut_tmp) */
    bool cut_set, cut_tmp;
} render;

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Jinja's trim and Python's str.strip(), for ASCII whitespace. */
static void strip(const char **s, size_t *n)
{
    while (*n && is_space(**s)) (*s)++, (*n)--;
    while (*n && is_space((*s)[*n - 1])) (*n)--;
}

static void put(render *r, const char *s) { sb_puts(&r->out, s); }

/* Appends message i's content to b (trimmed when the template trims it) and notes the
 * cut when i is the message the caller continues after. */
static void content(render *r, strbuf *b, size_t i, bool trim)
{
    const char *s = r->msgs[i].content;
    size_t n = strlen(s);
    if (trim) strip(&s, &n);
    sb_put(b, s, n);
    if (i + 1 == r->from) r->cut = b->len, r->cut_set = true, r->cut_tmp = b == &r->tmp;
}

/* Appends tmp stripped as a whole (Llama 2's content.strip() over system + user). */
static void flush_stripped(render *r)
{
    const char *s = r->tmp.s ? r->tmp.s : "";
    size_t lead = 0, end = r->tmp.len;
    while (lead < end && is_space(s[lead])) lead++;
    while (end > lead && is_space(s[end - 1])) end--;
    if (r->cut_tmp) {
        size_t c = r->cut < lead ? lead : r->cut > end ? end : r->cut;
        r->cut = r->out.len + (c - lead);
        r->cut_tmp = false;
    }
    sb_put(&r->out, s + lead, end - lead);
    r->tmp.len = 0;
}

/* bos_token inside the text (a leading one goes in drop_lead_bos). */
static void put_bos(render *r)
{
    put(r, r->t->bos);
}

/* The text that closes a turn (for Llama 2 and Mistral: an assistant turn). */
static void put_end(strbuf *b, const ember_chat_template *t)
{
    switch (t->family) {
    case EMBER_CHAT_CHATML: sb_puts(b, "<|im_end|>\n"); break;
    case EMBER_CHAT_LLAMA2: sb_puts(b, " "), sb_puts(b, t->eos); break;
    case EMBER_CHAT_LLAMA3: sb_puts(b, "<|eot_id|>"); break;
    case EMBER_CHAT_MISTRAL: sb_puts(b, t->eos); break;
    case EMBER_CHAT_ZEPHYR: sb_puts(b, t->eos), sb_puts(b, "\n"); break;
    case EMBER_CHAT_GEMMA: sb_puts(b, "<end_of_turn>\n"); break;
    case EMBER_CHAT_PHI3: sb_puts(b, "<|end|>\n"); break;
    }
}

static const char *role_name(enum role k)
{
    return k == ROLE_SYSTEM ? "system" : k == ROLE_USER ? "user" : "assistant";
}

/* One turn per message from i0 on: open, role, close, the content (trimmed when trim)
 * and the family's end marker — the shape ChatML, Llama 3, Zephyr and Phi-3 share. */
static void render_turns(render *r, size_t i0, const char *open, const char *close, bool trim)
{
    for (size_t i = i0; i < r->n; i++) {
        put(r, open);
        put(r, role_name(r->roles[i]));
        put(r, close);
        content(r, &r->out, i, trim);
        put_end(&r->out, r->t);
    }
}

/* ChatML (Qwen2.5, SmolLM2):
 *   {% if messages[0]['role'] != 'system' %}<|im_start|>system\n{default}<|im_end|>\n{% endif %}
 *   {% for m in messages %}<|im_start|>{{role}}\n{{content}}<|im_end|>\n{% endfor %}
 *   {% if add_generation_prompt %}<|im_start|>assistant\n{% endif %} */
static void render_chatml(render *r)
{
    if (r->t->default_system && r->n > 0 && r->roles[0] != ROLE_SYSTEM) {
        put(r, "<|im_start|>system\n");
        put(r, r->t->default_system);
        put_end(&r->out, r->t);
    }
    render_turns(r, 0, "<|im_start|>", "\n", false);
    if (r->gen) put(r, "<|im_start|>assistant\n");
}

/* Llama 2 chat (meta-llama/Llama-2-7b-chat-hf): the system message is folded into the
 * first turn and that turn's content stripped as a whole:
 *   {{bos}}[INST] {{ ('<<SYS>>\n' + system + '\n<</SYS>>\n\n' + content).strip() }} [/INST]
 *   ' ' + assistant.strip() + ' ' + eos, then {{bos}}[INST] ... for the next turn.
 * No generation prompt: "[/INST]" already opens the reply. */
static void render_llama2(render *r)
{
    size_t i0 = r->n > 0 && r->roles[0] == ROLE_SYSTEM;
    for (size_t i = i0; i < r->n; i++) {
        if (i == i0 && i0) {
            sb_puts(&r->tmp, "<<SYS>>\n");
            content(r, &r->tmp, 0, false);
            sb_puts(&r->tmp, "\n<</SYS>>\n\n");
        }
        if (r->roles[i] == ROLE_USER) {
            put_bos(r);
            put(r, "[INST] ");
            content(r, &r->tmp, i, false);
            flush_stripped(r);
            put(r, " [/INST]");
        } else {
            put(r, " ");
            content(r, &r->tmp, i, false);
            flush_stripped(r);
            put_end(&r->out, r->t);
        }
    }
}

/* Mistral "v1" (Mistral-7B-Instruct-v0.2's current template, Mixtral-Instruct):
 *   {{bos}} [INST] {system}\n\n{user} [/INST] {assistant}{{eos}} [INST] {user} [/INST]
 * The system message joins the first user turn; no generation prompt. */
static void render_mistral(render *r)
{
    size_t i0 = r->n > 0 && r->roles[0] == ROLE_SYSTEM;
    for (size_t i = i0; i < r->n; i++) {
        if (r->roles[i] == ROLE_USER) {
            put(r, " [INST] ");
            if (i == i0 && i0) {
                content(r, &r->out, 0, false);
                put(r, "\n\n");
            }
            content(r, &r->out, i, false);
            put(r, " [/INST]");
        } else {
            put(r, " ");
            content(r, &r->out, i, false);
            put_end(&r->out, r->t);
        }
    }
}

/* Llama 3 (Meta-Llama-3-8B-Instruct):
 *   {{bos}}{% for m %}<|start_header_id|>{{role}}<|end_header_id|>\n\n{{content|trim}}<|eot_id|>
 *   {% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n
 * Llama 3.1 / 3.2 ("dated") always open with a system turn that starts with the
 * knowledge cut-off and a date (the Jinja's default date_string). */
static void render_llama3(render *r)
{
    size_t i0 = 0;
    if (r->t->dated) {
        put(r, "<|start_header_id|>system<|end_header_id|>\n\n"
               "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
        if (r->n > 0 && r->roles[0] == ROLE_SYSTEM) content(r, &r->out, 0, true), i0 = 1;
        put_end(&r->out, r->t);
    }
    render_turns(r, i0, "<|start_header_id|>", "<|end_header_id|>\n\n", true);
    if (r->gen) put(r, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Zephyr / TinyLlama-1.1B-Chat (with Hugging Face's trim_blocks):
 *   <|{{role}}|>\n{{content}}{{eos}}\n ... and, after the last message, <|assistant|>\n */
static void render_zephyr(render *r)
{
    render_turns(r, 0, "<|", "|>\n", false);
    if (r->gen && r->n > 0) put(r, "<|assistant|>\n");
}

/* Phi-3 (Phi-3-mini-4k-instruct): <|{{role}}|>\n{{content}}<|end|>\n ..., then
 * <|assistant|>\n with add_generation_prompt, else eos. */
static void render_phi3(render *r)
{
    render_turns(r, 0, "<|", "|>\n", false);
    put(r, r->gen ? "<|assistant|>\n" : r->t->eos);
}

/* Gemma (gemma-2-*-it; Gemma 3's handling of a system message):
 *   {{bos}}{% for m %}<start_of_turn>{{'model' if assistant else role}}\n
 *   {{system + '\n\n' if first}}{{content|trim}}<end_of_turn>\n{% endfor %}
 *   {% if add_generation_prompt %}<start_of_turn>model\n */
static void render_gemma(render *r)
{
    size_t i0 = r->n > 0 && r->roles[0] == ROLE_SYSTEM;
    for (size_t i = i0; i < r->n; i++) {
        put(r, "<start_of_turn>");
        put(r, r->roles[i] == ROLE_ASSISTANT ? "model" : role_name(r->roles[i]));
        put(r, "\n");
        if (i == i0 && i0) {
            content(r, &r->out, 0, false);
            put(r, "\n\n");
        }
        content(r, &r->out, i, true);
        put_end(&r->out, r->t);
    }
    if (r->gen) put(r, "<start_of_turn>model\n");
}

/* Families that fold a system message into the first turn have no place for a later one. */
static bool system_first_only(ember_chat_family f)
{
    return f == EMBER_CHAT_LLAMA2 || f == EMBER_CHAT_MISTRAL || f == EMBER_CHAT_GEMMA;
}

static ember_status parse_roles(const ember_chat_template *t, const ember_chat_message *msgs, size_t n,
                                enum role *roles, ember_err *err)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = msgs[i].role;
        if (!k || !msgs[i].content)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "chat message %zu has no role or no content", i);
        if (strcmp(k, "system") == 0) roles[i] = ROLE_SYSTEM;
        else if (strcmp(k, "user") == 0) roles[i] = ROLE_USER;
        else if (strcmp(k, "assistant") == 0) roles[i] = ROLE_ASSISTANT;
        else return ember_fail(err, EMBER_ERR_INVALID_ARG, "chat message %zu: unknown role '%s'", i, k);
        if (roles[i] == ROLE_SYSTEM && i > 0 && system_first_only(t->family))
            return ember_fail(err, EMBER_ERR_INVALID_ARG,
                              "the %s chat template takes a system message only first (message %zu)",
                              ember_chat_template_family(t), i);
    }
    return EMBER_OK;
}

static void render_family(render *r)
{
    switch (r->t->family) {
    case EMBER_CHAT_CHATML: render_chatml(r); break;
    case EMBER_CHAT_LLAMA2: render_llama2(r); break;
    case EMBER_CHAT_LLAMA3: render_llama3(r); break;
    case EMBER_CHAT_MISTRAL: render_mistral(r); break;
    case EMBER_CHAT_ZEPHYR: render_zephyr(r); break;
    case EMBER_CHAT_GEMMA: render_gemma(r); break;
    case EMBER_CHAT_PHI3: render_phi3(r); break;
    }
}

/* The text of a whole conversation leaves out its leading BOS when the vocabulary adds one
 * as it tokenizes, so that the prompt does not start with two. */
static ember_status drop_lead_bos(const ember_chat_template *t, ember_status s, char *out, size_t *out_len)
{
    size_t k = strlen(t->bos);
    if (s == EMBER_OK && !t->bos_in_text && k && *out_len >= k && memcmp(out, t->bos, k) == 0) {
        memmove(out, out + k, *out_len - k + 1);
        *out_len -= k;
    }
    return s;
}

static ember_status render_any(const ember_chat_template *t, const ember_chat_message *msgs, size_t n,
                               size_t from, bool add_generation_prompt, char **out, size_t *out_len,
                               ember_err *err)
{
    *out = NULL;
    *out_len = 0;
    if (from > n) return ember_fail(err, EMBER_ERR_INVALID_ARG, "render from message %zu of %zu", from, n);
    if (t->jinja) { /* the model's own template first; its family when it fails */
        ember_status s = ember_chat_jinja_render(t->jinja, t->bos, t->eos, msgs, n, from, add_generation_prompt, out,
                                                 out_len, err);
        if (s == EMBER_OK || !t->family_ok) return s;
    }
    enum role *roles = ember_malloc((n ? n : 1) * sizeof *roles);
    if (!roles) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_status s = parse_roles(t, msgs, n, roles, err);
    render r = {.t = t, .msgs = msgs, .roles = roles, .n = n, .from = from, .gen = add_generation_prompt};
    if (s == EMBER_OK) {
        render_family(&r);
        sb_put(&r.out, "", 0);  /* an empty rendering is still a string */
        if (r.out.oom || r.tmp.oom) s = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        else if (from > 0 && !r.cut_set)
            s = ember_fail(err, EMBER_ERR_INVALID_ARG, "the %s chat template does not render message %zu",
                           ember_chat_template_family(t), from - 1);
    }
    ember_free(roles);
    ember_free(r.tmp.s);
    if (s != EMBER_OK) {
        ember_free(r.out.s);
        return s;
    }
    size_t cut = from > 0 ? r.cut : 0;
    memmove(r.out.s, r.out.s + cut, r.out.len - cut + 1);
    *out = r.out.s;
    *out_len = r.out.len - cut;
    return EMBER_OK;
}

char *ember_chat_render_end(const ember_chat_template *t)
{
    char *end = t->jinja ? ember_chat_jinja_end(t->jinja, t->bos, t->eos) : NULL;
    if (end || !t->family_ok) return end ? end : dup_str("");
    strbuf b = {0};
    put_end(&b, t);
    sb_put(&b, "", 0);
    if (b.oom) ember_free(b.s);
    return b.oom ? NULL : b.s;
}

ember_status ember_chat_render(const ember_chat_template *t, const ember_chat_message *msgs, size_t n,
                               size_t from, bool add_generation_prompt, char **out, size_t *out_len,
                               ember_err *err)
{
    ember_status s = render_any(t, msgs, n, from, add_generation_prompt, out, out_len, err);
    return from == 0 ? drop_lead_bos(t, s, *out, out_len) : s;
}

/* ---- conversations as JSON (tools) -------------------------------------------------- */

/* The role and content of each message (content null: ""), for the families. */
static ember_status family_json(const ember_chat_template *t, const char *messages_json, size_t len, bool gen,
                                char **out, size_t *out_len, ember_err *err)
{
    ember_json_doc *doc = NULL;
    const ember_json *root = NULL;
    ember_status s = ember_json_parse(messages_json, len, &doc, &root, err);
    if (s == EMBER_OK && root->kind != EJ_ARRAY) s = ember_fail(err, EMBER_ERR_INVALID_ARG, "the messages must be a JSON array");
    ember_chat_message *m = s == EMBER_OK ? ember_malloc((root->n ? root->n : 1) * sizeof *m) : NULL;
    if (s == EMBER_OK && !m) s = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; s == EMBER_OK && i < root->n; i++) {
        const ember_json *r = ember_json_get(&root->items[i], "role"), *c = ember_json_get(&root->items[i], "content");
        if (!r || r->kind != EJ_STRING || (c && c->kind != EJ_STRING && c->kind != EJ_NULL))
            s = ember_fail(err, EMBER_ERR_INVALID_ARG, "chat message %u needs a role and a string content", i);
        else m[i] = (ember_chat_message){r->str, c && c->kind == EJ_STRING ? c->str : ""};
    }
    if (s == EMBER_OK) s = ember_chat_render(t, m, root->n, 0, gen, out, out_len, err);
    ember_free(m);
    ember_json_free(doc);
    return s;
}

ember_status ember_chat_render_json(const ember_chat_template *t, const char *messages_json, size_t messages_len,
                                    const char *tools_json, size_t tools_len, bool add_generation_prompt, char **out,
                                    size_t *out_len, ember_err *err)
{
    *out = NULL;
    *out_len = 0;
    if (t->jinja) {
        ember_status s = ember_chat_jinja_render_json(t->jinja, t->bos, t->eos, messages_json, messages_len, tools_json,
                                                      tools_len, add_generation_prompt, out, out_len, err);
        if (s == EMBER_OK || !t->family_ok) return drop_lead_bos(t, s, *out, out_len);
    }
    return family_json(t, messages_json, messages_len, add_generation_prompt, out, out_len, err);
}
