/* special.c — special tokens: which text becomes one (the partition of text
 * around them before the merge algorithms run) and which ones end generation.
 *
 * Partition rules (llama.cpp's tokenizer_st_partition, which follows Hugging Face's
 * added-token handling): user-defined tokens (type 4) are always cut out of the text
 * whole; control (3) and unknown (2) tokens only when the caller asks for special-token
 * parsing, as a chat template does; otherwise "<|im_start|>" in a prompt is plain text.
 * Longer tokens are cut first, each through all the text, leftmost occurrences first. */
#include "common/alloc.h"
#include "special.h"

#include <stdlib.h>
#include <string.h>

/* Texts of end-of-generation tokens (llama.cpp's list, loosely): a control token with
 * one of these texts stops generation, whatever tokenizer.ggml.eos_token_id says.
 * <|return|> and <|call|> are gpt-oss's (harmony): the end of its answer, of a tool call. */
static const char *const EOG_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>",
};

/* Harmony's markers inside a turn (gpt-oss): llama.cpp makes them user-defined whatever the
 * file says, so that their text is part of the output ("<|channel|>analysis<|message|>..."),
 * which is how a reader of it tells the reasoning from the answer. */
static const char *const RENDERED_TEXTS[] = {
    "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>",
};

static bool is_special_type(uint8_t type)
{
    return type == TOK_CONTROL || type == TOK_USER || type == TOK_UNKNOWN;
}

/* Sort key of a special token: longest text first, then lowest id. Sorting (length,
 * id) pairs lets qsort compare without reaching the tokenizer. */
typedef struct special_key {
    uint64_t len;
    uint32_t id;
} special_key;

static int cmp_key(const void *a, const void *b)
{
    const special_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static bool sort_specials(const ember_tokenizer *t, uint32_t *ids, uint32_t n)
{
    special_key *k = ember_malloc((n ? n : 1) * sizeof *k);
    if (!k)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        size_t len;
        ember_tok_piece(t, ids[i], &len);
        k[i] = (special_key){ len, ids[i] };
    }
    qsort(k, n, sizeof *k, cmp_key);
    for (uint32_t i = 0; i < n; i++)
        ids[i] = k[i].id;
    ember_free(k);
    return true;
}

static ember_status load_specials(ember_tokenizer *t)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        size_t len;
        ember_tok_piece(t, i, &len);
        n += is_special_type(t->types[i]) && len > 0;
    }
    t->specials = ember_malloc((n ? n : 1) * sizeof *t->specials);
    if (!t->specials)
        return EMBER_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        size_t len;
        ember_tok_piece(t, i, &len);
        if (is_special_type(t->types[i]) && len > 0)
            t->specials[t->n_specials++] = i;
    }
    return sort_specials(t, t->specials, t->n_specials) ? EMBER_OK : EMBER_ERR_OUT_OF_MEMORY;
}

static void add_eog(ember_tokenizer *t, uint32_t id)
{
    if (id == EMBER_TOKEN_NONE || t->n_eog == EMBER_MAX_EOG)
        return;
    for (uint32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id)
            return;
    t->eog[t->n_eog++] = id;
}

static bool text_in(const char *const *texts, size_t n_texts, const char *p, size_t n)
{
    for (size_t i = 0; i < n_texts; i++)
        if (strlen(texts[i]) == n && memcmp(texts[i], p, n) == 0)
            return true;
    return false;
}

static bool eog_text(const char *p, size_t n)
{
    return text_in(EOG_TEXTS, sizeof EOG_TEXTS / sizeof *EOG_TEXTS, p, n);
}

static void render_markers(ember_tokenizer *t)
{
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        size_t n;
        const char *p = ember_tok_piece(t, i, &n);
        if (text_in(RENDERED_TEXTS, sizeof RENDERED_TEXTS / sizeof *RENDERED_TEXTS, p, n))
            t->types[i] = TOK_USER;
    }
}

/* The EOG token whose text is s, or EMBER_TOKEN_NONE (the last one, as llama.cpp). */
static uint32_t eog_with_text(const ember_tokenizer *t, const char *s)
{
    uint32_t id = EMBER_TOKEN_NONE;
    for (uint32_t i = 0; i < t->n_eog; i++)
        if (ember_tok_piece_is(t, t->eog[i], s, strlen(s)))
            id = t->eog[i];
    return id;
}

/* Harmony (llama.cpp's rule): where <|return|> and <|call|> end the turn, <|end|> only ends
 * a message (the analysis channel before the final answer), so it leaves the EOG set and
 * becomes user-defined, its text part of the output. */
