/* test_scheduler.c — the scheduler alone: no model, no device. A fake step stands in for
 * the forward pass (every planned row is "computed", a request whose chunk ends its known
 * tokens gets the next token, 100 + its length), so that each case can assert exactly
 * which rows the rule plans: admission, chunked prefill, decoders before prompt chunks,
 * preemption and recomputation, a request that can never fit, prefix hits with copy on
 * write, samples of one prompt sharing its blocks, and the static-batching hook's fixed-shape batch. */
#include <stdlib.h>
#include <string.h>

#include "engine/scheduler.h"
#include "engine/static_batch.h"
#include "testutil.h"

#define BS 4         /* tokens per block */
#define MAX_BLOCKS 16

typedef struct fixture {
    ember_kv_cache *kv;
    ember_sched *s;
    ember_static *st;
    ember_sched_item items[16];
    request *stuck[8];
    uint32_t n_items, n_stuck, n_finished;
} fixture;

static void open_fixture(fixture *f, uint32_t max_seqs, uint32_t budget, uint32_t n_blocks, bool prefix,
                         int static_mode)
{
    ember_err err;
    memset(f, 0, sizeof *f);
    CHECK(ember_kv_create(n_blocks, BS, &f->kv, &err) == EMBER_OK);
    if (static_mode) {
        ember_static_opts so = {.pad_prompts = static_mode == 2, .max_seqs = max_seqs,
                                .max_blocks_per_seq = MAX_BLOCKS, .ctx_len = MAX_BLOCKS * BS};
        CHECK(ember_static_create(&so, f->kv, &f->st, &err) == EMBER_OK);
    }
    ember_sched_opts o = {.max_seqs = max_seqs, .max_batch_tokens = budget, .max_blocks_per_seq = MAX_BLOCKS,
                          .prefix_cache = prefix, .hook = f->st ? ember_static_hook(f->st) : NULL};
    CHECK(ember_sched_create(&o, f->kv, &f->s, &err) == EMBER_OK);
}

static void close_fixture(fixture *f)
{
    ember_sched_free(f->s);
    ember_static_free(f->st);
    ember_kv_free(f->kv);
}

/* A request with a prompt of n tokens (first, first+1, ...) that wants max_tokens more. */
static request *make(uint32_t id, uint32_t n, uint32_t first, uint32_t max_tokens)
{
    request *r = calloc(1, sizeof *r);
    r->id = id;
    r->cap = n + max_tokens + 1;
    r->tokens = calloc(r->cap, sizeof *r->tokens);
    r->blocks = calloc(MAX_BLOCKS, sizeof *r->blocks);
    r->hashes = calloc(MAX_BLOCKS, sizeof *r->hashes);
    for (uint32_t i = 0; i < n; i++) r->tokens[i] = first + i;
    r->n_prompt = r->n_tokens = n;
    r->max_tokens = max_tokens;
    return r;
}

static void drop(request *r)
{
    free(r->tokens);
    free(r->blocks);
    free(r->hashes);
    free(r);
}

static void finish(fixture *f, request *r)
{
    f->n_finished++;
    ember_sched_remove(f->s, r);
    drop(r);
}

static void plan(fixture *f)
{
    f->n_items = ember_sched_plan(f->s, f->items, f->stuck, &f->n_stuck);
}

/* The fake step: every row computed; a chunk that ends the known tokens yields the next
 * token; a request with all its tokens is finished (and freed). Filler rows feed back 7. */
static void step(fixture *f)
{
    for (uint32_t i = 0; i < f->n_items; i++) {
        ember_sched_item *it = &f->items[i];
        request *r = it->r;
        if (!r) {
            if (it->logits) *it->fill.next = 7;
            continue;
        }
        ember_sched_advance(f->s, r, it->n);
        if (!it->logits) continue;
        r->tokens[r->n_tokens] = 100 + r->n_tokens;
        r->n_tokens++;
        if (++r->m.n_gen == r->max_tokens) finish(f, r);
    }
    ember_sched_end_step(f->s);
}

static uint32_t n_running(fixture *f)
{
    uint32_t n;
    ember_sched_running(f->s, &n);
    return n;
}

