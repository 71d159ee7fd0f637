/* chat_save.c — an ember_chat as bytes and back (ember_chat_save, ember_chat_load): its
 * messages, its token ids and how they were fitted, with the engine's KV state of those
 * ids when the application gives one. The layout, all little-endian:
 *   "EMBERCHT", version (u32), template family (u32 length, bytes)
 *   n_msgs, n_ids (the ids through the last reply), base_msgs, replied_msgs,
 *   dropped_total (u64 each)
 *   base_last, reply_eog, fit.overflow, fit.max_tokens, fit.reply_room, fit.n_ctx (u32)
 *   per message: role (u32: 0 system, 1 user, 2 assistant), length (u64), bytes
 *   ids (n_ids u32: the conversation through the last reply)
 *   KV state length (u64), its bytes (docs/state.md)
 *   checksum (u64: ember_hash64 of every byte before it)
 * A file is untrusted: every count is checked against what is left before anything is
 * allocated for it, and the rest against the model loading it. */
#include <string.h>

#include "chat.h"
#include "chat_state.h"
#include "common/alloc.h"
#include "common/hash.h"
#include "engine/model_handle.h"
#include "engine/state/kv_state.h"

#define VERSION 1
static const char MAGIC[8] = {'E', 'M', 'B', 'E', 'R', 'C', 'H', 'T'};
static const char *const ROLES[3] = {"system", "user", "assistant"};

/* ---- writing ------------------------------------------------------------------------- */

typedef struct writer {
    uint8_t *p;   /* NULL: only counting */
    size_t n;
} writer;

static void put(writer *w, const void *src, size_t n)
{
    if (w->p && n) memcpy(w->p + w->n, src, n);
    w->n += n;
}
static void put32(writer *w, uint32_t v) { put(w, &v, 4); }
static void put64(writer *w, uint64_t v) { put(w, &v, 8); }

static uint32_t role_code(const char *role)
{
    for (uint32_t i = 0; i < 3; i++)
        if (role == ROLES[i] || strcmp(role, ROLES[i]) == 0) return i;
    return 1;
}

static void write_chat(const ember_chat *c, const void *kv, size_t kv_len, writer *w)
{
    const char *family = ember_chat_template_family(&c->tmpl);
    put(w, MAGIC, 8);
    put32(w, VERSION);
    put32(w, (uint32_t)strlen(family));
    put(w, family, strlen(family));
    const uint64_t sizes[] = {c->n_msgs, c->base_ids, c->base_msgs, c->replied_msgs, c->dropped_total};
    for (int i = 0; i < 5; i++) put64(w, sizes[i]);
    const uint32_t small[] = {c->base_last, c->reply_eog, c->fit.overflow, c->fit.max_tokens, c->fit.reply_room,
                              c->fit.n_ctx};
    for (int i = 0; i < 6; i++) put32(w, small[i]);
    for (size_t i = 0; i < c->n_msgs; i++) {
        put32(w, role_code(c->msgs[i].role));
        put64(w, strlen(c->msgs[i].content));
        put(w, c->msgs[i].content, strlen(c->msgs[i].content));
    }
    if (c->base_ids) put(w, c->ids, (c->base_ids - 1) * sizeof *c->ids), put32(w, c->base_last);
    put64(w, kv_len);
    put(w, kv, kv_len);
}

ember_status ember_chat_tokens(ember_chat *c, const uint32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    if (c->prompted) /* the prompt may have written over the reply's last id */
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "the conversation's ids are read after a reply, not between a prompt and it");
    *ids = c->ids;
    *n = c->base_ids;
    return EMBER_OK;
}

ember_status ember_chat_save(ember_chat *c, const void *kv_state, size_t kv_len, void *buf, size_t cap, size_t *len)
{
    *len = 0;
    if (!c->tmpl_ok) return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "the chat has no template");
    if (c->prompted)
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "a chat is saved after a reply, not between a prompt and it");
    writer w = {0};
    write_chat(c, kv_state, kv_len, &w);
    *len = w.n + 8;
    if (!buf || cap < *len) return EMBER_OK; /* the size only */
    size_t body = w.n;
    w = (writer){buf, 0};
    write_chat(c, kv_state, kv_len, &w);
    put64(&w, ember_hash64(EMBER_HASH_SEED, w.p, body));
    return EMBER_OK;
}

/* ---- reading ------------------------------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t left;
    bool short_;
} reader;

static const uint8_t *take(reader *r, uint64_t n)
{
    if (r->short_ || n > r->left) {
        r->short_ = true;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n, r->left -= n;
    return at;
}
static uint32_t get32(reader *r)
{
    uint32_t v = 0;
    const uint8_t *p = take(r, 4);
    if (p) memcpy(&v, p, 4);
    return v;
}
static uint64_t get64(reader *r)
{
    uint64_t v = 0;
    const uint8_t *p = take(r, 8);
    if (p) memcpy(&v, p, 8);
    return v;
}

static ember_status bad(ember_chat *c, const char *what)
{
    return ember_fail(&c->err, EMBER_ERR_FORMAT, "saved chat: %s", what);
}

/* The messages: each a known role and text without NUL, counted against what is left. */
static ember_status read_msgs(ember_chat *c, reader *r, uint64_t n)
{
    if (n > r->left / 12) return bad(c, "more messages than the file holds");
    if (!(c->msgs = ember_calloc(n ? n : 1, sizeof *c->msgs))) return ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    c->cap_msgs = n ? n : 1;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t role = get32(r);
        uint64_t len = get64(r);
        const uint8_t *text = take(r, len);
        if (r->short_ || role > 2) return bad(c, r->short_ ? "cut short in its messages" : "a message of no known role");
        if (memchr(text, 0, len)) return bad(c, "a message holding a NUL byte");
        char *copy = ember_malloc(len + 1);
        if (!copy) return ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        memcpy(copy, text, len);
        copy[len] = 0;
        c->msgs[c->n_msgs++] = (ember_chat_message){ROLES[role], copy};
    }
    return EMBER_OK;
}

