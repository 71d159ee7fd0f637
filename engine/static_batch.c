/* static_batch.c — static batching as the scheduler's hook (static_batch.h).
 *
 * The batch: it opens when nothing runs and admits until it is full, the queue is empty
 * or the pool cannot take the next request; then it closes until its last member leaves.
 * Members are ordinary running requests of the scheduler. A member that finishes while
 * others run becomes a padding row here, keeping its slot and blocks; padded prompts are
 * planned as filler rows after each member's prompt. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "static_batch.h"

/* A finished member computing on for the batch's fixed shape. Indexed by its slot. */
typedef struct pad_row {
    bool live;
    uint32_t n_computed, token;   /* its next position, and the token fed there */
    uint64_t admitted;            /* its member's admission: the newest goes first */
    uint32_t *blocks, n_blocks;
} pad_row;

struct ember_static {
    ember_static_opts o;
    ember_kv_cache *kv;
    ember_sched_hook hook;
    bool open;                    /* the batch still forms */
    uint32_t batch_prompt;        /* padded prompts: the longest prefill of its members */
    uint32_t *pad_done;           /* per slot: prompt padding rows its member computed */
    pad_row *rows;                /* per slot */
    uint32_t n_rows;              /* live padding rows */
    uint32_t *blocks;             /* the rows' block tables */
};

/* ---- padding rows ------------------------------------------------------------------ */

/* The live row admitted right after `after` (0: the oldest), or -1. */
static int next_row(const ember_static *st, uint64_t after)
{
    int best = -1;
    for (uint32_t i = 0; i < st->o.max_seqs; i++) {
        const pad_row *p = &st->rows[i];
        if (p->live && p->admitted > after && (best < 0 || p->admitted < st->rows[best].admitted)) best = (int)i;
    }
    return best;
}

static int newest_row(const ember_static *st)
{
    int best = -1;
    for (uint32_t i = 0; i < st->o.max_seqs; i++)
        if (st->rows[i].live && (best < 0 || st->rows[i].admitted > st->rows[best].admitted)) best = (int)i;
    return best;
}

/* Lets the padding row of slot go: its blocks back to the pool, its slot to the
 * scheduler. */
static void retire(ember_static *st, ember_sched *s, uint32_t slot)
{
    pad_row *p = &st->rows[slot];
    for (uint32_t i = 0; i < p->n_blocks; i++) ember_kv_release(st->kv, p->blocks[i]);
    p->n_blocks = 0;
    p->live = false;
    st->n_rows--;
    ember_sched_release_slot(s, slot);
}

static uint32_t n_members(ember_sched *s)
{
    uint32_t n;
    ember_sched_running(s, &n);
    return n;
}

/* r finished: while other members run, it stays as a padding row fed its last token. */
static bool keep(void *ctx, ember_sched *s, request *r)
{
    ember_static *st = ctx;
    if (n_members(s) < 2) return false; /* r is the last member: the batch ends */
    pad_row *p = &st->rows[r->slot];
    memcpy(p->blocks, r->blocks, r->n_blocks * sizeof *p->blocks);
    p->n_blocks = r->n_blocks;
    p->n_computed = r->n_computed;
    p->token = r->tokens[r->n_tokens - 1];
    p->admitted = r->admitted;
    p->live = true;
    st->n_rows++;
    return true;
}

/* A batch ends when its last member leaves: its padding rows go with it. */
static void left(void *ctx, ember_sched *s)
{
    ember_static *st = ctx;
    if (n_members(s) > 0) return;
    for (int i; (i = newest_row(st)) >= 0;) retire(st, s, (uint32_t)i);
}

/* Grows a padding row's blocks to cover position pos; false when it cannot. */
static bool row_room(ember_static *st, pad_row *p, uint32_t pos)
{
    uint32_t bs = ember_kv_block_size(st->kv);
    if (pos >= st->o.ctx_len || pos / bs >= st->o.max_blocks_per_seq) return false;
    while (p->n_blocks * bs <= pos) {
        uint32_t b = ember_kv_alloc(st->kv);
        if (b == EMBER_NO_BLOCK) return false;
        p->blocks[p->n_blocks++] = b;
    }
    return true;
}

