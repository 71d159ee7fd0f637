/* kv_cache.c — see kv_cache.h.
 *
 * Each block has a reference count, and when published, its hash, parent hash and
 * tokens (kept to rule out hash collisions). Lists:
 *   free   — unpublished blocks with count 0 (a stack);
 *   lru    — published blocks with count 0, oldest first (doubly linked);
 * and an open-addressing table from hash to published block. With local slots (the
 * sliding-window layers' second pool), a block holds a slot and counts the holders that
 * still need it (lrefs); free slots are a stack, and cached blocks holding one are
 * counted, the slots alloc may take back. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "kv_cache.h"

#define NONE UINT32_MAX

typedef struct block {
    uint32_t refs;
    bool published;
    uint32_t n;                    /* tokens the published block holds: 1..block_size */
    uint64_t hash, parent;
    uint32_t lru_prev, lru_next;   /* valid while in the lru list */
    uint32_t local;                /* its local slot, or NONE */
    uint32_t lrefs;                /* holders that still need the local slot */
} block;

struct ember_kv_cache {
    uint32_t n_blocks, block_size;
    block *b;
    uint32_t *tokens;              /* [n_blocks][block_size], for published blocks */
    uint32_t *free_list, n_free;
    uint32_t lru_head, lru_tail, n_lru;
    uint32_t *table, table_mask;   /* hash -> block, NONE = empty, TOMB = deleted */
    uint32_t n_live, n_tomb;       /* table occupancy; rebuilt when tombstones pile up */
    uint32_t n_used;
    uint32_t n_local;              /* local slots (0: none) */
    uint32_t *local_free, n_local_free;
    uint32_t n_cached_local;       /* cached blocks (count 0) holding a slot */
};

#define TOMB (NONE - 1)

ember_status ember_kv_create(uint32_t n_blocks, uint32_t block_size, ember_kv_cache **out, ember_err *err)
{
    return ember_kv_create_local(n_blocks, block_size, 0, out, err);
}

ember_status ember_kv_create_local(uint32_t n_blocks, uint32_t block_size, uint32_t n_local, ember_kv_cache **out,
                                   ember_err *err)
{
    *out = NULL;
    if (n_blocks == 0 || block_size == 0)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "KV cache needs at least one block of one token");
    ember_kv_cache *kv = ember_calloc(1, sizeof *kv);
    uint32_t cap = 16;
    while (cap < 2 * n_blocks) cap *= 2;
    if (kv) {
        kv->b = ember_calloc(n_blocks, sizeof *kv->b);
        kv->tokens = ember_malloc((size_t)n_blocks * block_size * sizeof *kv->tokens);
        kv->free_list = ember_malloc((size_t)n_blocks * sizeof *kv->free_list);
        kv->table = ember_malloc((size_t)cap * sizeof *kv->table);
        kv->local_free = ember_malloc((size_t)(n_local ? n_local : 1) * sizeof *kv->local_free);
    }
    if (!kv || !kv->b || !kv->tokens || !kv->free_list || !kv->table || !kv->local_free) {
        ember_kv_free(kv);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    for (uint32_t i = 0; i < n_blocks; i++) kv->free_list[i] = n_blocks - 1 - i; /* hand out 0 first */
    kv->n_free = n_blocks;
    for (uint32_t i = 0; i < n_blocks; i++) kv->b[i].local = NONE;
    for (uint32_t i = 0; i < n_local; i++) kv->local_free[i] = n_local - 1 - i;
    kv->n_local = kv->n_local_free = n_local;
    kv->lru_head = kv->lru_tail = NONE;
    kv->table_mask = cap - 1;
    memset(kv->table, 0xff, (size_t)cap * sizeof *kv->table);
    *out = kv;
    return EMBER_OK;
}

void ember_kv_free(ember_kv_cache *kv)
{
    if (!kv) return;
    ember_free(kv->b);
    ember_free(kv->tokens);
    ember_free(kv->free_list);
    ember_free(kv->table);
    ember_free(kv->local_free);
    ember_free(kv);
}

/* ---- lru list ----------------------------------------------------------------------- */

static void lru_push(ember_kv_cache *kv, uint32_t i)
{
    kv->b[i].lru_prev = kv->lru_tail;
    kv->b[i].lru_next = NONE;
    if (kv->lru_tail != NONE) kv->b[kv->lru_tail].lru_next = i;
    else kv->lru_head = i;
    kv->lru_tail = i;
    kv->n_lru++;
}

static void lru_remove(ember_kv_cache *kv, uint32_t i)
{
    block *x = &kv->b[i];
    if (x->lru_prev != NONE) kv->b[x->lru_prev].lru_next = x->lru_next;
    else kv->lru_head = x->lru_next;
    if (x->lru_next != NONE) kv->b[x->lru_next].lru_prev = x->lru_prev;
    else kv->lru_tail = x->lru_prev;
    kv->n_lru--;
}