/* The ids (below the vocabulary) and the KV state, whose tokens must be exactly them. */
static ember_status read_ids_and_state(ember_chat *c, reader *r)
{
    if (c->base_ids > r->left / 4) return bad(c, "more token ids than the file holds");
    if (!(c->ids = ember_malloc((c->base_ids + 1) * sizeof *c->ids)))
        return ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    c->cap_ids = c->base_ids + 1;
    c->n_ids = c->base_ids;
    const uint8_t *ids = take(r, 4 * c->base_ids);
    if (ids && c->base_ids) memcpy(c->ids, ids, 4 * c->base_ids);
    uint32_t n_vocab = ember_tokenizer_n_vocab(c->model->tok);
    for (size_t i = 0; ids && i < c->base_ids; i++)
        if (c->ids[i] >= n_vocab) return bad(c, "a token id outside the vocabulary");
    if (c->base_ids && c->ids[c->base_ids - 1] != c->base_last) return bad(c, "its last id and its record disagree");
    uint64_t kv_len = get64(r);
    const uint8_t *kv = take(r, kv_len);
    if (r->short_ || r->left != 8) return bad(c, r->short_ ? "cut short" : "bytes after its end");
    if (!kv_len) return EMBER_OK;
    if (!(c->kv_state = ember_malloc(kv_len))) return ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(c->kv_state, kv, kv_len);
    c->kv_len = kv_len;
    const ember_hparams *hp = &c->model->llama.hp;
    ember_kv_model_id id = {c->model->fingerprint, hp->n_layers, hp->n_kv_heads, hp->head_dim, hp->n_vocab};
    ember_kv_state st;
    ember_status s = ember_kv_state_read(c->kv_state, kv_len, &id, hp->ctx_len, &st, &c->err);
    if (s != EMBER_OK) return s;
    if (st.n_tokens != c->base_ids || (st.n_tokens && memcmp(st.tokens, c->ids, 4 * st.n_tokens)))
        return bad(c, "its KV state is of other tokens than the conversation's");
    return EMBER_OK;
}

/* The body after the magic (the checksum checked), into c. */
static ember_status read_chat(ember_chat *c, reader *r)
{
    uint32_t version = get32(r), flen = get32(r);
    if (version != VERSION) return ember_fail(&c->err, EMBER_ERR_FORMAT, "saved chat: version %u; this Ember reads %d", version, VERSION);
    const uint8_t *family = take(r, flen);
    const char *ours = ember_chat_template_family(&c->tmpl);
    if (family && (flen != strlen(ours) || memcmp(family, ours, flen)))
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "the chat was saved with the %.*s template; this one uses %s",
                          (int)(flen < 40 ? flen : 40), (const char *)family, ours);
    uint64_t n_msgs = get64(r), sizes[4];
    for (int i = 0; i < 4; i++) sizes[i] = get64(r);
    c->base_ids = sizes[0], c->base_msgs = sizes[1], c->replied_msgs = sizes[2], c->dropped_total = sizes[3];
    uint32_t small[6];
    for (int i = 0; i < 6; i++) small[i] = get32(r);
    if (r->short_) return bad(c, "cut short in its header");
    c->base_last = small[0], c->reply_eog = small[1] != 0;
    ember_chat_fit fit = {(ember_chat_overflow)small[2], small[3], small[4], small[5]};
    ember_status s = read_msgs(c, r, n_msgs);
    if (s == EMBER_OK && (c->base_msgs > c->n_msgs || c->replied_msgs > c->n_msgs || c->base_msgs > c->replied_msgs))
        s = bad(c, "message counts that do not fit together");
    if (s == EMBER_OK) s = read_ids_and_state(c, r);
    if (s == EMBER_OK) s = ember_chat_set_fit(c, &fit);
    return s;
}

ember_status ember_chat_load(ember_model *model, const char *template_name, const void *buf, size_t len,
                             ember_chat **out)
{
    ember_status s = ember_chat_create(model, template_name, out);
    ember_chat *c = *out;
    if (s != EMBER_OK) return s;
    if (!model->llama_loaded) return ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "a chat is loaded for a whole model");
    const uint8_t *b = buf;
    if (len < 16 || memcmp(b, MAGIC, 8))
        return ember_fail(&c->err, EMBER_ERR_FORMAT, "not a saved chat (%zu bytes, no \"EMBERCHT\" header)", len);
    uint64_t sum;
    memcpy(&sum, b + len - 8, 8);
    if (sum != ember_hash64(EMBER_HASH_SEED, b, len - 8))
        return ember_fail(&c->err, EMBER_ERR_FORMAT, "saved chat: the checksum does not match (changed or cut short)");
    reader r = {b + 8, len - 8, false};
    return read_chat(c, &r);
}

void ember_chat_kv_state(const ember_chat *c, const void **state, size_t *len)
{
    *state = c->kv_state;
    *len = c->kv_len;
}