static void harmony_end(ember_tokenizer *t)
{
    uint32_t end = eog_with_text(t, "<|end|>");
    if (end == EMBER_TOKEN_NONE || eog_with_text(t, "<|return|>") == EMBER_TOKEN_NONE ||
        eog_with_text(t, "<|call|>") == EMBER_TOKEN_NONE)
        return;
    uint32_t k = 0;
    for (uint32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] != end)
            t->eog[k++] = t->eog[i];
    t->n_eog = k;
    t->types[end] = TOK_USER;
}

/* EOS, tokenizer.ggml.eot_token_id / eom_token_id, and control tokens by text. */
static ember_status load_eog(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    static const char *const keys[] = { "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id" };
    add_eog(t, t->eos);
    for (int k = 0; k < 2; k++) {
        uint32_t id = EMBER_TOKEN_NONE;
        ember_status st = ember_gguf_opt_u32(g, keys[k], &id, err);
        if (st)
            return st;
        if (id != EMBER_TOKEN_NONE && id >= t->n_vocab)
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s %u out of range (vocab %u)", g->path,
                              keys[k], id, t->n_vocab);
        add_eog(t, id);
    }
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        size_t n;
        const char *p = ember_tok_piece(t, i, &n);
        if (t->types[i] == TOK_CONTROL && eog_text(p, n))
            add_eog(t, i);
    }
    harmony_end(t);
    return EMBER_OK;
}

/* The types are settled first (harmony's markers and <|end|> become user-defined), as in
 * llama.cpp: they decide which tokens plain text is cut around. */
ember_status ember_special_load(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    render_markers(t);
    ember_status st = load_eog(t, g, err);
    if (!st && load_specials(t))
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory listing special tokens");
    return st;
}

/* ---- partition ----------------------------------------------------------------- */

typedef struct frag_list {
    ember_fragment *a;
    size_t n, cap;
} frag_list;

static bool push(frag_list *l, size_t start, size_t len, uint32_t id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        ember_fragment *a = ember_realloc(l->a, cap * sizeof *a);
        if (!a)
            return false;
        l->a = a, l->cap = cap;
    }
    l->a[l->n++] = (ember_fragment){ start, len, id };
    return true;
}

/* The first occurrence of p[0..pn) in s[0..n), or NULL (memmem is not standard C). */
static const char *find(const char *s, size_t n, const char *p, size_t pn)
{
    while (n >= pn) {
        const char *c = memchr(s, p[0], n - pn + 1);
        if (!c)
            return NULL;
        if (memcmp(c, p, pn) == 0)
            return c;
        n -= (size_t)(c - s) + 1;
        s = c + 1;
    }
    return NULL;
}

/* Copies in to out with every occurrence of token id cut out of the raw fragments. */
static bool cut_token(const ember_tokenizer *t, uint32_t id, const char *text,
                      const frag_list *in, frag_list *out)
{
    size_t pn;
    const char *p = ember_tok_piece(t, id, &pn);
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        ember_fragment f = in->a[i];
        if (f.id != EMBER_TOKEN_NONE) {
            if (!push(out, f.start, f.len, f.id))
                return false;
            continue;
        }
        size_t s = f.start, end = f.start + f.len;
        for (const char *hit; s < end && (hit = find(text + s, end - s, p, pn)) != NULL;) {
            size_t at = (size_t)(hit - text);
            if ((at > s && !push(out, s, at - s, EMBER_TOKEN_NONE)) || !push(out, at, pn, id))
                return false;
            s = at + pn;
        }
        if (s < end && !push(out, s, end - s, EMBER_TOKEN_NONE))
            return false;
    }
    return true;
}

ember_status ember_special_partition(const ember_tokenizer *t, const char *text, size_t len,
                                     bool parse_special, ember_fragment **out, size_t *n_out,
                                     ember_err *err)
{
    frag_list a = { 0 }, b = { 0 };
    bool ok = len == 0 || push(&a, 0, len, EMBER_TOKEN_NONE);
    for (uint32_t k = 0; ok && k < t->n_specials && a.n; k++) {
        uint32_t id = t->specials[k];
        if (!parse_special && t->types[id] != TOK_USER)
            continue;
        ok = cut_token(t, id, text, &a, &b);
        frag_list tmp = a;
        a = b, b = tmp;
    }
    ember_free(b.a);
    if (!ok) {
        ember_free(a.a);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory splitting special tokens");
    }
    *out = a.a, *n_out = a.n;
    return EMBER_OK;
}
