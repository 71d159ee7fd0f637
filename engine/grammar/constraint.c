/* constraint.c — grammars shared by text in the engine's set (least recently used idle
 * ones are dropped past MAX_IDLE), and each request's matcher and last mask. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "constraint.h"
#include "engine/tokenizer/tokenizer.h"
#include "grammar.h"
#include "grammar_match.h"
#include "mask_cache.h"
#include "vocab_trie.h"

/* Grammars no request uses that the set keeps for the next request with the same text. */
#define MAX_IDLE 8

typedef struct entry {
    char *text, *root;
    ember_grammar *g;
    ember_gmask_cache *cache;
    uint32_t refs;      /* constraints bound to it */
    uint64_t last_used;
    struct entry *next;
} entry;

struct ember_grammars {
    const ember_tokenizer *t;
    ember_vtrie *trie;  /* built on the first bind */
    ember_gmask_vocab *vocab; /* what the grammars' mask caches share, made with the trie */
    entry *entries;
    uint64_t clock;
};

struct ember_constraint {
    char *text, *root;
    ember_grammar *own; /* parsed at create; handed to the set, or dropped, when bound */
    entry *shared;      /* once bound */
    ember_gmatch *m;
    uint32_t positions;      /* masks it can hold: 1, or 1 + drafts */
    uint32_t *bits;          /* mask i (after i drafts) at bits + i * words */
    uint32_t words, valid;   /* per mask; masks made (0 .. valid - 1) */
    uint32_t n_vocab;
    const ember_vtrie *trie; /* the set's, once bound */
    uint32_t *saved;         /* the state before drafts (a matcher key) */
    size_t n_saved, cap_saved;
    uint32_t pos;            /* drafts taken since ember_constraint_try_begin */
    bool failed;             /* a mask could not be made: err says why */
    ember_err err;
    /* a lazy grammar: the text is free until a trigger appears in it */
    char **triggers;         /* NULL-terminated; NULL: not lazy */
    size_t longest;          /* the longest trigger's length */
    bool waiting;            /* no trigger seen yet: nothing is masked */
    char *tail;              /* the last bytes of the text, to find a trigger across tokens */
    size_t n_tail;
    char *saved_tail;        /* the tail before drafts */
    size_t n_saved_tail;
    uint32_t *bad_start;     /* tokens holding a trigger whose text after it the grammar
                                refuses: never drawn while waiting */
};

