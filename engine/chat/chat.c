/* chat.c — chat templates applied to a model: ember_chat_apply, and ember_chat, a
 * conversation kept as token ids so that every turn's prompt extends the last one and
 * the engine's prefix cache serves the earlier turns; when it outgrows the context, the
 * oldest turns go (chat_fit.c chooses how many) and the rest is rendered afresh
 * (docs/chat.md). */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "chat.h"
#include "chat_fit.h"
#include "chat_state.h"
#include "chat_template.h"
#include "engine/model_handle.h"

/* ---- the model's template ---------------------------------------------------------- */

/* The piece text of token id (NULL when the vocabulary has no such token). */
static char *piece_text(const ember_gguf *g, uint32_t id)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, "tokenizer.ggml.tokens");
    if (id == EMBER_TOKEN_NONE || !kv || kv->type != EMBER_GGUF_ARRAY || kv->arr_type != EMBER_GGUF_STRING ||
        id >= kv->arr_n)
        return NULL;
    ember_gguf_str s = kv->arr_str[id];
    char *p = ember_malloc(s.len + 1);
    if (p) {
        memcpy(p, s.ptr, s.len);
        p[s.len] = 0;
    }
    return p;
}

/* chat.h: the named template or the model's, with its BOS and EOS text. */
ember_status ember_chat_model_template(const ember_model *m, const char *name, ember_chat_template *t,
                                       const char **source, size_t *source_len, ember_err *err)
{
    if (!m || !m->gguf || !m->tok) return ember_fail(err, EMBER_ERR_INVALID_ARG, "model not loaded");
    const ember_gguf_kv *kv = ember_gguf_find(m->gguf, "tokenizer.chat_template");
    bool found = kv && kv->type == EMBER_GGUF_STRING;
    if (source) *source = found ? kv->v.str.ptr : NULL, *source_len = found ? kv->v.str.len : 0;
    char *bos = piece_text(m->gguf, ember_tokenizer_bos(m->tok));
    char *eos = piece_text(m->gguf, ember_tokenizer_eos(m->tok));
    ember_status s = ember_chat_template_init_model(t, name, found ? kv->v.str.ptr : NULL,
                                                    found ? kv->v.str.len : 0, bos, eos, err);
    t->bos_in_text = !ember_tokenizer_add_bos(m->tok);
    ember_free(bos);
    ember_free(eos);
    return s;
}

ember_status ember_chat_apply(ember_model *model, const char *template_name, const ember_chat_message *msgs,
                              size_t n, int add_generation_prompt, char *buf, size_t cap, size_t *len)
{
    if (!model) return EMBER_ERR_INVALID_ARG;
    ember_chat_template t;
    ember_status s = ember_chat_model_template(model, template_name, &t, NULL, NULL, &model->err);
    if (s != EMBER_OK) return s;
    char *text = NULL;
    size_t n_text = 0;
    s = ember_chat_render(&t, msgs, n, 0, add_generation_prompt != 0, &text, &n_text, &model->err);
    ember_chat_template_free(&t);
    if (s != EMBER_OK) return s;
    if (buf && cap) {
        size_t k = n_text < cap ? n_text : cap;
        memcpy(buf, text, k);
        if (k < cap) buf[k] = 0;
    }
    if (len) *len = n_text;
    ember_free(text);
    return EMBER_OK;
}

/* ---- the conversation -------------------------------------------------------------- */


ember_status ember_chat_create(ember_model *model, const char *template_name, ember_chat **out)
{
    ember_chat *c = ember_calloc(1, sizeof *c);
    *out = c;
    if (!c) return EMBER_ERR_OUT_OF_MEMORY;
    c->model = model;
    ember_status s = ember_chat_model_template(model, template_name, &c->tmpl, NULL, NULL, &c->err);
    c->tmpl_ok = s == EMBER_OK;
    return s;
}

static void free_dropped(ember_chat *c)
{
    for (size_t i = 0; i < c->n_dropped; i++) ember_free((char *)c->dropped[i].content);
    ember_free(c->dropped);
    c->dropped = NULL;
    c->n_dropped = 0;
    c->dropped_turns = 0;
}

