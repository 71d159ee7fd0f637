/* mask_cache.c — states interned by key in an open-addressing table; per state a row of
 * 256 transitions (state ids, in trans[256 * id]) and its mask, made on its first mask. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "mask_cache.h"

#define NONE UINT32_MAX       /* no transitions / no mask yet; a free table slot */
#define DEAD (UINT32_MAX - 1) /* a transition no stack takes */
#define UNSEEN UINT32_MAX     /* a transition not worked out yet */

typedef struct state {
    uint32_t key_at, key_len; /* in keys */
    uint32_t mask;            /* its mask at masks[words * this], or NONE */
    uint32_t n_allowed;
} state;

typedef struct slot {
    uint64_t hash;
    uint32_t state; /* NONE: free */
} slot;

/* a growable array of T: p, n, cap */
#define ARRAY(T) struct { T *p; uint32_t n, cap; }

struct ember_gmask_cache {
    const ember_vtrie *v;
    ember_gmatch *m;       /* works out transitions */
    size_t words, max_bytes;
    slot *slots;
    uint32_t n_slots;
    ARRAY(state) states;
    ARRAY(uint32_t) keys;  /* every state's key */
    ARRAY(uint32_t) trans; /* 256 per state */
    ARRAY(uint32_t) masks; /* words per state that has one */
    ARRAY(uint32_t) key;   /* the key being looked up */
    uint32_t *level;       /* a walk's state per trie depth */
    ember_gmask_counts counts;
    bool oom;
};

static bool reserve(ember_gmask_cache *c, void *array, size_t need, size_t size)
{
    ARRAY(char) *a = array;
    if (need <= a->cap) return true;
    size_t n = a->cap ? a->cap : 64;
    while (n < need) n *= 2;
    void *p = n <= UINT32_MAX ? ember_realloc(a->p, n * size) : NULL;
    if (!p) return !(c->oom = true);
    a->p = p, a->cap = (uint32_t)n;
    return true;
}

static uint64_t hash_key(const uint32_t *k, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= k[i];
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
    }
    return h;
}

static size_t held(const ember_gmask_cache *c)
{
    return (size_t)c->n_slots * sizeof(slot) + (size_t)c->states.cap * sizeof(state) +
           ((size_t)c->keys.cap + c->trans.cap + c->masks.cap + c->key.cap) * sizeof(uint32_t);
}

/* Forgets every state (the arrays keep their memory until the cache is freed). */
static void clear(ember_gmask_cache *c)
{
    for (uint32_t i = 0; i < c->n_slots; i++) c->slots[i].state = NONE;
    c->states.n = c->keys.n = c->trans.n = c->masks.n = 0;
}

static bool rehash(ember_gmask_cache *c)
{
    uint32_t n = c->n_slots * 2;
    slot *s = ember_malloc(sizeof *s * n);
    if (!s) return !(c->oom = true);
    for (uint32_t i = 0; i < n; i++) s[i].state = NONE;
    for (uint32_t i = 0; i < c->n_slots; i++) {
        if (c->slots[i].state == NONE) continue;
        uint32_t j = (uint32_t)c->slots[i].hash & (n - 1);
        while (s[j].state != NONE) j = (j + 1) & (n - 1);
        s[j] = c->slots[i];
    }
    ember_free(c->slots);
    c->slots = s, c->n_slots = n;
    return true;
}

/* The matcher's key in c->key; false when memory ran out. */
static bool take_key(ember_gmask_cache *c, const ember_gmatch *m)
{
    size_t n = ember_gmatch_key(m, c->key.p, c->key.cap);
    if (n > c->key.cap && (!reserve(c, &c->key, n, sizeof *c->key.p) || ember_gmatch_key(m, c->key.p, c->key.cap) != n))
        return false;
    c->key.n = (uint32_t)n;
    return true;
}

/* The state whose key is c->key, made when new; NONE when memory ran out. */
static uint32_t intern(ember_gmask_cache *c)
{
    const uint32_t *k = c->key.p;
    uint32_t n = c->key.n;
    uint64_t h = hash_key(k, n - 1); /* the last number, a pending character's bits, is not compared */
    uint32_t j = (uint32_t)h & (c->n_slots - 1);
    for (; c->slots[j].state != NONE; j = (j + 1) & (c->n_slots - 1)) {
        const state *s = &c->states.p[c->slots[j].state];
        if (c->slots[j].hash == h && s->key_len == n && !memcmp(c->keys.p + s->key_at, k, sizeof *k * (n - 1)))
            return c->slots[j].state;
    }
    if (!reserve(c, &c->states, c->states.n + 1, sizeof(state)) || !reserve(c, &c->keys, c->keys.n + n, sizeof *k) ||
        !reserve(c, &c->trans, (size_t)c->trans.n + 256, sizeof *c->trans.p))
        return NONE;
    uint32_t id = c->states.n++;
    c->states.p[id] = (state){c->keys.n, n, NONE, 0};
    memset(c->trans.p + c->trans.n, 0xFF, 256 * sizeof *c->trans.p); /* UNSEEN */
    c->trans.n += 256;
    memcpy(c->keys.p + c->keys.n, k, sizeof *k * n);
    c->keys.n += n;
    c->slots[j] = (slot){h, id};
    if (c->states.n * 2 > c->n_slots) rehash(c);
    return id;
}