ember_status ember_constraint_create(const char *gbnf, const char *root, uint32_t positions,
                                     ember_constraint **out, ember_err *err)
{
    ember_constraint *c = *out = ember_calloc(1, sizeof *c);
    if (c) c->positions = positions ? positions : 1;
    if (!c || !(c->text = ember_strdup(gbnf)) || !(c->root = ember_strdup(root ? root : "root"))) {
        ember_constraint_free(c);
        *out = NULL;
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    ember_status s = ember_grammar_parse(c->text, strlen(c->text), c->root, &c->own, err);
    if (s != EMBER_OK) {
        ember_constraint_free(c);
        *out = NULL;
    }
    return s;
}

static void entry_free(entry *e)
{
    ember_gmask_cache_free(e->cache);
    ember_grammar_free(e->g);
    ember_free(e->text);
    ember_free(e->root);
    ember_free(e);
}

void ember_constraint_free(ember_constraint *c)
{
    if (!c) return;
    if (c->shared) c->shared->refs--;
    ember_gmatch_free(c->m);
    ember_grammar_free(c->own);
    ember_free(c->bits);
    ember_free(c->saved);
    for (char **t = c->triggers; t && *t; t++) ember_free(*t);
    ember_free(c->triggers);
    ember_free(c->tail);
    ember_free(c->saved_tail);
    ember_free(c->bad_start);
    ember_free(c->text);
    ember_free(c->root);
    ember_free(c);
}

/* Drops the least recently used idle grammar while more than MAX_IDLE are idle. */
static void trim(ember_grammars *gs)
{
    for (;;) {
        uint32_t idle = 0;
        entry **oldest = NULL;
        for (entry **p = &gs->entries; *p; p = &(*p)->next)
            if (!(*p)->refs && (idle++, !oldest || (*p)->last_used < (*oldest)->last_used)) oldest = p;
        if (idle <= MAX_IDLE) return;
        entry *e = *oldest;
        *oldest = e->next;
        entry_free(e);
    }
}

/* The set's entry for c's grammar text, made from c's parsed grammar when new. */
static entry *find_or_add(ember_grammars *gs, ember_constraint *c, ember_err *err)
{
    for (entry *e = gs->entries; e; e = e->next)
        if (!strcmp(e->text, c->text) && !strcmp(e->root, c->root)) return e;
    entry *e = ember_calloc(1, sizeof *e);
    if (!e || ember_gmask_cache_create(c->own, gs->trie, gs->vocab, 0, &e->cache, err) != EMBER_OK) {
        ember_free(e);
        return NULL;
    }
    e->text = c->text, e->root = c->root, e->g = c->own;
    c->text = c->root = NULL, c->own = NULL;
    e->next = gs->entries;
    gs->entries = e;
    return e;
}

/* The trie of a tokenizer's vocabulary: each token's bytes as ember_tokenizer_decode gives
 * them (control and unused tokens have none), end-of-generation as the tokenizer says. */
static ember_status trie_of(const ember_tokenizer *t, ember_vtrie **out, ember_err *err)
{
    uint32_t n = ember_tokenizer_n_vocab(t);
    ember_vtrie_piece *p = ember_calloc(n ? n : 1, sizeof *p);
    size_t total = 0;
    for (uint32_t i = 0; p && i < n; i++) total += ember_tokenizer_decode(t, i, NULL, 0);
    uint8_t *bytes = p ? ember_malloc(total + 1) : NULL;
    if (!bytes) {
        ember_free(p);
        *out = NULL;
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory for the vocabulary trie");
    }
    size_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t len = ember_tokenizer_decode(t, i, (char *)bytes + at, total - at);
        p[i] = (ember_vtrie_piece){bytes + at, (uint32_t)len, ember_tokenizer_is_eog(t, i)};
        at += len;
    }
    ember_status s = ember_vtrie_build(p, n, out, err);
    ember_free(bytes);
    ember_free(p);
    return s;
}

static size_t find_trigger(const ember_constraint *c, const char *s, size_t n);
static size_t token_bytes(const ember_tokenizer *t, uint32_t token, bool control, char *small, size_t cap, char **big);

/* The tokens a lazy grammar must not draw while it waits: those whose own text holds a
 * trigger followed by text the grammar refuses (drawn freely, they would start a call
 * that breaks at once). The matcher is at its start. */
static ember_status mark_bad_starts(ember_constraint *c, const ember_tokenizer *t, ember_err *err)
{
    if (!(c->bad_start = ember_calloc(c->words, sizeof *c->bad_start)))
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory for a grammar");
    for (uint32_t id = 0; id < c->n_vocab; id++) {
        char small[256], *big;
        size_t n = token_bytes(t, id, true, small, sizeof small, &big);
        const char *s = big ? big : small;
        size_t at = n ? find_trigger(c, s, n) : n;
        if (at < n && !ember_gmatch_allows(c->m, (const uint8_t *)s + at, n - at))
            c->bad_start[id / 32] |= 1u << (id % 32);
        ember_free(big);
    }
    return EMBER_OK;
}

