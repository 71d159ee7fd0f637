/* scheduler.c — see scheduler.h. */
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

struct ember_sched {
    ember_sched_opts o;
    ember_kv_cache *kv;
    request *head, *tail;        /* waiting, in order */
    request **running;           /* n_running of max_seqs, in admission order */
    uint32_t n_running;
    bool *slot_used;
    uint64_t admissions;
    bool batch_open;             /* static batching: the current batch still forming */
    uint32_t reserve;            /* budget kept for speculative drafts this step */
    ember_sched_stats stats;
};

ember_status ember_sched_create(const ember_sched_opts *o, ember_kv_cache *kv, ember_sched **out,
                                ember_err *err)
{
    *out = NULL;
    if (!o->max_seqs || o->max_batch_tokens < o->max_seqs || !o->max_blocks_per_seq)
        return ember_fail(err, EMBER_ERR_INVALID_ARG,
                          "max_batch_tokens (%u) must be at least max_seqs (%u), both non-zero",
                          o->max_batch_tokens, o->max_seqs);
    ember_sched *s = calloc(1, sizeof *s);
    if (s) {
        s->running = calloc(o->max_seqs, sizeof *s->running);
        s->slot_used = calloc(o->max_seqs, sizeof *s->slot_used);
    }
    if (!s || !s->running || !s->slot_used) {
        ember_sched_free(s);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    s->o = *o;
    s->kv = kv;
    *out = s;
    return EMBER_OK;
}

void ember_sched_free(ember_sched *s)
{
    if (!s) return;
    free(s->running);
    free(s->slot_used);
    free(s);
}

/* ---- queue and running set ----------------------------------------------------- */

void ember_sched_enqueue(ember_sched *s, request *r)
{
    r->state = REQ_WAITING;
    r->next = NULL;
    if (s->tail) s->tail->next = r;
    else s->head = r;
    s->tail = r;
}

static void push_front(ember_sched *s, request *r)
{
    r->state = REQ_WAITING;
    r->next = s->head;
    s->head = r;
    if (!s->tail) s->tail = r;
}

static request *pop_front(ember_sched *s)
{
    request *r = s->head;
    s->head = r->next;
    if (!s->head) s->tail = NULL;
    r->next = NULL;
    return r;
}

static void release_blocks(ember_sched *s, request *r)
{
    for (uint32_t i = 0; i < r->n_blocks; i++) ember_kv_release(s->kv, r->blocks[i]);
    r->n_blocks = r->n_published = 0;
}

static void unrun(ember_sched *s, request *r)
{
    for (uint32_t i = 0; i < s->n_running; i++) {
        if (s->running[i] != r) continue;
        memmove(&s->running[i], &s->running[i + 1], (s->n_running - i - 1) * sizeof *s->running);
        s->n_running--;
        s->slot_used[r->slot] = false;
        return;
    }
}

void ember_sched_remove(ember_sched *s, request *r)
{
    if (r->state == REQ_RUNNING) {
        unrun(s, r);
    } else {
        request **p = &s->head, *prev = NULL;
        while (*p && *p != r) prev = *p, p = &(*p)->next;
        if (*p) {
            *p = r->next;
            if (s->tail == r) s->tail = prev;
        }
    }
    release_blocks(s, r);
}

static void preempt(ember_sched *s, request *r)
{
    unrun(s, r);
    release_blocks(s, r);
    r->n_computed = 0;
    r->draft_computed = 0;
    r->m.preemptions++;
    s->stats.preemptions++;
    push_front(s, r);
}

/* ---- blocks ------------------------------------------------------------------------ */

/* Gives r blocks covering positions [0, end); false when the pool ran out (r keeps what
 * it got). */
static bool grow_to(ember_sched *s, request *r, uint32_t end)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    uint32_t need = (end + bs - 1) / bs;
    if (need > s->o.max_blocks_per_seq) need = s->o.max_blocks_per_seq;
    while (r->n_blocks < need) {
        uint32_t b = ember_kv_alloc(s->kv);
        if (b == EMBER_NO_BLOCK) return false;
        r->blocks[r->n_blocks++] = b;
    }
    return true;
}