static void count_fill(void *ctx, const ember_kv_cache *kv, double *filled, double *slots)
{
    ember_static *st = ctx;
    for (uint32_t i = 0; i < st->o.max_seqs; i++)
        if (st->rows[i].live) ember_kv_count_fill(kv, st->rows[i].blocks, st->rows[i].n_blocks,
                                                  st->rows[i].n_computed, filled, slots);
}

/* ---- padded prompts ---------------------------------------------------------------- */

/* Prompt padding rows member r has still to compute: every member of a fixed-shape batch
 * prefills as many rows as the batch's longest prompt. */
static uint32_t pad_left(const ember_static *st, const request *r)
{
    uint32_t done = r->n_prefill + st->pad_done[r->slot];
    return st->o.pad_prompts && st->batch_prompt > done ? st->batch_prompt - done : 0;
}

/* A fixed-shape batch decodes only after its prefill: while members may still join or
 * one of them has prompt or padding rows left, nobody decodes. */
static bool prefilling(const ember_static *st, ember_sched *s)
{
    uint32_t n;
    request **run = ember_sched_running(s, &n);
    if (!st->o.pad_prompts || !n) return false;
    if (st->open) return true;
    for (uint32_t i = 0; i < n; i++)
        if (run[i]->n_computed < run[i]->n_prefill || pad_left(st, run[i])) return true;
    return false;
}

/* Members through their prefill give back the blocks past their next position, which
 * only prompt padding rows wrote. True if any did. */
static bool drop_padding_blocks(ember_static *st, ember_sched *s)
{
    uint32_t n;
    request **run = ember_sched_running(s, &n);
    bool freed = false;
    for (uint32_t i = 0; st->o.pad_prompts && i < n; i++) {
        request *q = run[i];
        if (!st->pad_done[q->slot] || q->n_computed < q->n_prefill) continue;
        uint32_t had = q->n_blocks;
        ember_sched_trim(s, q);
        freed |= q->n_blocks < had;
    }
    return freed;
}

/* The pool ran dry: the newest padding row goes, else padded prompts give blocks back. */
static bool reclaim(void *ctx, ember_sched *s)
{
    ember_static *st = ctx;
    int i = newest_row(st);
    if (i >= 0) {
        retire(st, s, (uint32_t)i);
        return true;
    }
    return drop_padding_blocks(st, s);
}

/* ---- planning ---------------------------------------------------------------------- */

static ember_sched_item filler(uint32_t slot, uint32_t pos0, uint32_t token, const uint32_t *blocks,
                               uint32_t n_blocks, uint32_t n, uint32_t *next)
{
    return (ember_sched_item){.n = n, .logits = next != NULL,
                              .fill = {slot, pos0, token, blocks, n_blocks, next}};
}

static const ember_sched_item *item_of(const ember_sched_item *items, uint32_t n_items, const request *r)
{
    for (uint32_t i = 0; i < n_items; i++)
        if (items[i].r == r) return &items[i];
    return NULL;
}

/* Admission only while the batch forms: from the moment nothing runs until it is full,
 * the queue is empty or the pool cannot take the next request. */
static uint32_t admit(ember_static *st, ember_sched *s, ember_sched_item *items, uint32_t n_items, uint32_t *budget)
{
    if (n_members(s) == 0) {
        st->open = true;
        st->batch_prompt = 0;
    }
    if (st->open) {
        uint32_t first = n_items;
        n_items = ember_sched_admit(s, items, n_items, budget);
        for (uint32_t i = first; i < n_items; i++) {
            const request *r = items[i].r;
            st->pad_done[r->slot] = 0;
            if (r->n_tokens > st->batch_prompt) st->batch_prompt = r->n_tokens;
        }
        bool refused = ember_sched_waiting(s) && *budget && ember_sched_free_slots(s); /* no blocks */
        if (refused && n_members(s)) st->open = false;
    }
    if (!ember_sched_waiting(s) || !ember_sched_free_slots(s)) st->open = false;
    return n_items;
}

/* Prompt padding, after all real work, as the budget allows: a member whose prompt is
 * through by the end of this step computes padding rows after it. A member that cannot
 * get a block for them gives its padding up: padding never makes a real request wait.
 * Counted at planning: a failed step fails the batch anyway. */