static ember_status bind(ember_constraint *c, ember_grammars *gs, ember_err *err)
{
    ember_status s = gs->trie ? EMBER_OK : trie_of(gs->t, &gs->trie, err);
    if (s == EMBER_OK && !gs->vocab) s = ember_gmask_vocab_create(gs->trie, &gs->vocab, err);
    if (s != EMBER_OK) return s;
    entry *e = find_or_add(gs, c, err);
    if (!e) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory for a grammar");
    if ((s = ember_gmatch_create(e->g, &c->m, err)) != EMBER_OK) return s;
    c->words = (gs->trie->n_vocab + 31) / 32 + 1;
    if (!(c->bits = ember_malloc(sizeof *c->bits * c->words * c->positions)))
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory for a grammar");
    e->refs++;
    c->shared = e;
    c->n_vocab = gs->trie->n_vocab;
    c->trie = gs->trie;
    ember_grammar_free(c->own); /* an equal grammar was there already */
    c->own = NULL;
    trim(gs);
    return c->triggers ? mark_bad_starts(c, gs->t, err) : EMBER_OK;
}

/* Mask pos from the matcher's state; c->valid becomes pos + 1 when it was made. A lazy
 * grammar still waiting for its trigger is only bound (its matcher made). */
static ember_status mask(ember_constraint *c, ember_grammars *gs, uint32_t pos)
{
    ember_status s = c->shared ? EMBER_OK : bind(c, gs, &c->err);
    if (s != EMBER_OK || c->waiting) return s;
    c->shared->last_used = ++gs->clock;
    uint32_t n_allowed;
    const uint32_t *bits = ember_gmask_get(c->shared->cache, c->m, &n_allowed);
    if (!bits) return ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory for a grammar's mask");
    memcpy(c->bits + (size_t)pos * c->words, bits, sizeof *bits * ((c->n_vocab + 31) / 32));
    if (!n_allowed)
        return ember_fail(&c->err, EMBER_ERR_INVALID_ARG,
                          "grammar: no token of the vocabulary can continue the text here");
    c->valid = pos + 1;
    return EMBER_OK;
}

void ember_constraint_mask(ember_constraint *c, ember_grammars *gs)
{
    c->valid = 0;
    c->failed = mask(c, gs, 0) != EMBER_OK;
}

ember_status ember_constraint_set_triggers(ember_constraint *c, const char *const *triggers, ember_err *err)
{
    size_t n = 0;
    while (triggers[n]) n++;
    if (!n) return EMBER_OK;
    if (!(c->triggers = ember_calloc(n + 1, sizeof *c->triggers))) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!triggers[i][0]) return ember_fail(err, EMBER_ERR_INVALID_ARG, "grammar_triggers: an empty trigger");
        if (!(c->triggers[i] = ember_strdup(triggers[i]))) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        if (strlen(triggers[i]) > c->longest) c->longest = strlen(triggers[i]);
    }
    if (!(c->tail = ember_malloc(c->longest)) || !(c->saved_tail = ember_malloc(c->longest)))
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    c->waiting = true;
    return EMBER_OK;
}

bool ember_constraint_waiting(const ember_constraint *c) { return c->waiting; }

/* Where the first trigger begins in s[0..n), or n when none is there. */
static size_t find_trigger(const ember_constraint *c, const char *s, size_t n)
{
    size_t first = n;
    for (char **t = c->triggers; *t; t++) {
        size_t len = strlen(*t);
        for (size_t i = 0; i + len <= n && i < first; i++)
            if (!memcmp(s + i, *t, len)) first = i;
    }
    return first;
}

/* The tail of the text with piece[0..len) appended, into buf (room for longest - 1 + len). */
static size_t with_tail(const ember_constraint *c, const char *piece, size_t len, char *buf)
{
    memcpy(buf, c->tail, c->n_tail);
    memcpy(buf + c->n_tail, piece, len);
    return c->n_tail + len;
}

/* A waiting constraint takes a token's text: the grammar starts where a trigger does, fed
 * from there (its own text first); else the tail is kept for a trigger across tokens. */