/* Plans and steps until nothing runs. */
static void run_to_end(fixture *f)
{
    for (uint32_t steps = 0; n_running(f) && steps < 1000; steps++) {
        plan(f);
        step(f);
    }
}

/* The item of request r in the last plan, or NULL. */
static const ember_sched_item *item_of(const fixture *f, const request *r)
{
    for (uint32_t i = 0; i < f->n_items; i++)
        if (f->items[i].r == r) return &f->items[i];
    return NULL;
}

/* Three requests, two slots: the first two are admitted with their whole prompts, the
 * third waits for a slot and joins the step after the first one finishes. */
static void test_admission(void)
{
    fixture f;
    open_fixture(&f, 2, 64, 32, false, 0);
    request *a = make(1, 5, 10, 1), *b = make(2, 6, 20, 3), *c = make(3, 7, 30, 2);
    ember_sched_enqueue(f.s, a);
    ember_sched_enqueue(f.s, b);
    ember_sched_enqueue(f.s, c);
    plan(&f);
    CHECK(f.n_items == 2 && f.items[0].r == a && f.items[0].n == 5 && f.items[0].logits);
    CHECK(f.items[1].r == b && f.items[1].n == 6 && f.items[1].logits);
    CHECK(ember_sched_waiting(f.s) == c && n_running(&f) == 2 && ember_sched_free_slots(f.s) == 0);
    step(&f); /* a got its only token and finished; b decodes */
    plan(&f);
    CHECK(f.n_items == 2 && f.items[0].r == b && f.items[0].n == 1); /* the decoder first */
    CHECKF(f.items[1].r == c && f.items[1].n == 7 && c->slot == 0, "c: %u rows in slot %u", f.items[1].n, c->slot);
    CHECK(ember_sched_waiting(f.s) == NULL && ember_kv_n_used(f.kv) == 2 + 2);
    step(&f);
    step(&f);
    run_to_end(&f);
    CHECK(ember_kv_n_used(f.kv) == 0 && ember_sched_free_slots(f.s) == 2);
    close_fixture(&f);
}

/* A 20-token prompt beside a decoder under an 8-token budget: every step the decoder
 * gets its token first and the prompt a chunk of what is left, 7, 7 and then the last 6
 * (whose last row gives the first token). */
static void test_chunking(void)
{
    fixture f;
    open_fixture(&f, 4, 8, 32, false, 0);
    request *d = make(1, 3, 10, 10), *p = make(2, 20, 50, 2);
    ember_sched_enqueue(f.s, d);
    plan(&f);
    step(&f); /* d is decoding now */
    ember_sched_enqueue(f.s, p);
    uint32_t chunks[4] = {0}, n_chunks = 0;
    while (p->n_tokens == 20 && n_chunks < 4) {
        plan(&f);
        const ember_sched_item *id = item_of(&f, d), *ip = item_of(&f, p);
        CHECK(id && id->n == 1 && f.items[0].r == d);
        if (ip) {
            chunks[n_chunks++] = ip->n;
            CHECK(ip->logits == (p->n_computed + ip->n == 20));
        }
        step(&f);
    }
    CHECKF(n_chunks == 3 && chunks[0] == 7 && chunks[1] == 7 && chunks[2] == 6, "chunks %u: %u %u %u", n_chunks,
           chunks[0], chunks[1], chunks[2]);
    run_to_end(&f);
    close_fixture(&f);
}

/* Two decoders in a pool of 4 blocks: when the older needs a block, the newer is
 * preempted (its blocks back to the pool, itself to the head of the queue) and, admitted
 * again with the block left over, recomputes from its first token the 8 tokens it held
 * (prompt and generated), a chunk at a time. */
