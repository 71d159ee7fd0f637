/* test_kv_cache.c — the block pool's bookkeeping: reference counts, publishing full and
 * partly filled blocks, lookups that must not confuse them, which blocks count as shared
 * (and must be copied before a write), the LRU reuse of cached blocks, and the local
 * slots of sliding-window layers (kept while a holder needs them, kept by the cache,
 * taken back from it, freed when no holder needs them, carried through a resize). */
#include <stdio.h>

#include "engine/kv_cache.h"
#include "testutil.h"

#define BS 4

static void test_refcounts(void)
{
    ember_kv_cache *kv;
    ember_err err;
    CHECK(ember_kv_create(3, BS, &kv, &err) == EMBER_OK);
    uint32_t a = ember_kv_alloc(kv), b = ember_kv_alloc(kv), c = ember_kv_alloc(kv);
    CHECK(a == 0 && b == 1 && c == 2);
    CHECK(ember_kv_alloc(kv) == EMBER_NO_BLOCK);
    CHECK(ember_kv_n_used(kv) == 3 && ember_kv_n_available(kv) == 0);
    CHECK(!ember_kv_is_shared(kv, a));
    ember_kv_retain(kv, a);
    CHECK(ember_kv_refcount(kv, a) == 2 && ember_kv_is_shared(kv, a));
    ember_kv_release(kv, a);
    CHECK(!ember_kv_is_shared(kv, a));
    ember_kv_release(kv, b);
    CHECK(ember_kv_n_available(kv) == 1 && ember_kv_alloc(kv) == b);
    ember_kv_free(kv);
}

static void test_publish_full_and_partial(void)
{
    ember_kv_cache *kv;
    ember_err err;
    CHECK(ember_kv_create(8, BS, &kv, &err) == EMBER_OK);
    const uint32_t t[] = {5, 6, 7, 8, 9, 10, 11};
    uint32_t full = ember_kv_alloc(kv), part = ember_kv_alloc(kv);
    ember_kv_publish(kv, full, 0, t);
    uint64_t h = ember_kv_hash(0, t, BS);
    ember_kv_publish_n(kv, part, h, t + BS, 3);
    /* A published block is shared even with one holder: a lookup may hand it out. */
    CHECK(ember_kv_is_shared(kv, full) && ember_kv_is_shared(kv, part));

    CHECK(ember_kv_lookup(kv, 0, t) == full && ember_kv_refcount(kv, full) == 2);
    CHECK(ember_kv_lookup_n(kv, 0, t, 3) == EMBER_NO_BLOCK);         /* fill differs */
    CHECK(ember_kv_lookup_n(kv, h, t + BS, 3) == part);
    CHECK(ember_kv_lookup_n(kv, h, t + BS, 2) == EMBER_NO_BLOCK);    /* a prefix is another block */
    CHECK(ember_kv_lookup_n(kv, 0, t + BS, 3) == EMBER_NO_BLOCK);    /* another parent */
    const uint32_t other[] = {9, 10, 12};
    CHECK(ember_kv_lookup_n(kv, h, other, 3) == EMBER_NO_BLOCK);
    CHECK(ember_kv_lookup_n(kv, h, t + BS, 0) == EMBER_NO_BLOCK);
    CHECK(ember_kv_lookup_n(kv, h, t + BS, BS + 1) == EMBER_NO_BLOCK);

    /* Publishing an equal block again is a no-op: the first stays the one found. */
    uint32_t dup = ember_kv_alloc(kv);
    ember_kv_publish_n(kv, dup, h, t + BS, 3);
    CHECK(!ember_kv_is_shared(kv, dup));
    CHECK(ember_kv_lookup_n(kv, h, t + BS, 3) == part && ember_kv_refcount(kv, part) == 3);
    ember_kv_free(kv);
}

/* Cached blocks (published, count zero) are reused oldest first, and a reused block is
 * forgotten: its old tokens no longer find it. */