static ember_constraint_after wait_for_trigger(ember_constraint *c, const char *piece, size_t len)
{
    char *buf = ember_malloc(c->longest + len + 1);
    if (!buf) return EMBER_CONSTRAINT_REFUSED;
    size_t n = with_tail(c, piece, len, buf), at = find_trigger(c, buf, n);
    ember_constraint_after after = EMBER_CONSTRAINT_GOES_ON;
    if (at < n) {
        c->waiting = false;
        if (!ember_gmatch_accept(c->m, (const uint8_t *)buf + at, n - at)) after = EMBER_CONSTRAINT_REFUSED;
        else if (ember_gmatch_complete(c->m) && !ember_gmatch_open(c->m)) after = EMBER_CONSTRAINT_ENDED;
    } else {
        size_t keep = c->longest - 1 < n ? c->longest - 1 : n;
        memcpy(c->tail, buf + n - keep, keep);
        c->n_tail = keep;
    }
    ember_free(buf);
    return after;
}

void ember_constraint_try_begin(ember_constraint *c, ember_grammars *gs)
{
    ember_constraint_mask(c, gs);
    c->pos = 0;
    c->n_saved = 0;
    if (c->waiting) memcpy(c->saved_tail, c->tail, c->n_tail), c->n_saved_tail = c->n_tail;
    if (c->failed || c->waiting) return;
    size_t n = ember_gmatch_key(c->m, c->saved, c->cap_saved);
    if (n > c->cap_saved) {
        uint32_t *k = ember_realloc(c->saved, sizeof *k * n);
        if (!k) {
            c->failed = true;
            ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory for a grammar");
            return;
        }
        c->saved = k, c->cap_saved = n;
        ember_gmatch_key(c->m, c->saved, c->cap_saved);
    }
    c->n_saved = n;
}

/* token's bytes (control tokens' pieces too when control), into small when they fit
 * (else allocated: *big, freed by the caller). */
static size_t token_bytes(const ember_tokenizer *t, uint32_t token, bool control, char *small, size_t cap, char **big)
{
    size_t (*text)(const ember_tokenizer *, uint32_t, char *, size_t) =
        control ? ember_tokenizer_text : ember_tokenizer_decode;
    size_t n = text(t, token, small, cap);
    *big = NULL;
    if (n > cap && (*big = ember_malloc(n))) text(t, token, *big, n);
    return n > cap && !*big ? 0 : n;
}

/* While waiting: whether a draft leaves the text without a trigger (the tail goes on);
 * a draft that brings one is not taken (the target writes it, and the grammar starts). */
static int try_waiting(ember_constraint *c, const ember_tokenizer *t, uint32_t token)
{
    char small[256], *big;
    size_t n = token_bytes(t, token, true, small, sizeof small, &big);
    char *buf = ember_malloc(c->longest + n + 1);
    size_t len = buf ? with_tail(c, big ? big : small, n, buf) : 0;
    bool trigger = !buf || find_trigger(c, buf, len) < len;
    if (!trigger) {
        size_t keep = c->longest - 1 < len ? c->longest - 1 : len;
        memcpy(c->tail, buf + len - keep, keep);
        c->n_tail = keep;
    }
    ember_free(buf);
    ember_free(big);
    return trigger ? -1 : 1;
}

int ember_constraint_try_take(ember_constraint *c, ember_grammars *gs, const ember_tokenizer *t, uint32_t token)
{
    if (c->waiting) return c->pos + 1 < c->positions ? (c->pos++, try_waiting(c, t, token)) : -1;
    if (!c->n_saved || c->pos + 1 >= c->positions || c->valid <= c->pos || ember_tokenizer_is_eog(t, token) ||
        !ember_constraint_allows(c, c->pos, token))
        return -1;
    char small[256], *big;
    size_t n = token_bytes(t, token, false, small, sizeof small, &big);
    bool ok = n > 0 && ember_gmatch_accept(c->m, (const uint8_t *)(big ? big : small), n);
    ember_free(big);
    if (!ok) return -1;
    c->pos++;
    if (mask(c, gs, c->pos) != EMBER_OK) return 0; /* the verifier masks the row whole */
    return ember_gmatch_complete(c->m) && !ember_gmatch_open(c->m) ? 0 : 1;
}