void ember_chat_free(ember_chat *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n_msgs; i++) ember_free((char *)c->msgs[i].content);
    ember_free(c->msgs);
    free_dropped(c);
    ember_free(c->ids);
    ember_free(c->kv_state);
    if (c->tmpl_ok) ember_chat_template_free(&c->tmpl);
    ember_free(c);
}

const char *ember_chat_error(const ember_chat *c) { return c ? c->err.msg : "out of memory"; }

const char *ember_chat_template_name(const ember_chat *c)
{
    return c && c->tmpl_ok ? ember_chat_template_family(&c->tmpl) : "";
}

static ember_status oom(ember_chat *c) { return ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory"); }

static bool reserve_ids(ember_chat *c, size_t need)
{
    if (need <= c->cap_ids) return true;
    size_t cap = c->cap_ids ? c->cap_ids : 256;
    while (cap < need) cap *= 2;
    uint32_t *p = ember_realloc(c->ids, cap * sizeof *p);
    if (!p) return false;
    c->ids = p, c->cap_ids = cap;
    return true;
}

/* Takes ownership of content (malloc'd). */
static ember_status push_msg(ember_chat *c, const char *role, char *content)
{
    if (c->n_msgs == c->cap_msgs) {
        size_t cap = c->cap_msgs ? 2 * c->cap_msgs : 8;
        ember_chat_message *p = ember_realloc(c->msgs, cap * sizeof *p);
        if (!p) {
            ember_free(content);
            return oom(c);
        }
        c->msgs = p, c->cap_msgs = cap;
    }
    c->msgs[c->n_msgs++] = (ember_chat_message){role, content};
    return EMBER_OK;
}

ember_status ember_chat_add(ember_chat *c, const char *role, const char *content)
{
    static const char *const roles[] = {"system", "user", "assistant"};
    if (!c->tmpl_ok) return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "the chat has no template");
    const char *r = NULL;
    for (int i = 0; i < 3 && role; i++)
        if (strcmp(role, roles[i]) == 0) r = roles[i];
    if (!r || !content)
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "chat message with role '%s' and %s content",
                          role ? role : "(null)", content ? "some" : "no");
    size_t n = strlen(content) + 1;
    char *copy = ember_malloc(n);
    if (!copy) return oom(c);
    memcpy(copy, content, n);
    c->prompted = false;  /* a prompt made before this message is stale */
    return push_msg(c, r, copy);
}

/* Tokenizes text[0..len) into a malloc'd array. */
static ember_status tokenize(ember_chat *c, const char *text, size_t len, unsigned flags, uint32_t **out,
                             size_t *n)
{
    const ember_tokenizer *tok = c->model->tok;
    *out = NULL;
    ember_status s = ember_tokenizer_encode_ex(tok, text, len, flags, NULL, 0, n, &c->err);
    if (s != EMBER_OK) return s;
    if (!(*out = ember_malloc((*n ? *n : 1) * sizeof **out))) return oom(c);
    s = ember_tokenizer_encode_ex(tok, text, len, flags, *out, *n, n, &c->err);
    if (s != EMBER_OK) {
        ember_free(*out);
        *out = NULL;
    }
    return s;
}

/* The last reply ended with end-of-generation token r, and the new part (ids[0..n))
 * starts with the text that closes the assistant's turn. If r is one of that text's
 * tokens (the model wrote <|im_end|> where the template has "<|im_end|>\n"), r stays as
 * generated and the new part goes on after its copy of r: returns how many of its ids
 * to skip. Otherwise (another end token, e.g. </s> under ChatML) r is dropped — it was
 * never computed into the KV cache, being the last token — and the new part is taken
 * whole: *keep becomes base_ids - 1. */