/* ---- hash table ----------------------------------------------------------------------- */

uint64_t ember_kv_hash(uint64_t parent, const uint32_t *tokens, uint32_t n)
{
    uint64_t h = parent ^ 0x9E3779B97F4A7C15ull; /* FNV-1a-like over 32-bit words, then mixed */
    for (uint32_t i = 0; i < n; i++) h = (h ^ tokens[i]) * 0x100000001B3ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return (h ^ (h >> 32)) | 1; /* never 0: 0 means "no parent" */
}

static bool same_block(const ember_kv_cache *kv, uint32_t i, uint64_t parent, const uint32_t *tokens, uint32_t n)
{
    return kv->b[i].parent == parent && kv->b[i].n == n &&
           memcmp(kv->tokens + (size_t)i * kv->block_size, tokens, n * sizeof *tokens) == 0;
}

/* Slot of the published block equal to (parent, tokens[0..n)), or NONE. */
static uint32_t table_find(const ember_kv_cache *kv, uint64_t hash, uint64_t parent, const uint32_t *tokens,
                           uint32_t n)
{
    for (uint32_t s = (uint32_t)hash & kv->table_mask;; s = (s + 1) & kv->table_mask) {
        uint32_t i = kv->table[s];
        if (i == NONE) return NONE;
        if (i != TOMB && kv->b[i].hash == hash && same_block(kv, i, parent, tokens, n)) return s;
    }
}

static void table_put(ember_kv_cache *kv, uint32_t block, uint64_t hash)
{
    uint32_t s = (uint32_t)hash & kv->table_mask;
    while (kv->table[s] != NONE) s = (s + 1) & kv->table_mask;
    kv->table[s] = block;
}

/* Probing stops only at an empty slot, so tombstones must not fill the table: past
 * three quarters occupied, the table is rebuilt from the published blocks. */
static void table_insert(ember_kv_cache *kv, uint32_t block, uint64_t hash)
{
    if ((kv->n_live + kv->n_tomb + 1) * 4 > (kv->table_mask + 1) * 3) {
        memset(kv->table, 0xff, (size_t)(kv->table_mask + 1) * sizeof *kv->table);
        for (uint32_t i = 0; i < kv->n_blocks; i++)
            if (kv->b[i].published && i != block) table_put(kv, i, kv->b[i].hash);
        kv->n_tomb = 0;
    }
    table_put(kv, block, hash);
    kv->n_live++;
}

static void unpublish(ember_kv_cache *kv, uint32_t i)
{
    block *x = &kv->b[i];
    uint32_t s = table_find(kv, x->hash, x->parent, kv->tokens + (size_t)i * kv->block_size, x->n);
    if (s != NONE) {
        kv->table[s] = TOMB;
        kv->n_live--;
        kv->n_tomb++;
    }
    x->published = false;
}

/* ---- local slots ------------------------------------------------------------------- */

static bool cached(const block *x) { return x->refs == 0 && x->published; }

static void free_slot(ember_kv_cache *kv, uint32_t i)
{
    block *x = &kv->b[i];
    if (x->local == NONE) return;
    if (cached(x)) kv->n_cached_local--;
    kv->local_free[kv->n_local_free++] = x->local;
    x->local = NONE;
    x->lrefs = 0;
}

/* A slot for block i (which has none): a free one, else one a cached block gives up,
 * least recently used first. */
static bool give_slot(ember_kv_cache *kv, uint32_t i)
{
    if (!kv->n_local_free)
        for (uint32_t c = kv->lru_head; c != NONE && kv->n_cached_local; c = kv->b[c].lru_next)
            if (kv->b[c].local != NONE) {
                free_slot(kv, c);
                break;
            }
    if (!kv->n_local_free) return false;
    kv->b[i].local = kv->local_free[--kv->n_local_free];
    kv->b[i].lrefs = 1;
    return true;
}

uint32_t ember_kv_local(const ember_kv_cache *kv, uint32_t i)
{
    if (!kv->n_local) return i;
    return i < kv->n_blocks ? kv->b[i].local : EMBER_NO_BLOCK;
}

void ember_kv_drop_local(ember_kv_cache *kv, uint32_t i)
{
    if (!kv->n_local || i >= kv->n_blocks) return;
    block *x = &kv->b[i];
    if (x->local == NONE || x->lrefs == 0) return;
    if (--x->lrefs == 0 && x->refs) free_slot(kv, i);
}