void ember_constraint_try_end(ember_constraint *c)
{
    if (c->waiting) {
        memcpy(c->tail, c->saved_tail, c->n_saved_tail), c->n_tail = c->n_saved_tail;
        c->pos = 0;
        return;
    }
    if (c->pos && !ember_gmatch_set_key(c->m, c->saved, c->n_saved)) {
        c->failed = true; /* out of memory: the next mask says so */
        c->valid = 0;
        ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory for a grammar");
    }
    c->pos = 0;
}

const char *ember_constraint_failure(const ember_constraint *c)
{
    return c->failed ? c->err.msg : NULL;
}

bool ember_constraint_allows(const ember_constraint *c, uint32_t pos, uint32_t token)
{
    const uint32_t *bits = c->bits + (size_t)pos * c->words;
    return pos < c->valid && token < c->n_vocab && (bits[token / 32] >> (token % 32) & 1);
}

void ember_constraint_apply(const ember_constraint *c, uint32_t pos, float *logits, bool eog)
{
    if (c->waiting) { /* free text until the trigger, but no trigger that breaks at once */
        for (uint32_t id = 0; id < c->n_vocab; id++)
            if (c->bad_start[id / 32] >> (id % 32) & 1) logits[id] = -INFINITY;
        return;
    }
    const uint32_t *bits = c->bits + (size_t)pos * c->words;
    if (pos >= c->valid) { /* no mask: nothing is allowed */
        for (uint32_t t = 0; t < c->n_vocab; t++) logits[t] = -INFINITY;
        return;
    }
    for (uint32_t k = 0; !eog && k < c->trie->n_eog; k++) logits[c->trie->eog[k]] = -INFINITY;
    for (uint32_t w = 0; w < (c->n_vocab + 31) / 32; w++) {
        uint32_t b = bits[w];
        if (b == UINT32_MAX) continue; /* inside a string most words allow all 32 */
        uint32_t n = c->n_vocab - w * 32 < 32 ? c->n_vocab - w * 32 : 32;
        for (uint32_t k = 0; k < n; k++)
            if (!(b >> k & 1)) logits[w * 32 + k] = -INFINITY;
    }
}

ember_constraint_after ember_constraint_accept(ember_constraint *c, const ember_tokenizer *t, uint32_t token)
{
    if (c->waiting && ember_tokenizer_is_eog(t, token)) return EMBER_CONSTRAINT_GOES_ON; /* free text ends */
    if (ember_tokenizer_is_eog(t, token))
        return ember_gmatch_complete(c->m) ? EMBER_CONSTRAINT_ENDED : EMBER_CONSTRAINT_REFUSED;
    char small[256], *big;
    size_t n = token_bytes(t, token, c->waiting, small, sizeof small, &big);
    if (c->waiting) {
        ember_constraint_after after = n ? wait_for_trigger(c, big ? big : small, n) : EMBER_CONSTRAINT_GOES_ON;
        ember_free(big);
        return after;
    }
    bool ok = n > 0 && ember_gmatch_accept(c->m, (const uint8_t *)(big ? big : small), n);
    ember_free(big);
    if (!ok) return EMBER_CONSTRAINT_REFUSED;
    return ember_gmatch_complete(c->m) && !ember_gmatch_open(c->m) ? EMBER_CONSTRAINT_ENDED
                                                                    : EMBER_CONSTRAINT_GOES_ON;
}

ember_status ember_grammars_create(const ember_tokenizer *t, ember_grammars **out, ember_err *err)
{
    ember_grammars *gs = *out = ember_calloc(1, sizeof *gs);
    if (!gs) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    gs->t = t;
    return EMBER_OK;
}

void ember_grammars_free(ember_grammars *gs)
{
    if (!gs) return;
    while (gs->entries) {
        entry *e = gs->entries;
        gs->entries = e->next;
        entry_free(e);
    }
    ember_gmask_vocab_free(gs->vocab);
    ember_vtrie_free(gs->trie);
    ember_free(gs);
}