static ember_status join_reply_end(ember_chat *c, const uint32_t *ids, size_t n, size_t *keep, size_t *skip)
{
    uint32_t r = c->ids[c->base_ids - 1];
    char *end = ember_chat_render_end(&c->tmpl);
    if (!end) return oom(c);
    uint32_t *e = NULL;
    size_t ne = 0;
    ember_status s = tokenize(c, end, strlen(end), EMBER_TOKENIZE_PARSE_SPECIAL, &e, &ne);
    ember_free(end);
    if (s != EMBER_OK) return s;
    *keep = c->base_ids - 1;
    *skip = 0;
    for (size_t p = 0; p < ne; p++) {
        if (e[p] != r) continue;
        if (p < n && memcmp(ids, e, (p + 1) * sizeof *e) == 0) *keep = c->base_ids, *skip = p + 1;
        break;
    }
    ember_free(e);
    return EMBER_OK;
}

/* The conversation's ids for a prompt: the fixed part (through the last reply) and,
 * after it, the new messages rendered and tokenized. */
static ember_status extend(ember_chat *c)
{
    char *text = NULL;
    size_t len = 0;
    ember_status s = ember_chat_render(&c->tmpl, c->msgs, c->n_msgs, c->base_msgs, true, &text, &len, &c->err);
    if (s != EMBER_OK) return s;
    unsigned flags = EMBER_TOKENIZE_PARSE_SPECIAL;
    if (c->base_ids == 0 && ember_tokenizer_add_bos(c->model->tok)) flags |= EMBER_TOKENIZE_ADD_BOS;
    uint32_t *ids = NULL;
    size_t n = 0, keep = c->base_ids, skip = 0;
    s = tokenize(c, text, len, flags, &ids, &n);
    ember_free(text);
    if (s == EMBER_OK && c->reply_eog) s = join_reply_end(c, ids, n, &keep, &skip);
    if (s == EMBER_OK && keep + (n - skip) == 0)
        s = ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "the conversation is empty");
    if (s == EMBER_OK && !reserve_ids(c, keep + (n - skip))) s = oom(c);
    if (s == EMBER_OK) {
        memcpy(c->ids + keep, ids + skip, (n - skip) * sizeof *ids);
        c->n_ids = keep + (n - skip);
    }
    ember_free(ids);
    return s;
}

/* The ids back to the fixed part, as the last reply left them. */
static void restore_base(ember_chat *c)
{
    c->n_ids = c->base_ids;
    if (c->base_ids) c->ids[c->base_ids - 1] = c->base_last;
}

/* ---- fitting the context ----------------------------------------------------------- */

/* The context to fit: the model's, or less (ember_chat_fit.n_ctx); 0 = no limit (a
 * vocab_only model, which has no context, without n_ctx). */
static uint32_t fit_ctx(const ember_chat *c)
{
    uint32_t model = c->model->llama_loaded ? c->model->llama.hp.ctx_len : 0, n = c->fit.n_ctx;
    return n && (!model || n < model) ? n : model;
}

static uint32_t reply_room(const ember_chat *c, uint32_t ctx)
{
    if (c->fit.reply_room) return c->fit.reply_room;
    uint32_t want = c->fit.max_tokens ? c->fit.max_tokens : 128;
    return want < ctx / 2 ? want : ctx / 2;
}

/* The leading system messages and the messages from first_kept on, rendered whole and
 * tokenized (BOS by the vocabulary's rule) into *ids (malloc'd). */
static ember_status render_kept(ember_chat *c, size_t first_kept, uint32_t **ids, size_t *n)
{
    size_t n_sys = ember_chat_n_system(c->msgs, c->n_msgs), n_kept = n_sys + (c->n_msgs - first_kept);
    ember_chat_message *kept = ember_malloc(n_kept * sizeof *kept);
    if (!kept) return oom(c);
    memcpy(kept, c->msgs, n_sys * sizeof *kept);
    memcpy(kept + n_sys, c->msgs + first_kept, (c->n_msgs - first_kept) * sizeof *kept);
    char *text = NULL;
    size_t len = 0;
    ember_status s = ember_chat_render(&c->tmpl, kept, n_kept, 0, true, &text, &len, &c->err);
    ember_free(kept);
    unsigned flags = EMBER_TOKENIZE_PARSE_SPECIAL | (ember_tokenizer_add_bos(c->model->tok) ? EMBER_TOKENIZE_ADD_BOS : 0);
    if (s == EMBER_OK) s = tokenize(c, text, len, flags, ids, n);
    ember_free(text);
    return s;
}