static void test_preemption(void)
{
    fixture f;
    open_fixture(&f, 2, 64, 4, false, 0);
    request *a = make(1, 6, 10, 8), *b = make(2, 5, 20, 8);
    ember_sched_enqueue(f.s, a);
    ember_sched_enqueue(f.s, b);
    plan(&f);
    step(&f); /* a: 7 tokens in 2 blocks, b: 6 tokens in 2 blocks */
    CHECK(ember_kv_n_available(f.kv) == 0);
    plan(&f); /* both decode position 6 (a) / 5 (b): room in their blocks */
    step(&f);
    plan(&f); /* a writes position 7 (block 1), b position 6 (block 1) */
    step(&f);
    plan(&f); /* a needs position 8: block 2, and none is free: b goes */
    const ember_sched_item *ia = item_of(&f, a), *ib = item_of(&f, b);
    CHECK(f.items[0].r == a && ia->n == 1);
    CHECK(b->m.preemptions == 1 && ember_sched_get_stats(f.s)->preemptions == 1);
    CHECKF(ib && b->n_computed == 0 && ib->n == 4 && !ib->logits && b->n_prefill == 8, "b: %u rows from %u",
           ib ? ib->n : 0, b->n_computed);
    uint32_t steps = 0;
    while (n_running(&f) && steps++ < 100) {
        step(&f);
        plan(&f);
    }
    CHECK(ember_kv_n_used(f.kv) == 0 && f.n_stuck == 0 && f.n_finished == 2);
    close_fixture(&f);
}

/* A request alone that needs more blocks than the pool has is handed back as stuck. */
static void test_stuck(void)
{
    fixture f;
    open_fixture(&f, 2, 64, 2, false, 0);
    request *a = make(1, 8, 10, 8);
    ember_sched_enqueue(f.s, a);
    plan(&f);
    step(&f); /* 8 tokens computed: 2 blocks full */
    plan(&f);
    CHECK(f.n_items == 0 && f.n_stuck == 1 && f.stuck[0] == a);
    finish(&f, a);
    CHECK(ember_kv_n_used(f.kv) == 0);
    close_fixture(&f);
}

/* A finished request's blocks serve a later one with the same prefix: its full blocks
 * are taken, the partly filled last one is shared and copied before the newcomer writes
 * into it. */
static void test_prefix_hits(void)
{
    fixture f;
    open_fixture(&f, 2, 64, 16, true, 0);
    request *a = make(1, 10, 40, 1);
    ember_sched_enqueue(f.s, a);
    plan(&f);
    step(&f); /* a computed 10 tokens and finished: blocks [0..4) [4..8) full, [8..10) partial */
    request *b = make(2, 12, 40, 1);
    ember_sched_enqueue(f.s, b);
    plan(&f);
    const ember_sched_item *ib = item_of(&f, b);
    /* two full blocks and the 2-token tail: 10 cached, 2 to compute */
    CHECKF(ib && b->n_computed == 10 && ib->n == 2, "b: %u cached, %u rows", b->n_computed, ib ? ib->n : 0);
    CHECK(b->m.n_cached == 10 && ember_sched_get_stats(f.s)->prefix_hit_tokens == 10);
    const uint32_t *src, *dst;
    CHECK(ember_sched_copies(f.s, &src, &dst) == 1 && b->blocks[2] == dst[0] && src[0] != dst[0]);
    CHECK(ember_sched_get_stats(f.s)->cow_copies == 1);
    step(&f);
    /* the same prompt a third time: everything but its last token comes from the cache */
    request *c = make(3, 12, 40, 1);
    ember_sched_enqueue(f.s, c);
    plan(&f);
    const ember_sched_item *ic = item_of(&f, c);
    CHECKF(ic && c->n_computed == 11 && ic->n == 1, "c: %u cached", c->n_computed);
    step(&f);
    plan(&f); /* nothing to do; the copies' old blocks are let go of */
    CHECK(f.n_items == 0 && ember_kv_n_used(f.kv) == 0 && ember_sched_get_stats(f.s)->prefix_hit_tokens == 21);
    close_fixture(&f);
}

/* Peak blocks in use while three 10-token prompts each generate 3 tokens, as samples of
 * one group or as separate requests. */