static void test_lru(void)
{
    ember_kv_cache *kv;
    ember_err err;
    CHECK(ember_kv_create(2, BS, &kv, &err) == EMBER_OK);
    const uint32_t t1[] = {1, 2, 3, 4}, t2[] = {1, 2};
    uint32_t a = ember_kv_alloc(kv), b = ember_kv_alloc(kv);
    ember_kv_publish(kv, a, 0, t1);
    ember_kv_publish_n(kv, b, 0, t2, 2);
    ember_kv_release(kv, a);
    ember_kv_release(kv, b);
    CHECK(ember_kv_n_used(kv) == 0 && ember_kv_n_available(kv) == 2);
    CHECK(ember_kv_lookup_n(kv, 0, t2, 2) == b); /* back in use: leaves the LRU list */
    CHECK(ember_kv_alloc(kv) == a);              /* a was the only cached block */
    CHECK(ember_kv_lookup(kv, 0, t1) == EMBER_NO_BLOCK);
    CHECK(!ember_kv_is_shared(kv, a));
    ember_kv_release(kv, b);
    CHECK(ember_kv_alloc(kv) == b && ember_kv_lookup_n(kv, 0, t2, 2) == EMBER_NO_BLOCK);
    ember_kv_free(kv);
}

/* Many publish/forget cycles: the table's tombstones are cleared and lookups stay exact. */
static void test_churn(void)
{
    ember_kv_cache *kv;
    ember_err err;
    CHECK(ember_kv_create(4, BS, &kv, &err) == EMBER_OK);
    int found = 0;
    for (uint32_t round = 0; round < 2000; round++) {
        uint32_t tok[BS] = {round, round + 1, round + 2, round + 3};
        uint32_t n = 1 + round % BS, blk = ember_kv_alloc(kv);
        CHECK(blk != EMBER_NO_BLOCK);
        ember_kv_publish_n(kv, blk, round, tok, n);
        ember_kv_release(kv, blk);
        uint32_t again = ember_kv_lookup_n(kv, round, tok, n);
        found += again == blk;
        ember_kv_release(kv, again);
        if (round >= 4) {
            uint32_t old[BS] = {round - 4, round - 3, round - 2, round - 1};
            CHECK(ember_kv_lookup_n(kv, round - 4, old, 1 + (round - 4) % BS) == EMBER_NO_BLOCK);
        }
    }
    CHECK(found == 2000);
    ember_kv_free(kv);
}

/* Shrinking keeps the blocks in use (moving those above the new size down, with their
 * published hashes), keeps cached blocks while room is left, and growing adds free ones. */
static void test_resize(void)
{
    ember_kv_cache *kv;
    ember_err err;
    CHECK(ember_kv_create(8, BS, &kv, &err) == EMBER_OK);
    uint32_t b[8], map[16];
    for (int i = 0; i < 8; i++) b[i] = ember_kv_alloc(kv);
    const uint32_t toks[BS] = {7, 8, 9, 10};
    ember_kv_publish(kv, b[6], 0, toks);           /* in use and published, above 4 */
    for (int i = 0; i < 6; i++) ember_kv_release(kv, b[i]); /* 0..5 free; 6, 7 in use */
    CHECK(ember_kv_resize(kv, 1, map, &err) == EMBER_ERR_INVALID_ARG); /* 2 in use */
    CHECK(ember_kv_resize(kv, 4, map, &err) == EMBER_OK);
    CHECK(ember_kv_n_blocks(kv) == 4 && ember_kv_n_used(kv) == 2 && ember_kv_n_available(kv) == 2);
    CHECK(map[6] < 4 && map[7] < 4 && map[6] != map[7] && map[0] == EMBER_NO_BLOCK);
    CHECK(ember_kv_refcount(kv, map[6]) == 1 && ember_kv_refcount(kv, map[7]) == 1);
    uint32_t hit = ember_kv_lookup(kv, 0, toks);   /* the published block moved with its hash */
    CHECK(hit == map[6] && ember_kv_refcount(kv, hit) == 2);
    ember_kv_release(kv, hit);
    ember_kv_release(kv, map[6]);                   /* now cached, count 0 */
    CHECK(ember_kv_resize(kv, 8, map, &err) == EMBER_OK);
    CHECK(ember_kv_n_blocks(kv) == 8 && ember_kv_n_used(kv) == 1 && ember_kv_n_available(kv) == 7);
    hit = ember_kv_lookup(kv, 0, toks);            /* the cached block survived growing */
    CHECK(hit != EMBER_NO_BLOCK && ember_kv_refcount(kv, hit) == 1);
    uint32_t got = 0;
    while (ember_kv_alloc(kv) != EMBER_NO_BLOCK) got++;
    CHECK(got == 6);
    ember_kv_free(kv);
}