typedef struct measuring {
    ember_chat *c;
    const size_t *starts; /* where each turn starts */
} measuring;

static ember_status measure(void *user, size_t d, size_t *n_tokens)
{
    measuring *m = user;
    uint32_t *ids = NULL;
    ember_status s = render_kept(m->c, m->starts[d], &ids, n_tokens);
    ember_free(ids);
    return s;
}

/* Drops the d turns before msgs[first_kept] (after the leading system messages): the
 * kept conversation becomes the prompt, rendered afresh, and the dropped messages move
 * to c->dropped. Nothing changes when memory runs out. */
static ember_status drop_turns(ember_chat *c, size_t first_kept, size_t d)
{
    size_t n_sys = ember_chat_n_system(c->msgs, c->n_msgs), n_gone = first_kept - n_sys, n = 0;
    uint32_t *ids = NULL;
    ember_status s = render_kept(c, first_kept, &ids, &n);
    ember_chat_message *gone = s == EMBER_OK ? ember_malloc(n_gone * sizeof *gone) : NULL;
    if (s == EMBER_OK && (!gone || !reserve_ids(c, n))) s = oom(c);
    if (s != EMBER_OK) {
        ember_free(ids);
        ember_free(gone);
        return s;
    }
    memcpy(c->ids, ids, n * sizeof *ids);
    ember_free(ids);
    memcpy(gone, c->msgs + n_sys, n_gone * sizeof *gone);
    memmove(c->msgs + n_sys, c->msgs + first_kept, (c->n_msgs - first_kept) * sizeof *c->msgs);
    c->n_msgs -= n_gone;
    c->replied_msgs -= n_gone;
    c->dropped = gone, c->n_dropped = n_gone;
    c->dropped_turns = (uint32_t)d;
    c->dropped_total += d;
    c->n_ids = n;
    c->base_msgs = c->base_ids = 0; /* nothing of the old ids stays */
    c->reply_eog = false;
    return EMBER_OK;
}

/* The prompt in c->ids does not leave room for the reply: drop turns, or refuse. When
 * even dropping every older turn leaves less room than asked, they all go and the
 * prompt goes with the room there is; only a prompt that cannot fit at all is refused. */
static ember_status make_room(ember_chat *c, uint32_t ctx, uint32_t room)
{
    if (c->fit.overflow == EMBER_CHAT_REFUSE)
        return ember_fail(&c->err, EMBER_ERR_CONTEXT_FULL, "the conversation (%zu tokens) and the %u tokens kept "
                          "for the reply do not fit the context of %u", c->n_ids, room, ctx);
    size_t n_turns = ember_chat_turns(c->msgs, c->n_msgs, NULL, 0), d = 0, len = c->n_ids;
    size_t *starts = ember_malloc((n_turns ? n_turns : 1) * sizeof *starts);
    if (!starts) return oom(c);
    ember_chat_turns(c->msgs, c->n_msgs, starts, n_turns);
    measuring m = {c, starts};
    ember_status s = ember_chat_fewest_drops(n_turns, ctx - room, measure, &m, &d, &len);
    size_t least = n_turns < 2 ? c->n_ids : len; /* the prompt with every older turn dropped */
    bool sys = ember_chat_n_system(c->msgs, c->n_msgs) > 0;
    if (s == EMBER_OK && d == 0 && least >= ctx)
        s = ember_fail(&c->err, EMBER_ERR_CONTEXT_FULL, "%s alone take%s %zu tokens: %s not fit the context of %u",
                       sys ? "the system message and the last turn" : "the last turn", sys ? "" : "s", least,
                       sys ? "they do" : "it does", ctx);
    else if (s == EMBER_OK && d == 0 && n_turns >= 2)
        d = n_turns - 1; /* less room than asked, but the conversation goes on: the reply may be cut */
    if (s == EMBER_OK && d > 0) s = drop_turns(c, starts[d], d);
    ember_free(starts);
    return s;
}