void ember_kv_local_row(const ember_kv_cache *kv, const uint32_t *blocks, uint32_t n, uint32_t *out)
{
    for (uint32_t j = 0; j < n; j++) {
        uint32_t l = ember_kv_local(kv, blocks[j]);
        out[j] = l == EMBER_NO_BLOCK ? 0 : l;
    }
}

uint32_t ember_kv_n_local(const ember_kv_cache *kv) { return kv->n_local; }
uint32_t ember_kv_n_local_used(const ember_kv_cache *kv) { return kv->n_local - kv->n_local_free; }

/* ---- blocks ---------------------------------------------------------------------------- */

static uint32_t take(ember_kv_cache *kv, uint32_t i)
{
    kv->b[i].refs = 1;
    kv->n_used++;
    return i;
}

uint32_t ember_kv_alloc(ember_kv_cache *kv)
{
    uint32_t i;
    if (kv->n_free) {
        i = kv->free_list[--kv->n_free];
    } else {
        if (kv->lru_head == NONE) return EMBER_NO_BLOCK;
        i = kv->lru_head;
        free_slot(kv, i); /* the evicted block's slot is the first one free */
        lru_remove(kv, i);
        unpublish(kv, i);
    }
    if (kv->n_local && !give_slot(kv, i)) {
        kv->free_list[kv->n_free++] = i; /* no slot: the block waits, free */
        return EMBER_NO_BLOCK;
    }
    return take(kv, i);
}

void ember_kv_retain(ember_kv_cache *kv, uint32_t i)
{
    if (i >= kv->n_blocks) return;
    block *x = &kv->b[i];
    if (x->refs == 0) { /* only published blocks sit at zero outside the free list */
        if (x->local != NONE) kv->n_cached_local--, x->lrefs = 0;
        lru_remove(kv, i);
        kv->n_used++;
    }
    x->refs++;
    if (x->local != NONE) x->lrefs++;
}

/* Drops one reference of a holder that still needs the local slot (holds) or not. */
static void release(ember_kv_cache *kv, uint32_t i, bool holds)
{
    if (i >= kv->n_blocks || kv->b[i].refs == 0) return;
    block *x = &kv->b[i];
    if (holds && x->local != NONE && x->lrefs) x->lrefs--;
    if (--x->refs) {
        if (x->local != NONE && !x->lrefs) free_slot(kv, i);
        return;
    }
    kv->n_used--;
    if (x->published) {
        lru_push(kv, i);
        if (x->local != NONE) kv->n_cached_local++; /* the cache keeps the window */
    } else {
        free_slot(kv, i);
        kv->free_list[kv->n_free++] = i;
    }
}

void ember_kv_release(ember_kv_cache *kv, uint32_t i) { release(kv, i, true); }
void ember_kv_release_dropped(ember_kv_cache *kv, uint32_t i) { release(kv, i, false); }

uint32_t ember_kv_lookup_n(ember_kv_cache *kv, uint64_t parent, const uint32_t *tokens, uint32_t n)
{
    if (n == 0 || n > kv->block_size) return EMBER_NO_BLOCK;
    uint64_t h = ember_kv_hash(parent, tokens, n);
    uint32_t s = table_find(kv, h, parent, tokens, n);
    if (s == NONE) return EMBER_NO_BLOCK;
    ember_kv_retain(kv, kv->table[s]);
    return kv->table[s];
}

uint32_t ember_kv_lookup(ember_kv_cache *kv, uint64_t parent, const uint32_t *tokens)
{
    return ember_kv_lookup_n(kv, parent, tokens, kv->block_size);
}

void ember_kv_publish_n(ember_kv_cache *kv, uint32_t i, uint64_t parent, const uint32_t *tokens, uint32_t n)
{
    if (i >= kv->n_blocks || kv->b[i].published || n == 0 || n > kv->block_size) return;
    uint64_t h = ember_kv_hash(parent, tokens, n);
    if (table_find(kv, h, parent, tokens, n) != NONE) return;
    block *x = &kv->b[i];
    x->hash = h;
    x->parent = parent;
    x->n = n;
    memcpy(kv->tokens + (size_t)i * kv->block_size, tokens, n * sizeof *tokens);
    table_insert(kv, i, h);
    x->published = true;
}

void ember_kv_publish(ember_kv_cache *kv, uint32_t i, uint64_t parent, const uint32_t *tokens)
{
    ember_kv_publish_n(kv, i, parent, tokens, kv->block_size);
}

bool ember_kv_is_shared(const ember_kv_cache *kv, uint32_t i)
{
    return i < kv->n_blocks && (kv->b[i].refs > 1 || kv->b[i].published);
}