/* Takes the cached blocks of r's prefix, leaving at least its last token to compute (a
 * shared block is never written, and the last token's logits are needed). */
static void match_prefix(ember_sched *s, request *r)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    uint64_t parent = r->hash_seed;
    while ((r->n_blocks + 1) * bs <= r->n_tokens - 1) {
        const uint32_t *t = r->tokens + (size_t)r->n_blocks * bs;
        uint32_t b = ember_kv_lookup(s->kv, parent, t);
        if (b == EMBER_NO_BLOCK) break;
        parent = ember_kv_hash(parent, t, bs);
        r->hashes[r->n_blocks] = parent;
        r->blocks[r->n_blocks++] = b;
    }
    r->n_published = r->n_blocks;
    r->n_computed = r->draft_computed = r->n_blocks * bs;
}

void ember_sched_advance(ember_sched *s, request *r, uint32_t n)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    r->n_computed += n;
    if (!s->o.prefix_cache) return;
    while ((r->n_published + 1) * bs <= r->n_computed && r->n_published < r->n_blocks) {
        uint32_t j = r->n_published;
        uint64_t parent = j ? r->hashes[j - 1] : r->hash_seed;
        const uint32_t *t = r->tokens + (size_t)j * bs;
        ember_kv_publish(s->kv, r->blocks[j], parent, t);
        r->hashes[j] = ember_kv_hash(parent, t, bs);
        r->n_published++;
    }
}

/* ---- planning --------------------------------------------------------------------- */

static request *newest_running(ember_sched *s)
{
    return s->n_running ? s->running[s->n_running - 1] : NULL;
}

/* A decoding request needs one block more: preempt the newest others until it fits.
 * Returns false if r itself had to go (preempted, or stuck when it is alone). */
static bool make_room(ember_sched *s, request *r, request **stuck, uint32_t *n_stuck)
{
    while (!grow_to(s, r, r->n_computed + 1)) {
        request *victim = newest_running(s);
        if (victim == r && s->n_running == 1) {
            stuck[(*n_stuck)++] = r;
            return false;
        }
        preempt(s, victim);
        if (victim == r) return false;
    }
    return true;
}

static uint32_t plan_running(ember_sched *s, ember_sched_item *items, uint32_t *budget, request **stuck,
                             uint32_t *n_stuck)
{
    uint32_t n_items = 0;
    /* Decodes first, oldest first: a decoder never waits behind a prompt. Victims of
     * preemption are newer than r, so none of them has been planned yet. */
    for (uint32_t i = 0; i < s->n_running;) {
        request *r = s->running[i];
        if (r->n_tokens - r->n_computed != 1) {
            i++;
        } else if (make_room(s, r, stuck, n_stuck)) {
            items[n_items++] = (ember_sched_item){r, 1, true};
            (*budget)--;
            i++;
        } else if (r->state == REQ_RUNNING) {
            i++; /* stuck: the caller finishes it */
        }
    }
    /* Then prompt chunks of running sequences, oldest first, as the budget allows. */
    for (uint32_t i = 0; i < s->n_running && *budget; i++) {
        request *r = s->running[i];
        uint32_t left = r->n_tokens - r->n_computed;
        if (left == 1) continue; /* decoding: planned above */
        uint32_t n = left < *budget ? left : *budget;
        grow_to(s, r, r->n_computed + n);
        uint32_t room = r->n_blocks * ember_kv_block_size(s->kv) - r->n_computed;
        if (n > room) n = room;
        if (!n) continue;
        items[n_items++] = (ember_sched_item){r, n, r->n_computed + n == r->n_tokens};
        *budget -= n;
    }
    return n_items;
}

static uint32_t free_slot(ember_sched *s)
{
    for (uint32_t i = 0; i < s->o.max_seqs; i++)
        if (!s->slot_used[i]) return i;
    return UINT32_MAX;
}