ember_status ember_chat_prompt(ember_chat *c, const uint32_t **tokens, size_t *n_tokens)
{
    if (!c->tmpl_ok) return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "the chat has no template");
    free_dropped(c);
    c->prompted = false;
    ember_status s = extend(c);
    uint32_t ctx = fit_ctx(c), room = ctx ? reply_room(c, ctx) : 0;
    if (s == EMBER_OK && ctx && c->n_ids + room > ctx) s = make_room(c, ctx, room);
    if (s != EMBER_OK) { /* the conversation as it was */
        restore_base(c);
        return s;
    }
    c->prompted = true;
    *tokens = c->ids;
    *n_tokens = c->n_ids;
    return EMBER_OK;
}

ember_status ember_chat_set_fit(ember_chat *c, const ember_chat_fit *fit)
{
    ember_chat_fit f = fit ? *fit : (ember_chat_fit){0}, old = c->fit;
    if ((unsigned)f.overflow > EMBER_CHAT_REFUSE)
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "unknown overflow policy %d", (int)f.overflow);
    c->fit = f;
    uint32_t ctx = fit_ctx(c);
    if (f.reply_room && ctx && f.reply_room >= ctx) {
        c->fit = old;
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "a reply room of %u tokens leaves no room for a prompt "
                          "in the context of %u", f.reply_room, ctx);
    }
    return EMBER_OK;
}

void ember_chat_get_info(const ember_chat *c, ember_chat_info *info)
{
    *info = (ember_chat_info){0};
    if (!c) return;
    uint32_t ctx = fit_ctx(c);
    *info = (ember_chat_info){.n_messages = c->n_msgs, .messages = c->n_msgs ? c->msgs : NULL, .n_tokens = c->n_ids, .n_ctx = ctx,
                              .reply_room = ctx ? reply_room(c, ctx) : 0, .dropped_turns = c->dropped_turns,
                              .n_dropped = c->n_dropped, .dropped = c->n_dropped ? c->dropped : NULL,
                              .dropped_turns_total = c->dropped_total};
}

/* The reply's text, for the assistant message (control tokens give ""). */
static char *reply_text(const ember_tokenizer *tok, const uint32_t *ids, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += ember_tokenizer_decode(tok, ids[i], NULL, 0);
    char *s = ember_malloc(total + 1);
    if (!s) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += ember_tokenizer_decode(tok, ids[i], s + o, total - o);
    s[o] = 0;
    return s;
}

ember_status ember_chat_add_reply(ember_chat *c, const uint32_t *tokens, size_t n)
{
    if (!c->prompted)
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "a reply needs a prompt (ember_chat_prompt) before it");
    const ember_tokenizer *tok = c->model->tok;
    for (size_t i = 0; i < n; i++)
        if (tokens[i] >= ember_tokenizer_n_vocab(tok))
            return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "reply token %u outside the vocabulary", tokens[i]);
    char *text = reply_text(tok, tokens, n);
    if (!text || !reserve_ids(c, c->n_ids + n)) {
        ember_free(text);
        return oom(c);
    }
    ember_status s = push_msg(c, "assistant", text);
    if (s != EMBER_OK) return s;
    if (n) memcpy(c->ids + c->n_ids, tokens, n * sizeof *tokens);
    c->n_ids += n;
    c->base_msgs = c->replied_msgs = c->n_msgs;
    c->base_ids = c->n_ids;
    c->base_last = c->n_ids ? c->ids[c->n_ids - 1] : 0;
    c->reply_eog = n > 0 && ember_tokenizer_is_eog(tok, tokens[n - 1]);
    c->prompted = false;
    return EMBER_OK;
}

ember_status ember_chat_take_back(ember_chat *c)
{
    if (c->n_msgs == c->replied_msgs)
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "nothing to take back: no message since the last reply");
    ember_free((char *)c->msgs[--c->n_msgs].content);
    c->prompted = false;
    restore_base(c); /* after a drop the fixed part is empty: the next prompt renders all */
    return EMBER_OK;
}