uint32_t ember_kv_block_size(const ember_kv_cache *kv) { return kv->block_size; }
uint32_t ember_kv_n_blocks(const ember_kv_cache *kv) { return kv->n_blocks; }
uint32_t ember_kv_n_available(const ember_kv_cache *kv)
{
    uint32_t blocks = kv->n_free + kv->n_lru, slots = kv->n_local_free + kv->n_cached_local;
    return kv->n_local && slots < blocks ? slots : blocks;
}
uint32_t ember_kv_n_used(const ember_kv_cache *kv) { return kv->n_used; }
uint32_t ember_kv_refcount(const ember_kv_cache *kv, uint32_t i) { return i < kv->n_blocks ? kv->b[i].refs : 0; }

void ember_kv_count_fill(const ember_kv_cache *kv, const uint32_t *blocks, uint32_t n_blocks, uint32_t n_tokens,
                         double *filled, double *slots)
{
    uint32_t bs = kv->block_size;
    for (uint32_t j = 0; j < n_blocks; j++) {
        double w = 1.0 / ember_kv_refcount(kv, blocks[j]);
        int64_t fill = (int64_t)n_tokens - (int64_t)j * bs;
        *filled += w * (double)(fill < 0 ? 0 : fill > bs ? bs : fill);
        *slots += w * bs;
    }
}

/* ---- resizing ----------------------------------------------------------------------- */

/* New ids for the blocks that stay: every block in use, then cached blocks, most
 * recently used first, while room is left. A block below n keeps its id; one at or
 * above n takes the lowest id left free. */
static void plan_resize(const ember_kv_cache *kv, uint32_t n, uint32_t *map, bool *taken)
{
    uint32_t room = n - kv->n_used;
    for (uint32_t i = 0; i < kv->n_blocks; i++) map[i] = kv->b[i].refs ? i : NONE;
    for (uint32_t i = kv->lru_tail; i != NONE && room; i = kv->b[i].lru_prev, room--) map[i] = i;
    for (uint32_t i = 0; i < kv->n_blocks; i++)
        if (map[i] != NONE && i < n) taken[i] = true;
    uint32_t next = 0;
    for (uint32_t i = n; i < kv->n_blocks; i++) {
        if (map[i] == NONE) continue;
        while (taken[next]) next++;
        map[i] = next;
        taken[next] = true;
    }
}

ember_status ember_kv_resize(ember_kv_cache *kv, uint32_t n, uint32_t *map, ember_err *err)
{
    if (n == 0 || n < kv->n_used)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "a pool of %u blocks cannot hold the %u in use", n, kv->n_used);
    uint32_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    block *b = ember_calloc(n, sizeof *b);
    uint32_t *tokens = ember_malloc((size_t)n * kv->block_size * sizeof *tokens);
    uint32_t *free_list = ember_malloc((size_t)n * sizeof *free_list), *table = ember_malloc((size_t)cap * sizeof *table);
    bool *taken = ember_calloc(n > kv->n_blocks ? n : kv->n_blocks, sizeof *taken);
    if (!b || !tokens || !free_list || !table || !taken) {
        ember_free(b), ember_free(tokens), ember_free(free_list), ember_free(table), ember_free(taken);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    plan_resize(kv, n, map, taken);
    for (uint32_t i = 0; i < kv->n_blocks; i++) {
        if (map[i] == NONE && kv->b[i].local != NONE) kv->local_free[kv->n_local_free++] = kv->b[i].local;
        if (map[i] == NONE) continue;
        b[map[i]] = kv->b[i];
        memcpy(tokens + (size_t)map[i] * kv->block_size, kv->tokens + (size_t)i * kv->block_size,
               kv->block_size * sizeof *tokens);
    }
    uint32_t old_head = kv->lru_head, *old_map = map;
    block *old = kv->b;
    ember_free(kv->tokens), ember_free(kv->free_list), ember_free(kv->table);
    kv->b = b, kv->tokens = tokens, kv->free_list = free_list, kv->table = table;
    kv->n_blocks = n;
    kv->table_mask = cap - 1;
    memset(table, 0xff, (size_t)cap * sizeof *table);
    kv->n_live = kv->n_tomb = kv->n_free = kv->n_lru = 0;
    kv->lru_head = kv->lru_tail = NONE;
    for (uint32_t i = old_head; i != NONE; i = old[i].lru_next) /* the same order of use */
        if (old_map[i] != NONE) lru_push(kv, old_map[i]);
    kv->n_cached_local = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (!taken[i]) b[i].published = false, b[i].local = NONE, b[i].lrefs = 0;
        if (b[i].published) table_insert(kv, i, b[i].hash);
        if (cached(&b[i]) && b[i].local != NONE) kv->n_cached_local++;
    }
    for (uint32_t i = n; i-- > 0;)
        if (!taken[i]) kv->free_list[kv->n_free++] = i; /* hand out low ids first */
    ember_free(old);
    ember_free(taken);
    return EMBER_OK;
}