static uint32_t three_samples(uint64_t group)
{
    fixture f;
    open_fixture(&f, 4, 64, 16, true, 0);
    request *r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = make(1 + i, 10, 40, 3);
        r[i]->group = group;
        ember_sched_enqueue(f.s, r[i]);
    }
    plan(&f);
    if (group) {
        /* the first computes the prompt; the others wait for it */
        CHECK(f.n_items == 1 && item_of(&f, r[0])->n == 10);
        step(&f);
        plan(&f);
        /* then take its two full blocks and the part of the third before the last token,
         * computing that token alone, each in a copy of the third block */
        for (int i = 1; i < 3; i++) {
            const ember_sched_item *it = item_of(&f, r[i]);
            CHECKF(it && it->n == 1 && r[i]->n_computed == 9, "sample %d: %u rows", i, it ? it->n : 0);
            CHECK(r[i]->blocks[0] == r[0]->blocks[0] && r[i]->blocks[1] == r[0]->blocks[1]);
            CHECK(r[i]->blocks[2] != r[0]->blocks[2]);
        }
        CHECK(ember_kv_refcount(f.kv, r[0]->blocks[0]) == 3);
        const uint32_t *src, *dst;
        CHECK(ember_sched_copies(f.s, &src, &dst) == 2 && src[0] == r[0]->blocks[2] && src[1] == src[0]);
        step(&f);
    } else {
        CHECK(f.n_items == 3); /* all at once, each computing the whole prompt */
    }
    run_to_end(&f);
    plan(&f);
    CHECK(f.n_finished == 3 && ember_kv_n_used(f.kv) == 0);
    uint32_t peak = ember_sched_get_stats(f.s)->peak_blocks;
    close_fixture(&f);
    return peak;
}

/* A group's prompt is computed once: positions 0..11 are 2 shared blocks and one of its
 * own per sample, against 3 per request. A long prompt in chunks keeps the others waiting throughout. */
static void test_groups(void)
{
    uint32_t grouped = three_samples(7), separate = three_samples(0);
    CHECKF(grouped == 2 + 3 * 1 && separate == 3 * 3, "peak blocks: %u grouped, %u separate", grouped, separate);

    fixture f;
    open_fixture(&f, 4, 4, 16, true, 0);
    request *a = make(1, 10, 40, 1), *b = make(2, 10, 40, 1);
    a->group = b->group = 3;
    ember_sched_enqueue(f.s, a);
    ember_sched_enqueue(f.s, b);
    for (int chunk = 0; chunk < 2; chunk++) { /* rows 0..4, 4..8 */
        plan(&f);
        CHECK(f.n_items == 1 && item_of(&f, a)->n == 4);
        step(&f);
    }
    plan(&f); /* a's last 2 rows; b still waits (a's row 8 is not computed) */
    CHECK(f.n_items == 1 && item_of(&f, a)->n == 2);
    step(&f); /* a finished (one token): its blocks stay cached */
    plan(&f);
    CHECKF(item_of(&f, b) && b->n_computed == 9, "b: %u cached", b->n_computed);
    run_to_end(&f);
    close_fixture(&f);
}

/* Static batching through the hook: the batch admits what fits when nothing runs, a
 * newcomer waits for the batch to end, and a finished member computes filler rows (its
 * padding) until the last member finishes. */
static void test_static_hook(void)
{
    fixture f;
    open_fixture(&f, 2, 64, 16, false, 1);
    request *a = make(1, 4, 10, 1), *b = make(2, 4, 20, 3), *c = make(3, 4, 30, 1);
    ember_sched_enqueue(f.s, a);
    ember_sched_enqueue(f.s, b);
    plan(&f);
    CHECK(f.n_items == 2);
    step(&f); /* a finished: a padding row now, in its slot */
    ember_sched_enqueue(f.s, c);
    uint32_t fillers = 0, steps = 0;
    while (n_running(&f)) {
        plan(&f);
        CHECK(!item_of(&f, c)); /* no joining a running batch */
        for (uint32_t i = 0; i < f.n_items; i++)
            if (!f.items[i].r) {
                fillers += f.items[i].n;
                CHECK(f.items[i].fill.slot == 0 && f.items[i].logits);
            }
        step(&f);
        steps++;
    }
    CHECKF(steps == 2 && fillers == 2, "%u steps, %u filler rows", steps, fillers);
    CHECK(ember_sched_free_slots(f.s) == 2); /* the padding row went with the batch */
    plan(&f);
    CHECK(item_of(&f, c) != NULL);
    step(&f);
    CHECK(ember_kv_n_used(f.kv) == 0);
    close_fixture(&f);
}

int main(void)
{
    test_admission();
    test_chunking();
    test_preemption();
    test_stuck();
    test_prefix_hits();
    test_groups();
    test_static_hook();
    return tu_finish("test_scheduler");
}