/* Works out where byte b leads from state s with the matcher. */
static uint32_t work_out(ember_gmask_cache *c, uint32_t s, uint8_t b)
{
    c->counts.transitions++;
    const state *st = &c->states.p[s];
    if (!ember_gmatch_set_key(c->m, c->keys.p + st->key_at, st->key_len)) return (c->oom = true), DEAD;
    if (!ember_gmatch_accept(c->m, &b, 1)) return DEAD;
    if (!take_key(c, c->m)) return DEAD;
    uint32_t t = intern(c);
    return t == NONE ? DEAD : t;
}

/* Where byte b leads from state s: a state or DEAD. */
static inline uint32_t next(ember_gmask_cache *c, uint32_t s, uint8_t b)
{
    uint32_t t = c->trans.p[(size_t)s * 256 + b];
    if (t == UNSEEN) {
        t = work_out(c, s, b);
        c->trans.p[(size_t)s * 256 + b] = t; /* after work_out: it may move trans */
    }
    return t;
}

/* The mask of state root into bits: a walk of the trie, one transition per node. */
static uint32_t walk(ember_gmask_cache *c, uint32_t root, bool complete, uint32_t *bits)
{
    const ember_vtrie *v = c->v;
    uint32_t n = 0;
    memset(bits, 0, sizeof *bits * c->words);
    c->level[0] = root;
    for (uint32_t i = 0; i < v->n_nodes;) {
        uint32_t t = next(c, c->level[v->depth[i] - 1], v->byte[i]);
        if (t == DEAD) {
            i = v->end[i]; /* no token below this prefix can come next */
            continue;
        }
        c->level[v->depth[i]] = t;
        for (uint32_t k = v->tok_first[i]; k < v->tok_first[i] + v->tok_n[i]; k++, n++)
            bits[v->ids[k] / 32] |= 1u << (v->ids[k] % 32);
        i++;
    }
    for (uint32_t k = 0; complete && k < v->n_eog; k++, n++) bits[v->eog[k] / 32] |= 1u << (v->eog[k] % 32);
    c->counts.masks_made++;
    return n;
}

const uint32_t *ember_gmask_get(ember_gmask_cache *c, const ember_gmatch *m, uint32_t *n_allowed)
{
    if (held(c) > c->max_bytes) clear(c);
    c->oom = false;
    uint32_t s = take_key(c, m) ? intern(c) : NONE;
    if (s == NONE) return NULL;
    if (c->states.p[s].mask != NONE) {
        c->counts.masks_found++;
        *n_allowed = c->states.p[s].n_allowed;
        return c->masks.p + (size_t)c->states.p[s].mask * c->words;
    }
    if (!reserve(c, &c->masks, (size_t)c->masks.n + c->words, sizeof *c->masks.p)) return NULL;
    uint32_t at = c->masks.n;
    c->masks.n += (uint32_t)c->words;
    uint32_t n = walk(c, s, ember_gmatch_complete(m), c->masks.p + at);
    if (c->oom) { /* a transition could not be worked out: the mask may lack tokens */
        clear(c);
        return NULL;
    }
    c->states.p[s].mask = at / (uint32_t)c->words;
    c->states.p[s].n_allowed = *n_allowed = n;
    return c->masks.p + at;
}

ember_gmask_counts ember_gmask_cache_counts(const ember_gmask_cache *c)
{
    ember_gmask_counts k = c->counts;
    k.states = c->states.n;
    k.bytes = held(c);
    return k;
}

ember_status ember_gmask_cache_create(const ember_grammar *g, const ember_vtrie *v, size_t max_bytes,
                                      ember_gmask_cache **out, ember_err *err)
{
    ember_gmask_cache *c = *out = ember_calloc(1, sizeof *c);
    if (c) {
        c->v = v;
        c->words = v->n_vocab ? (v->n_vocab + 31) / 32 : 1;
        c->max_bytes = max_bytes ? max_bytes : (size_t)64 << 20;
        c->n_slots = 64;
        c->slots = ember_malloc(sizeof *c->slots * c->n_slots);
        c->level = ember_malloc(sizeof *c->level * (v->max_depth + 1));
    }
    if (!c || !c->slots || !c->level || ember_gmatch_create(g, &c->m, err) != EMBER_OK) {
        ember_gmask_cache_free(c);
        *out = NULL;
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory for the mask cache");
    }
    clear(c);
    return EMBER_OK;
}

void ember_gmask_cache_free(ember_gmask_cache *c)
{
    if (!c) return;
    ember_gmatch_free(c->m);
    ember_free(c->slots);
    ember_free(c->states.p);
    ember_free(c->keys.p);
    ember_free(c->trans.p);
    ember_free(c->masks.p);
    ember_free(c->key.p);
    ember_free(c->level);
    ember_free(c);
}
