/* mask_cache.c — states interned by key in an open-addressing table; per state a row of
 * 256 transitions (state ids, in trans[256 * id]) and its mask, made on its first mask. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "mask_cache.h"
#include "rep_chain.h"

#define NONE UINT32_MAX       /* no transitions / no mask yet; a free table slot */
#define DEAD (UINT32_MAX - 1) /* a transition no stack takes */
#define UNSEEN UINT32_MAX     /* a transition not worked out yet */

typedef struct state {
    uint32_t key_at, key_len; /* in keys */
    uint32_t mask;            /* its mask, row(&masks, this), or NONE */
    uint32_t n_allowed;
    uint32_t utf8_to;         /* the state every character of 2-4 bytes leads to; DEAD:
                                 not one state; NONE: not known yet */
    uint32_t above, level;    /* the state one count up in a repetition and the lowest
                                 count there (above_of); above NONE: not found yet */
} state;

/* Plain tokens. Inside a string most bytes lead a state to one and the same next state,
 * itself in a loop (x*) or the next count of a bounded repetition (x{0,200}); from there
 * the same bytes lead on to one state again, and so on. A token made only of such bytes
 * is then allowed as long as that chain lasts, whatever the bytes are: such states are
 * masked from precomputed sets of plain tokens, by their length in characters, and
 * every other token is checked on its own, instead of a walk of the trie. One set per
 * pattern of plain bytes met. */
typedef struct plain {
    uint32_t ascii[4];        /* the plain ASCII bytes */
    bool utf8;                /* every well-formed longer character is plain too */
    /* The vocabulary's sets (ember_gmask_vocab), or NULL: the cache's own. */
    const struct ember_gmask_vocab *vocab;
    uint32_t mask;            /* own: row(&masks, mask + l): the plain tokens of at most
                                 l + 1 characters, l < PLAIN_CHARS */
    uint32_t others_at, n_others; /* the rest: own, others[others_at ..] */
} plain;

#define PLAIN_MIN_BYTES 32    /* fewer plain ASCII bytes: walk the trie */
#define PLAIN_CHARS 16        /* longer tokens are checked on their own */

typedef struct slot {
    uint64_t hash;
    uint32_t state; /* NONE: free */
} slot;

/* a growable array of T: p, n, cap */
#define ARRAY(T) struct { T *p; uint32_t n, cap; }

/* Rows of len numbers in chunks that never move: growing copies nothing (a grammar's
 * first request would pay for copying megabytes of masks) and a row stays where it is
 * while more are made. */
typedef struct rows {
    uint32_t **chunk;     /* CHUNK_ROWS rows each */
    uint32_t n_chunks, cap_chunks;
    uint32_t n;           /* rows handed out */
    size_t len;
} rows;

#define CHUNK_ROWS 64
_Static_assert(PLAIN_CHARS <= CHUNK_ROWS, "a plain pattern's sets are rows of one chunk");

/* How far a derivation climbs a chain for a transition it can take over (rep_chain.h:
 * x{m,n} has at most 1000 counts). */
#define CLIMB_MAX 1024

/* The sets of one pattern made once for a vocabulary: JSON's string characters. */
struct ember_gmask_vocab {
    uint32_t ascii[4];
    uint32_t *sets;           /* PLAIN_CHARS rows of the vocabulary's words */
    uint32_t *others, n_others;
};