/* Admits the queue's head if it can make progress now; false to stop admitting. */
static bool admit_one(ember_sched *s, ember_sched_item *items, uint32_t *n_items, uint32_t *budget)
{
    request *r = s->head;
    uint32_t bs = ember_kv_block_size(s->kv);
    if (s->o.prefix_cache) match_prefix(s, r);
    uint32_t left = r->n_tokens - r->n_computed;
    uint32_t n = left < *budget ? left : *budget;
    uint32_t want = s->o.contiguous_kv ? s->o.max_blocks_per_seq * bs : r->n_computed + n;
    if (!grow_to(s, r, want) && (s->o.contiguous_kv || r->n_blocks * bs <= r->n_computed)) {
        release_blocks(s, r);
        r->n_computed = 0;
        return false;
    }
    uint32_t room = r->n_blocks * bs - r->n_computed;
    if (n > room) n = room;
    pop_front(s);
    s->stats.prefix_hit_tokens += r->n_computed;
    if (r->m.preemptions == 0) r->m.n_cached = r->n_computed;
    r->state = REQ_RUNNING;
    r->slot = free_slot(s);
    s->slot_used[r->slot] = true;
    r->admitted = ++s->admissions;
    s->running[s->n_running++] = r;
    items[(*n_items)++] = (ember_sched_item){r, n, r->n_computed + n == r->n_tokens};
    *budget -= n;
    return true;
}

uint32_t ember_sched_plan(ember_sched *s, ember_sched_item *items, request **stuck, uint32_t *n_stuck)
{
    uint32_t budget = s->o.max_batch_tokens;
    *n_stuck = 0;
    budget = budget > s->reserve ? budget - s->reserve : 0;
    if (budget < s->n_running) budget = s->n_running; /* every decoder gets its token */
    uint32_t n_items = plan_running(s, items, &budget, stuck, n_stuck);
    /* Static batching admits only while a batch forms: from the moment nothing runs
     * until the batch is full or the queue is empty. */
    if (s->o.static_batching && s->n_running == 0) s->batch_open = true;
    bool may_admit = !s->o.static_batching || s->batch_open;
    while (may_admit && s->head && budget && s->n_running < s->o.max_seqs)
        if (!admit_one(s, items, &n_items, &budget)) break;
    if (!s->head || s->n_running == s->o.max_seqs) s->batch_open = false;
    return n_items;
}

void ember_sched_end_step(ember_sched *s)
{
    uint32_t used = ember_kv_n_used(s->kv), bs = ember_kv_block_size(s->kv);
    if (used <= s->stats.peak_blocks) return;
    /* Fill of the blocks in use; a block shared by k sequences counts 1/k from each. */
    double filled = 0, slots = 0;
    for (uint32_t i = 0; i < s->n_running; i++) {
        const request *r = s->running[i];
        for (uint32_t j = 0; j < r->n_blocks; j++) {
            double w = 1.0 / ember_kv_refcount(s->kv, r->blocks[j]);
            int64_t fill = (int64_t)r->n_computed - (int64_t)j * bs;
            filled += w * (double)(fill < 0 ? 0 : fill > bs ? bs : fill);
            slots += w * bs;
        }
    }
    s->stats.peak_blocks = used;
    s->stats.peak_fill = slots > 0 ? filled / slots : 1.0;
}

request **ember_sched_running(ember_sched *s, uint32_t *n)
{
    *n = s->n_running;
    return s->running;
}

request *ember_sched_waiting(ember_sched *s) { return s->head; }

const ember_sched_stats *ember_sched_get_stats(const ember_sched *s) { return &s->stats; }

void ember_sched_set_reserve(ember_sched *s, uint32_t tokens) { s->reserve = tokens; }

uint32_t ember_sched_extend(ember_sched *s, request *r, uint32_t end)
{
    grow_to(s, r, end);
    uint32_t have = r->n_blocks * ember_kv_block_size(s->kv);
    return have < end ? have : end;
}

void ember_sched_trim(ember_sched *s, request *r)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    uint32_t keep = r->n_computed / bs + 1; /* up to the block of the next position */
    if (keep < r->n_published) keep = r->n_published;
    while (r->n_blocks > keep) ember_kv_release(s->kv, r->blocks[--r->n_blocks]);
}