static uint32_t plan_prompt_padding(ember_static *st, ember_sched *s, ember_sched_item *items, uint32_t n_items,
                                    uint32_t *budget)
{
    uint32_t n_run;
    request **run = ember_sched_running(s, &n_run);
    for (uint32_t i = 0; st->o.pad_prompts && i < n_run && *budget; i++) {
        request *r = run[i];
        uint32_t left = pad_left(st, r);
        const ember_sched_item *it = item_of(items, n_items, r);
        if (!left || r->n_computed + (it ? it->n : 0) < r->n_prefill) continue;
        uint32_t start = r->n_prefill + st->pad_done[r->slot], n = left < *budget ? left : *budget;
        uint32_t end = ember_sched_extend(s, r, start + n), room = end > start ? end - start : 0;
        if (n > room) n = room;
        st->pad_done[r->slot] += n ? n : left;
        if (!n) continue;
        items[n_items++] = filler(r->slot, start, r->tokens[r->n_prefill - 1], r->blocks, r->n_blocks, n, NULL);
        *budget -= n;
    }
    return n_items;
}

/* Padding rows last, so that real work has first pick of the blocks: each computes its
 * next throw-away token (fed back from its argmax), or is let go of when it reached the
 * context's end or no block is left for it (padding never preempts). */
static uint32_t plan_padding(ember_static *st, ember_sched *s, ember_sched_item *items, uint32_t n_items)
{
    for (int i = next_row(st, 0); i >= 0; i = next_row(st, st->rows[i].admitted)) {
        pad_row *p = &st->rows[i];
        if (!row_room(st, p, p->n_computed)) {
            retire(st, s, (uint32_t)i);
            continue;
        }
        items[n_items++] = filler((uint32_t)i, p->n_computed, p->token, p->blocks, p->n_blocks, 1, &p->token);
        p->n_computed++;
    }
    return n_items;
}

static uint32_t plan(void *ctx, ember_sched *s, ember_sched_item *items, request **stuck, uint32_t *n_stuck)
{
    ember_static *st = ctx;
    uint32_t budget = ember_sched_budget(s, st->n_rows); /* every padding row gets its token */
    bool hold = prefilling(st, s);
    uint32_t n_items = ember_sched_plan_running(s, items, 0, &budget, stuck, n_stuck, hold);
    n_items = admit(st, s, items, n_items, &budget);
    n_items = plan_prompt_padding(st, s, items, n_items, &budget);
    /* Padding given up for want of blocks can end the prefill with nothing planned: the
     * batch decodes at once rather than the step coming back empty. */
    if (hold && !n_items && !prefilling(st, s))
        n_items = ember_sched_plan_running(s, items, 0, &budget, stuck, n_stuck, false);
    return plan_padding(st, s, items, n_items);
}

/* ---- lifetime ---------------------------------------------------------------------- */

ember_status ember_static_create(const ember_static_opts *o, ember_kv_cache *kv, ember_static **out, ember_err *err)
{
    *out = NULL;
    ember_static *st = ember_calloc(1, sizeof *st);
    if (st) {
        st->pad_done = ember_calloc(o->max_seqs, sizeof *st->pad_done);
        st->rows = ember_calloc(o->max_seqs, sizeof *st->rows);
        st->blocks = ember_calloc((size_t)o->max_seqs * o->max_blocks_per_seq, sizeof *st->blocks);
    }
    if (!st || !st->pad_done || !st->rows || !st->blocks) {
        ember_static_free(st);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    st->o = *o;
    st->kv = kv;
    for (uint32_t i = 0; i < o->max_seqs; i++) st->rows[i].blocks = st->blocks + (size_t)i * o->max_blocks_per_seq;
    st->hook = (ember_sched_hook){st, plan, keep, left, reclaim, count_fill};
    *out = st;
    return EMBER_OK;
}

void ember_static_free(ember_static *st)
{
    if (!st) return;
    for (uint32_t i = 0; st->rows && i < st->o.max_seqs; i++)
        for (uint32_t j = 0; st->rows[i].live && j < st->rows[i].n_blocks; j++)
            ember_kv_release(st->kv, st->rows[i].blocks[j]);
    ember_free(st->pad_done);
    ember_free(st->rows);
    ember_free(st->blocks);
    ember_free(st);
}

const ember_sched_hook *ember_static_hook(ember_static *st) { return &st->hook; }