/* The local pool of sliding-window layers: 3 slots for 6 blocks. */
static void test_local_slots(void)
{
    ember_kv_cache *kv;
    ember_err err;
    CHECK(ember_kv_create_local(6, BS, 3, &kv, &err) == EMBER_OK);
    uint32_t a = ember_kv_alloc(kv), b = ember_kv_alloc(kv), c = ember_kv_alloc(kv);
    CHECK(ember_kv_local(kv, a) != EMBER_NO_BLOCK && ember_kv_local(kv, b) != EMBER_NO_BLOCK);
    CHECK(ember_kv_local(kv, a) != ember_kv_local(kv, b) && ember_kv_n_local_used(kv) == 3);
    /* three blocks free, no slot: nothing can be handed out */
    CHECK(ember_kv_n_available(kv) == 0 && ember_kv_alloc(kv) == EMBER_NO_BLOCK);
    /* a shared block keeps its slot until its last holder drops it */
    ember_kv_retain(kv, a);
    ember_kv_drop_local(kv, a);
    CHECK(ember_kv_local(kv, a) != EMBER_NO_BLOCK);
    ember_kv_drop_local(kv, a);
    CHECK(ember_kv_local(kv, a) == EMBER_NO_BLOCK && ember_kv_refcount(kv, a) == 2);
    CHECK(ember_kv_n_local_used(kv) == 2 && ember_kv_n_available(kv) == 1);
    uint32_t d = ember_kv_alloc(kv); /* the slot a gave up */
    CHECK(d != EMBER_NO_BLOCK && ember_kv_local(kv, d) != EMBER_NO_BLOCK);
    ember_kv_release_dropped(kv, a);
    ember_kv_release_dropped(kv, a);
    CHECK(ember_kv_refcount(kv, a) == 0 && ember_kv_n_used(kv) == 3);
    /* a published block released by a holder that needed it keeps its slot, cached */
    const uint32_t toks[BS] = {3, 4, 5, 6};
    ember_kv_publish(kv, b, 0, toks);
    ember_kv_release(kv, b);
    CHECK(ember_kv_local(kv, b) != EMBER_NO_BLOCK && ember_kv_n_local_used(kv) == 3);
    uint32_t hit = ember_kv_lookup(kv, 0, toks);
    CHECK(hit == b && ember_kv_local(kv, b) != EMBER_NO_BLOCK);
    ember_kv_release(kv, b);
    /* ... until a new block needs a slot: the cache gives it up, the block stays cached */
    uint32_t e = ember_kv_alloc(kv);
    CHECK(e != EMBER_NO_BLOCK && e != b && ember_kv_local(kv, b) == EMBER_NO_BLOCK);
    hit = ember_kv_lookup(kv, 0, toks);
    CHECK(hit == b && ember_kv_local(kv, hit) == EMBER_NO_BLOCK); /* found, without its window */
    ember_kv_release(kv, hit);
    /* a block dropped by its only holder while in use frees its slot at once */
    ember_kv_drop_local(kv, c);
    CHECK(ember_kv_local(kv, c) == EMBER_NO_BLOCK && ember_kv_n_local_used(kv) == 2);
    /* a resize carries the slots of the blocks it keeps */
    uint32_t map[6], keep = ember_kv_local(kv, d);
    CHECK(ember_kv_resize(kv, 5, map, &err) == EMBER_OK);
    CHECK(ember_kv_local(kv, map[d]) == keep && ember_kv_n_local_used(kv) == 2);
    ember_kv_free(kv);
    /* without local slots the local part is the block itself */
    CHECK(ember_kv_create(2, BS, &kv, &err) == EMBER_OK);
    a = ember_kv_alloc(kv);
    CHECK(ember_kv_local(kv, a) == a && ember_kv_n_local(kv) == 0);
    ember_kv_free(kv);
}

int main(void)
{
    test_refcounts();
    test_publish_full_and_partial();
    test_lru();
    test_churn();
    test_resize();
    test_local_slots();
    if (tu_failures) {
        fprintf(stderr, "test_kv_cache: %d failures\n", tu_failures);
        return 1;
    }
    printf("test_kv_cache: all checks passed\n");
    return 0;
}