struct ember_gmask_cache {
    const ember_vtrie *v;
    const ember_gmask_vocab *vocab; /* NULL: none */
    ember_gmatch *m;       /* works out transitions */
    ember_rep_chains chains; /* bounded repetitions: transitions and masks one count apart */
    size_t words, max_bytes;
    slot *slots;
    uint32_t n_slots;
    ARRAY(state) states;
    ARRAY(uint32_t) keys;  /* every state's key */
    rows trans;            /* 256 per state */
    rows masks;            /* one per state that has one, PLAIN_CHARS per plain pattern */
    ARRAY(uint32_t) key;   /* the key being looked up */
    ARRAY(plain) plains;
    ARRAY(uint32_t) others; /* tokens outside plain sets, checked on their own */
    uint32_t *level;       /* a walk's state per trie depth */
    uint32_t loaded;       /* the state matcher m is in; NONE: not known */
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

static uint32_t *row(const rows *r, uint32_t i)
{
    return r->chunk[i / CHUNK_ROWS] + (size_t)(i % CHUNK_ROWS) * r->len;
}

/* k rows (k <= CHUNK_ROWS) one after another in one chunk: the first one's index, or
 * NONE when memory ran out. */
static uint32_t add_rows(ember_gmask_cache *c, rows *r, uint32_t k)
{
    uint32_t at = r->n;
    if (at / CHUNK_ROWS != (at + k - 1) / CHUNK_ROWS) at = (at / CHUNK_ROWS + 1) * CHUNK_ROWS;
    while (r->n_chunks <= (at + k - 1) / CHUNK_ROWS) {
        if (r->n_chunks == r->cap_chunks) {
            uint32_t cap = r->cap_chunks ? r->cap_chunks * 2 : 16;
            uint32_t **p = ember_realloc(r->chunk, sizeof *p * cap);
            if (!p) return (c->oom = true), NONE;
            r->chunk = p, r->cap_chunks = cap;
        }
        if (!(r->chunk[r->n_chunks] = ember_malloc(sizeof(uint32_t) * CHUNK_ROWS * r->len))) return (c->oom = true), NONE;
        r->n_chunks++;
    }
    r->n = at + k;
    return at;
}

static void free_rows(rows *r)
{
    for (uint32_t i = 0; i < r->n_chunks; i++) ember_free(r->chunk[i]);
    ember_free(r->chunk);
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
           ((size_t)c->keys.cap + c->key.cap + c->others.cap) * sizeof(uint32_t) +
           ((size_t)c->trans.n_chunks * c->trans.len + (size_t)c->masks.n_chunks * c->masks.len) * CHUNK_ROWS * sizeof(uint32_t);
}

/* Forgets every state (the arrays keep their memory until the cache is freed). */
static void clear(ember_gmask_cache *c)
{
    for (uint32_t i = 0; i < c->n_slots; i++) c->slots[i].state = NONE;
    c->states.n = c->keys.n = c->trans.n = c->masks.n = c->plains.n = c->others.n = 0;
    c->loaded = NONE;
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

/* The state whose key is c->key, or NONE with *slot_at the free slot where it would go. */
static uint32_t find(const ember_gmask_cache *c, uint64_t *hash, uint32_t *slot_at)
{
    const uint32_t *k = c->key.p;
    uint32_t n = c->key.n;
    uint64_t h = *hash = hash_key(k, n - 1); /* the last number, a pending character's bits, is not compared */
    uint32_t j = (uint32_t)h & (c->n_slots - 1);
    for (; c->slots[j].state != NONE; j = (j + 1) & (c->n_slots - 1)) {
        const state *s = &c->states.p[c->slots[j].state];
        if (c->slots[j].hash == h && s->key_len == n && !memcmp(c->keys.p + s->key_at, k, sizeof *k * (n - 1)))
            return c->slots[j].state;
    }
    *slot_at = j;
    return NONE;
}

/* The state whose key is c->key, made when new; NONE when memory ran out. */
static uint32_t intern(ember_gmask_cache *c)
{
    const uint32_t *k = c->key.p;
    uint32_t n = c->key.n, j;
    uint64_t h;
    uint32_t found = find(c, &h, &j);
    if (found != NONE) return found;
    if (!reserve(c, &c->states, c->states.n + 1, sizeof(state)) || !reserve(c, &c->keys, c->keys.n + n, sizeof *k) ||
        add_rows(c, &c->trans, 1) == NONE)
        return NONE;
    uint32_t id = c->states.n++; /* its row of transitions: row(&c->trans, id) */
    c->states.p[id] = (state){c->keys.n, n, NONE, 0, NONE, NONE, 0};
    memset(row(&c->trans, id), 0xFF, 256 * sizeof(uint32_t)); /* UNSEEN */
    memcpy(c->keys.p + c->keys.n, k, sizeof *k * n);
    c->keys.n += n;
    c->slots[j] = (slot){h, id};
    if (c->states.n * 2 > c->n_slots) rehash(c);
    return id;
}

/* Puts the matcher in state s (it stays there while transitions from s are worked out). */
static bool load(ember_gmask_cache *c, uint32_t s)
{
    if (c->loaded == s) return true;
    const state *st = &c->states.p[s];
    c->loaded = NONE;
    if (!ember_gmatch_set_key(c->m, c->keys.p + st->key_at, st->key_len)) return !(c->oom = true);
    c->loaded = s;
    return true;
}

/* State s's key with one bounded repetition's counts one up (for byte's step, byte < 0
 * for a mask; *chain gets the repetition) in c->key; false when it cannot be (rep_chain.h). */
static bool key_above(ember_gmask_cache *c, uint32_t s, int byte, uint32_t *chain)
{
    const state *st = &c->states.p[s];
    if (!reserve(c, &c->key, st->key_len, sizeof *c->key.p)) return false;
    c->key.n = st->key_len;
    return ember_rep_up(&c->chains, c->keys.p + st->key_at, st->key_len, byte, chain, c->key.p);
}

/* The state one count up from s (for byte's step, or byte < 0 for a mask), when the cache
 * holds it; NONE otherwise. */
static uint32_t state_above(ember_gmask_cache *c, uint32_t s, int byte, uint32_t *chain)
{
    uint64_t h;
    uint32_t j;
    return key_above(c, s, byte, chain) ? find(c, &h, &j) : NONE;
}

/* The state one count of chain below t, made when new; NONE when it cannot be. */
static uint32_t state_below(ember_gmask_cache *c, uint32_t t, uint32_t chain)
{
    const state *st = &c->states.p[t];
    if (!reserve(c, &c->key, st->key_len, sizeof *c->key.p)) return NONE;
    c->key.n = st->key_len;
    return ember_rep_down(&c->chains, c->keys.p + st->key_at, st->key_len, chain, c->key.p) ? intern(c) : NONE;
}

/* Where byte b leads from state s, taken over from the states above it (one count up,
 * two, ...: the first whose transition for b is known) one count down at a time, each
 * transition on the way kept; UNSEEN when none is known or a result cannot move down.
 * Inside a long bounded string this replaces almost every matcher run. */
static uint32_t derive(ember_gmask_cache *c, uint32_t s, uint8_t b)
{
    uint32_t path[CLIMB_MAX], n = 0, t = UNSEEN, chain = NONE;
    for (uint32_t u = s; n < CLIMB_MAX && t == UNSEEN;) {
        uint32_t up = state_above(c, u, b, &chain);
        if (up == NONE) return UNSEEN;
        path[n++] = u;
        t = row(&c->trans, up)[b];
        u = up;
    }
    if (t == UNSEEN) return UNSEEN;
    while (n--) {
        if (t != DEAD && (t = state_below(c, t, chain)) == NONE) return UNSEEN;
        row(&c->trans, path[n])[b] = t;
        c->counts.derived++;
    }
    return t;
}

/* Works out where byte b leads from state s: derived from the states above (derive), or
 * with the matcher, which then stays in s (for more bytes from s) or moves on to where b
 * leads (for a walk going deeper). */
static uint32_t work_out(ember_gmask_cache *c, uint32_t s, uint8_t b, bool move)
{
    uint32_t d = derive(c, s, b);
    if (d != UNSEEN) return d;
    c->counts.transitions++;
    if (!load(c, s)) return DEAD;
    if (move) {
        int r = ember_gmatch_step(c->m, b);
        if (r <= 0) return (c->oom = c->oom || r < 0), DEAD;
        c->loaded = NONE;
        if (!take_key(c, c->m)) return (c->oom = true), DEAD;
    } else {
        size_t n = ember_gmatch_key_after(c->m, b, c->key.p, c->key.cap);
        if (n != SIZE_MAX && n > c->key.cap) {
            if (!reserve(c, &c->key, n, sizeof *c->key.p)) return DEAD;
            n = ember_gmatch_key_after(c->m, b, c->key.p, c->key.cap);
        }
        if (n == SIZE_MAX) return (c->oom = true), DEAD;
        if (!n) return DEAD;
        c->key.n = (uint32_t)n;
    }
    uint32_t t = intern(c);
    if (t == NONE) return DEAD;
    if (move) c->loaded = t;
    return t;
}

/* Works out the transitions of state s for bytes lo..hi, one matcher run per class of
 * bytes (ember_gmatch_byte_classes): the loops over byte ranges below would otherwise run
 * the matcher for every byte. */
static void work_out_range(ember_gmask_cache *c, uint32_t s, uint32_t lo, uint32_t hi)
{
    uint64_t cls[256], seen[16];
    uint32_t to[16], n_seen = 0, *r = row(&c->trans, s);
    while (lo <= hi && r[lo] != UNSEEN) lo++;
    if (lo > hi || !load(c, s)) return;
    ember_gmatch_byte_classes(c->m, (uint8_t)lo, (uint8_t)hi, cls);
    for (uint32_t b = lo; b <= hi; b++) {
        uint64_t k = cls[b - lo];
        uint32_t i = 0;
        if (r[b] != UNSEEN) continue;
        while (i < n_seen && seen[i] != k) i++;
        if (!k) r[b] = DEAD;
        else if (i < n_seen) r[b] = to[i];
        else if ((r[b] = work_out(c, s, (uint8_t)b, false)) != DEAD && n_seen < 16) seen[n_seen] = k, to[n_seen++] = r[b];
    }
}

/* Where byte b leads from state s: a state or DEAD. */
static inline uint32_t next(ember_gmask_cache *c, uint32_t s, uint8_t b)
{
    uint32_t *to = &row(&c->trans, s)[b];
    if (*to == UNSEEN) *to = work_out(c, s, b, true);
    return *to;
}

/* Whether every well-formed character whose bytes from state `at` on are still due (left
 * of them, the next one in lo..hi) leads to one state, *to (NONE until the first
 * character is finished). Pending states after different lead bytes are mostly one
 * state (mask_cache.h), so this visits a few states, not every character. */
static bool utf8_reach(ember_gmask_cache *c, uint32_t at, uint32_t left, uint8_t lo, uint8_t hi, uint32_t *to)
{
    uint32_t seen[64], n_seen = 0; /* states already followed from here */
    work_out_range(c, at, lo, hi);
    for (uint32_t b = lo; b <= hi; b++) {
        uint32_t t = next(c, at, (uint8_t)b), i = 0;
        if (t == DEAD) return false;
        if (left == 1) {
            if (*to == NONE) *to = t;
            if (t != *to) return false;
            continue;
        }
        while (i < n_seen && seen[i] != t) i++;
        if (i < n_seen) continue;
        seen[n_seen++] = t;
        if (!utf8_reach(c, t, left - 1, 0x80, 0xBF, to)) return false;
    }
    return true;
}

/* The state every well-formed character of 2-4 bytes leads s to, or DEAD. */
static uint32_t utf8_to(ember_gmask_cache *c, uint32_t s)
{
    if (c->states.p[s].utf8_to != NONE) return c->states.p[s].utf8_to;
    if (load(c, s) && ember_gmatch_multibyte_alike(c->m)) { /* U+0080 goes where all go */
        uint32_t t = next(c, s, 0xC2);
        return c->states.p[s].utf8_to = t == DEAD ? DEAD : next(c, t, 0x80);
    }
    uint32_t to = NONE;
    bool one = true;
    work_out_range(c, s, 0xC2, 0xF4);
    for (uint32_t lead = 0xC2; one && lead <= 0xF4; lead++) {
        uint32_t t = next(c, s, (uint8_t)lead), left = lead < 0xE0 ? 1 : lead < 0xF0 ? 2 : 3;
        uint8_t lo = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80; /* what UTF-8 allows second */
        uint8_t hi = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
        one = t != DEAD && utf8_reach(c, t, left, lo, hi, &to);
    }
    return c->states.p[s].utf8_to = one && to != NONE ? to : DEAD;
}

/* From state s, the state most ASCII bytes lead to (DEAD: none), those bytes and their
 * count. */
static uint32_t plain_bytes(ember_gmask_cache *c, uint32_t s, uint32_t ascii[4], uint32_t *n)
{
    uint32_t to[128], best = DEAD, most = 0;
    work_out_range(c, s, 0, 127);
    for (uint32_t b = 0; b < 128; b++) to[b] = next(c, s, (uint8_t)b);
    for (uint32_t b = 0; b < 128; b++) {
        uint32_t k = 0;
        if (to[b] == DEAD || to[b] == best) continue;
        for (uint32_t b2 = b; b2 < 128; b2++) k += to[b2] == to[b];
        if (k > most) most = k, best = to[b];
    }
    memset(ascii, 0, 4 * sizeof *ascii);
    for (uint32_t b = 0; best != DEAD && b < 128; b++)
        if (to[b] == best) ascii[b / 32] |= 1u << (b % 32);
    *n = most;
    return best;
}

/* Whether the plain bytes (and characters) of p all lead s to one state, *t. */
static bool plain_step(ember_gmask_cache *c, uint32_t s, const plain *p, uint32_t *t)
{
    *t = DEAD;
    work_out_range(c, s, 0, 127);
    for (uint32_t b = 0; b < 128; b++) {
        if (!(p->ascii[b / 32] >> (b % 32) & 1)) continue;
        uint32_t u = next(c, s, (uint8_t)b);
        if (*t == DEAD) *t = u;
        if (u == DEAD || u != *t) return false;
    }
    return *t != DEAD && (!p->utf8 || utf8_to(c, s) == *t);
}

/* Fills sets (PLAIN_CHARS rows of words, zeroed) with the plain tokens of pattern (ascii,
 * utf8) by their length in characters, and list (room for every token) with the others
 * that have bytes; their count. One pass without branches (which way a token goes is as
 * good as random). */
static uint32_t fill_plain(const ember_vtrie *v, size_t words, const uint32_t ascii[4], bool utf8, uint32_t *sets,
                           uint32_t *list)
{
    uint64_t other[2] = {~((uint64_t)ascii[1] << 32 | ascii[0]), ~((uint64_t)ascii[3] << 32 | ascii[2])};
    uint32_t n = 0;
    for (uint32_t t = 0; t < v->n_vocab; t++) {
        uint32_t chars = v->chars[t];
        uint32_t ok = (((v->ascii[2 * t] & other[0]) | (v->ascii[2 * t + 1] & other[1])) == 0) &
                      ((v->high[t] == 0) | (utf8 & (v->utf8_ok[t] != 0)));
        uint32_t plain = ok & (chars - 1 < PLAIN_CHARS); /* chars 0 wraps around: not plain */
        sets[(size_t)(plain ? chars - 1 : 0) * words + t / 32] |= plain << (t % 32);
        list[n] = t;
        n += !plain & (v->at[t + 1] != v->at[t]);
    }
    for (uint32_t l = 1; l < PLAIN_CHARS; l++) /* at most l + 1 characters */
        for (size_t w = 0; w < words; w++) sets[l * words + w] |= sets[(l - 1) * words + w];
    return n;
}

/* Pattern p's sets of at most l + 1 characters, and its other tokens. */
static const uint32_t *plain_set(const ember_gmask_cache *c, const plain *p, uint32_t l)
{
    return p->vocab ? p->vocab->sets + (size_t)l * c->words : row(&c->masks, p->mask + l);
}
static const uint32_t *plain_others(const ember_gmask_cache *c, const plain *p)
{
    return p->vocab ? p->vocab->others : c->others.p + p->others_at;
}

/* The plain-token sets of pattern (ascii, utf8): the vocabulary's, or made when new; its
 * index, or NONE. */
static uint32_t plain_sets(ember_gmask_cache *c, const uint32_t ascii[4], bool utf8)
{
    for (uint32_t i = 0; i < c->plains.n; i++)
        if (!memcmp(c->plains.p[i].ascii, ascii, 4 * sizeof *ascii) && c->plains.p[i].utf8 == utf8) return i;
    if (!reserve(c, &c->plains, c->plains.n + 1, sizeof(plain))) return NONE;
    plain *p = &c->plains.p[c->plains.n];
    *p = (plain){{ascii[0], ascii[1], ascii[2], ascii[3]}, utf8, NULL, 0, 0, 0};
    if (c->vocab && utf8 && !memcmp(c->vocab->ascii, ascii, 4 * sizeof *ascii)) {
        p->vocab = c->vocab, p->n_others = c->vocab->n_others;
        return c->plains.n++;
    }
    uint32_t first = add_rows(c, &c->masks, PLAIN_CHARS);
    if (first == NONE || !reserve(c, &c->others, c->others.n + c->v->n_vocab, sizeof *c->others.p)) return NONE;
    uint32_t *sets = row(&c->masks, first);
    memset(sets, 0, sizeof *sets * c->words * PLAIN_CHARS);
    p = &c->plains.p[c->plains.n];
    p->mask = first, p->others_at = c->others.n;
    p->n_others = fill_plain(c->v, c->words, ascii, utf8, sets, c->others.p + c->others.n);
    c->others.n += p->n_others;
    return c->plains.n++;
}

/* The state one count up from s in a bounded repetition (the first the key holds), kept
 * in s once found, with s's lowest count there in its level; NONE while the cache holds no
 * such state, DEAD when s has none (rep_chain.h). For masks: share_mask and lift. */
static uint32_t above_of(ember_gmask_cache *c, uint32_t s)
{
    state *st = &c->states.p[s];
    if (st->above != NONE) return st->above;
    uint32_t chain, j;
    uint64_t h;
    if (!key_above(c, s, -1, &chain)) return st->above = DEAD;
    uint32_t u = find(c, &h, &j);
    if (u == NONE) return NONE; /* looked for again later: it may be made meanwhile */
    st->level = ember_rep_min_level(&c->chains, c->keys.p + st->key_at, st->key_len, chain);
    return st->above = u;
}

/* A state that takes the same next `left` bytes as s: the one a count up when s's counts
 * there are above what left bytes can use up (as share_mask argues), so that a long
 * token's walk along a string goes back and forth between two states instead of making a
 * state per character; s itself otherwise. */
static uint32_t lift(ember_gmask_cache *c, uint32_t s, uint32_t left)
{
    uint32_t u = above_of(c, s);
    return u < DEAD && c->states.p[s].level > left + 2 ? u : s;
}

/* Deep into a long token, its walk lifts (lift) after every byte. */
#define LIFT_FROM 8

/* Sets token tok's bit when its bytes lead from state root to a state. */
static void check(ember_gmask_cache *c, uint32_t root, uint32_t tok, uint32_t *bits)
{
    const ember_vtrie *v = c->v;
    uint32_t s = root, end = v->at[tok + 1];
    for (uint32_t i = v->at[tok]; s != DEAD && i < end; i++) {
        s = next(c, s, v->pool[i]);
        if (s != DEAD && i + 1 < end && i + 1 - v->at[tok] >= LIFT_FROM) s = lift(c, s, end - i - 1);
    }
    if (s != DEAD) bits[tok / 32] |= 1u << (tok % 32);
}

/* The mask of state root into bits from plain tokens (see plain), every other
 * token run through the transitions on its own. False when root has too few plain
 * bytes. */
static bool from_plain(ember_gmask_cache *c, uint32_t root, uint32_t *bits, uint32_t *n)
{
    uint32_t ascii[4], n_plain, t, chain = 0;
    uint32_t first = plain_bytes(c, root, ascii, &n_plain);
    if (first == DEAD || n_plain < PLAIN_MIN_BYTES) return false;
    uint32_t id = plain_sets(c, ascii, utf8_to(c, root) == first);
    if (id == NONE) return false;
    for (uint32_t s = root; chain < PLAIN_CHARS && plain_step(c, s, &c->plains.p[id], &t); s = t) chain++;
    if (!chain) return false;
    const plain *p = &c->plains.p[id];
    const uint32_t *all = plain_set(c, p, PLAIN_CHARS - 1), *others = plain_others(c, p);
    memcpy(bits, plain_set(c, p, chain - 1), sizeof *bits * c->words);
    for (uint32_t i = 0; i < p->n_others; i++) check(c, root, others[i], bits);
    for (uint32_t w = 0; chain < PLAIN_CHARS && w < c->words; w++) /* plain, but longer than the chain */
        for (uint32_t more = all[w] & ~bits[w]; more; more &= more - 1) check(c, root, w * 32 + __builtin_ctz(more), bits);
    for (uint32_t w = 0; w < c->words; w++) *n += (uint32_t)__builtin_popcount(bits[w]);
    return true;
}

/* The mask of state root into bits: a walk of the trie, one transition per node
 * (or, in a state most bytes lead back to, its plain tokens and a check of the rest). */
static uint32_t walk(ember_gmask_cache *c, uint32_t root, bool complete, uint32_t *bits)
{
    const ember_vtrie *v = c->v;
    uint32_t n = 0;
    c->counts.masks_made++;
    bool plain = from_plain(c, root, bits, &n);
    if (!plain) memset(bits, 0, sizeof *bits * c->words), work_out_range(c, root, 0, 255);
    c->level[0] = root;
    for (uint32_t i = 0; !plain && i < v->n_nodes;) {
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
    return n;
}

/* Gives state s the mask of a state above it (one repetition's counts up, as far as
 * CLIMB_MAX) when that repetition's counts are all above the longest token's bytes: each
 * copy of x takes a byte at least, so no token can use up such a count, and the two
 * allow the same tokens. */
static bool share_mask(ember_gmask_cache *c, uint32_t s)
{
    uint32_t u = above_of(c, s);
    if (u >= DEAD || c->states.p[s].level <= c->v->max_depth + 2) return false;
    for (uint32_t k = 0; u < DEAD && k < CLIMB_MAX; k++, u = above_of(c, u)) {
        const state *up = &c->states.p[u];
        if (up->mask == NONE) continue;
        c->states.p[s].mask = up->mask, c->states.p[s].n_allowed = up->n_allowed;
        c->counts.masks_shared++;
        return true;
    }
    return false;
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
        return row(&c->masks, c->states.p[s].mask);
    }
    if (share_mask(c, s)) {
        *n_allowed = c->states.p[s].n_allowed;
        return row(&c->masks, c->states.p[s].mask);
    }
    uint32_t at = add_rows(c, &c->masks, 1);
    if (at == NONE) return NULL;
    uint32_t n = walk(c, s, ember_gmatch_complete(m), row(&c->masks, at));
    if (c->oom) { /* a transition could not be worked out: the mask may lack tokens */
        clear(c);
        return NULL;
    }
    c->states.p[s].mask = at;
    c->states.p[s].n_allowed = *n_allowed = n;
    return row(&c->masks, at);
}

ember_gmask_counts ember_gmask_cache_counts(const ember_gmask_cache *c)
{
    ember_gmask_counts k = c->counts;
    k.states = c->states.n;
    k.bytes = held(c);
    return k;
}

ember_status ember_gmask_vocab_create(const ember_vtrie *v, ember_gmask_vocab **out, ember_err *err)
{
    /* JSON's string characters (RFC 8259): all but the quote, the backslash and U+0000 to
     * U+001F; every longer character too */
    static const uint32_t json_ascii[4] = {0, 0xFFFFFFFBu, 0xEFFFFFFFu, 0xFFFFFFFFu};
    size_t words = v->n_vocab ? (v->n_vocab + 31) / 32 : 1;
    ember_gmask_vocab *p = *out = ember_calloc(1, sizeof *p);
    if (p) {
        memcpy(p->ascii, json_ascii, sizeof json_ascii);
        p->sets = ember_calloc(words * PLAIN_CHARS, sizeof *p->sets);
        p->others = ember_malloc(sizeof *p->others * (v->n_vocab + 1));
    }
    if (!p || !p->sets || !p->others) {
        ember_gmask_vocab_free(p);
        *out = NULL;
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory for the vocabulary's token sets");
    }
    p->n_others = fill_plain(v, words, json_ascii, true, p->sets, p->others);
    return EMBER_OK;
}

void ember_gmask_vocab_free(ember_gmask_vocab *p)
{
    if (!p) return;
    ember_free(p->sets);
    ember_free(p->others);
    ember_free(p);
}

ember_status ember_gmask_cache_create(const ember_grammar *g, const ember_vtrie *v, const ember_gmask_vocab *vocab,
                                      size_t max_bytes, ember_gmask_cache **out, ember_err *err)
{
    ember_gmask_cache *c = *out = ember_calloc(1, sizeof *c);
    if (c) {
        c->v = v;
        c->vocab = vocab;
        c->words = v->n_vocab ? (v->n_vocab + 31) / 32 : 1;
        c->trans.len = 256, c->masks.len = c->words;
        c->max_bytes = max_bytes ? max_bytes : (size_t)64 << 20;
        c->n_slots = 64;
        c->slots = ember_malloc(sizeof *c->slots * c->n_slots);
        c->level = ember_malloc(sizeof *c->level * (v->max_depth + 1));
    }
    if (!c || !c->slots || !c->level || ember_gmatch_create(g, &c->m, err) != EMBER_OK ||
        ember_rep_chains_init(g, &c->chains, err) != EMBER_OK) {
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
    ember_rep_chains_free(&c->chains);
    ember_free(c->slots);
    ember_free(c->states.p);
    ember_free(c->keys.p);
    free_rows(&c->trans);
    free_rows(&c->masks);
    ember_free(c->key.p);
    ember_free(c->plains.p);
    ember_free(c->others.p);
    ember_free(c->level);
    ember_free(c);
}
