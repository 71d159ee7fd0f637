/* scheduler.c — see scheduler.h. */
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

static void release_copied(struct ember_sched *s);

struct ember_sched {
    ember_sched_opts o;
    ember_kv_cache *kv;
    request *head, *tail;        /* waiting, in order */
    request **running;           /* n_running of max_seqs, in admission order */
    uint32_t n_running;
    bool *slot_used;
    uint64_t admissions;
    bool batch_open;             /* static batching: the current batch still forming */
    uint32_t batch_prompt;       /* ... padded prompts: the longest prefill of its members */
    uint32_t reserve;            /* budget kept for speculative drafts this step */
    uint32_t n_padding;          /* static batching: running rows that are padding */
    request *retired;            /* padding rows let go of, not yet reaped */
    /* copy on write planned this step: copy_src[i] -> copy_dst[i]; the old blocks'
     * references are dropped at the next plan, after the copies ran */
    uint32_t *copy_src, *copy_dst, n_copies;
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
        s->copy_src = calloc(2 * o->max_seqs, sizeof *s->copy_src);
    }
    if (!s || !s->running || !s->slot_used || !s->copy_src) {
        ember_sched_free(s);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    s->o = *o;
    s->kv = kv;
    s->copy_dst = s->copy_src + o->max_seqs;
    *out = s;
    return EMBER_OK;
}

void ember_sched_free(ember_sched *s)
{
    if (!s) return;
    if (s->kv) release_copied(s);
    free(s->running);
    free(s->slot_used);
    free(s->copy_src);
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

/* Publishes the partly filled block r ends in, so that a request continuing r's tokens
 * (the next turn of a chat, the same prompt again) finds all of them. Padding rows hold
 * tokens nobody recorded, and draft-model requests would need the draft's K/V complete
 * too: neither publishes. */
static void publish_tail(ember_sched *s, request *r)
{
    uint32_t bs = ember_kv_block_size(s->kv), j = r->n_computed / bs, fill = r->n_computed % bs;
    if (!s->o.prefix_cache || r->padding || r->spec_draft || !fill || j >= r->n_blocks || j != r->n_published)
        return;
    ember_kv_publish_n(s->kv, r->blocks[j], j ? r->hashes[j - 1] : r->hash_seed, r->tokens + (size_t)j * bs, fill);
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

/* ---- static batching: padding rows ------------------------------------------------- */

static request *last_padding(ember_sched *s)
{
    for (uint32_t i = s->n_running; i-- > 0;)
        if (s->running[i]->padding) return s->running[i];
    return NULL;
}

/* Lets padding row p go: out of the batch, blocks back to the pool, onto the retired
 * list (the engine frees it after the step, so items planned with it stay valid). */
static void retire(ember_sched *s, request *p)
{
    unrun(s, p);
    release_blocks(s, p);
    p->state = REQ_RETIRED;
    s->n_padding--;
    p->next = s->retired;
    s->retired = p;
}

/* A batch ends when its last real member leaves: its padding rows go with it. */
static void end_batch_if_done(ember_sched *s)
{
    if (!s->n_padding) return;
    for (uint32_t i = 0; i < s->n_running; i++)
        if (!s->running[i]->padding) return;
    while (s->n_padding) retire(s, last_padding(s));
}

bool ember_sched_pad(ember_sched *s, request *r)
{
    if (!s->o.static_batching || r->state != REQ_RUNNING || r->padding) return false;
    if (s->n_running - s->n_padding < 2) return false; /* r is the last member */
    r->padding = true;
    r->pad_token = r->tokens[r->n_tokens - 1];
    r->n_draft = 0;
    s->n_padding++;
    return true;
}

void ember_sched_drop_padding(ember_sched *s, request *r)
{
    if (r->padding && r->state == REQ_RUNNING) retire(s, r);
}

/* ---- static batching: padded prompts ----------------------------------------------- */

/* Prompt padding rows member r has still to compute: every member of a fixed-shape batch
 * prefills as many rows as the batch's longest prompt. */
static uint32_t pad_left(const ember_sched *s, const request *r)
{
    uint32_t done = r->n_prefill + r->n_pad_rows;
    return s->o.pad_prompts && !r->padding && s->batch_prompt > done ? s->batch_prompt - done : 0;
}

/* A fixed-shape batch decodes only after its prefill: while members may still join or
 * one of them has prompt or padding rows left, nobody decodes. */
static bool prefilling(const ember_sched *s)
{
    if (!s->o.pad_prompts || !s->n_running) return false;
    if (s->batch_open) return true;
    for (uint32_t i = 0; i < s->n_running; i++) {
        const request *r = s->running[i];
        if (!r->padding && (r->n_computed < r->n_prefill || pad_left(s, r))) return true;
    }
    return false;
}

void ember_sched_advance_padding(ember_sched *s, request *r, uint32_t n)
{
    (void)s;
    r->n_pad_rows += n;
}

request *ember_sched_reap(ember_sched *s)
{
    request *r = s->retired;
    if (r) {
        s->retired = r->next;
        r->next = NULL;
    }
    return r;
}

void ember_sched_remove(ember_sched *s, request *r)
{
    if (r->state == REQ_RUNNING) {
        publish_tail(s, r);
        unrun(s, r);
    } else if (r->state == REQ_WAITING) {
        request **p = &s->head, *prev = NULL;
        while (*p && *p != r) prev = *p, p = &(*p)->next;
        if (*p) {
            *p = r->next;
            if (s->tail == r) s->tail = prev;
        }
    }
    release_blocks(s, r);
    end_batch_if_done(s);
}

static void preempt(ember_sched *s, request *r)
{
    unrun(s, r);
    release_blocks(s, r);
    r->n_computed = 0;
    r->draft_computed = 0;
    r->n_pad_rows = 0;
    r->m.preemptions++;
    s->stats.preemptions++;
    push_front(s, r);
    end_batch_if_done(s);
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

/* Static batching, padded prompts: members through their prefill give back the blocks
 * past their next position, which only prompt padding rows wrote. True if any did. */
static bool drop_padding_blocks(ember_sched *s)
{
    bool freed = false;
    if (!s->o.pad_prompts) return false;
    for (uint32_t i = 0; i < s->n_running; i++) {
        request *q = s->running[i];
        if (q->padding || !q->n_pad_rows || q->n_computed < q->n_prefill) continue;
        uint32_t n = q->n_blocks;
        ember_sched_trim(s, q);
        freed |= q->n_blocks < n;
    }
    return freed;
}

/* grow_to for a real request: padding rows give their blocks up first, so that padding
 * never makes a real request wait or be preempted. Without padding (continuous batching)
 * it is grow_to. */
static bool grow_real(ember_sched *s, request *r, uint32_t end)
{
    while (!grow_to(s, r, end)) {
        request *p = last_padding(s);
        if (p) retire(s, p);
        else if (!drop_padding_blocks(s)) return false;
    }
    return true;
}

/* After r's full cached blocks: the published block holding the most of r's next
 * tokens, short of its last one — a partly filled block another sequence ended in, or a
 * full block whose last slot r must compute itself (its logits are needed). r shares it
 * up to what it holds and copies it before writing (own_block). */
static void match_partial(ember_sched *s, request *r, uint64_t parent)
{
    uint32_t bs = ember_kv_block_size(s->kv), rest = r->n_tokens - r->n_computed;
    const uint32_t *t = r->tokens + r->n_computed;
    if (r->n_blocks >= s->o.max_blocks_per_seq || rest < 2) return;
    uint32_t b = rest == bs ? ember_kv_lookup(s->kv, parent, t) : EMBER_NO_BLOCK, n = bs - 1;
    for (uint32_t k = rest - 1 < bs - 1 ? rest - 1 : bs - 1; b == EMBER_NO_BLOCK && k > 0; k--)
        b = ember_kv_lookup_n(s->kv, parent, t, n = k);
    if (b == EMBER_NO_BLOCK) return;
    r->blocks[r->n_blocks++] = b;
    r->n_computed = r->draft_computed = r->n_computed + n;
}

/* Takes the cached blocks of r's prefix, leaving at least its last token to compute (the
 * last token's logits are needed). */
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
    match_partial(s, r, parent);
}

void ember_sched_advance(ember_sched *s, request *r, uint32_t n)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    r->n_computed += n;
    /* A padding row's tokens are not recorded, so its blocks are never shared. */
    if (!s->o.prefix_cache || r->padding) return;
    while ((r->n_published + 1) * bs <= r->n_computed && r->n_published < r->n_blocks) {
        uint32_t j = r->n_published;
        uint64_t parent = j ? r->hashes[j - 1] : r->hash_seed;
        const uint32_t *t = r->tokens + (size_t)j * bs;
        ember_kv_publish(s->kv, r->blocks[j], parent, t);
        r->hashes[j] = ember_kv_hash(parent, t, bs);
        r->n_published++;
    }
}

/* ---- copy on write ------------------------------------------------------------------- */

/* Before r writes position n_computed: when the block holding it is shared (taken from
 * the prefix cache), r gets a private copy. The step copies the K/V over before it runs;
 * the old block stays referenced until then, so it cannot be handed out and overwritten
 * first. False when no block is left for the copy. */
static bool own_block(ember_sched *s, request *r)
{
    uint32_t j = r->n_computed / ember_kv_block_size(s->kv);
    if (j >= r->n_blocks || !ember_kv_is_shared(s->kv, r->blocks[j])) return true;
    if (s->n_copies == s->o.max_seqs) return false;
    uint32_t b = ember_kv_alloc(s->kv);
    if (b == EMBER_NO_BLOCK) return false;
    s->copy_src[s->n_copies] = r->blocks[j];
    s->copy_dst[s->n_copies++] = b;
    r->blocks[j] = b;
    s->stats.cow_copies++;
    return true;
}

/* Drops r's old references to the blocks it copied, once the copies have run. */
static void release_copied(ember_sched *s)
{
    for (uint32_t i = 0; i < s->n_copies; i++) ember_kv_release(s->kv, s->copy_src[i]);
    s->n_copies = 0;
}

uint32_t ember_sched_copies(const ember_sched *s, const uint32_t **src, const uint32_t **dst)
{
    *src = s->copy_src;
    *dst = s->copy_dst;
    return s->n_copies;
}

/* ---- planning --------------------------------------------------------------------- */

static request *newest_running(ember_sched *s)
{
    return s->n_running ? s->running[s->n_running - 1] : NULL;
}

/* The first running request admitted after `after` (running is in admission order):
 * the planning loops walk the running set this way because retiring a padding row or
 * preempting a request shifts the array under them. */
static request *next_running(ember_sched *s, uint64_t after)
{
    for (uint32_t i = 0; i < s->n_running; i++)
        if (s->running[i]->admitted > after) return s->running[i];
    return NULL;
}

/* A decoding request needs one block more: preempt the newest others until it fits.
 * Returns false if r itself had to go (preempted, or stuck when it is alone). */
static bool make_room(ember_sched *s, request *r, request **stuck, uint32_t *n_stuck)
{
    while (!grow_real(s, r, r->n_computed + 1)) {
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

/* ---- chunk sizes ----------------------------------------------------------------- */

/* Budget that rows p0 .. p0+n-1 of a prompt take: n, plus with chunk_ctx the attention
 * each row does over the positions before it, sum(p) / chunk_ctx, rounded up. */
static uint64_t chunk_cost(const ember_sched *s, uint32_t p0, uint32_t n)
{
    uint64_t k = s->o.chunk_ctx;
    if (!k) return n;
    uint64_t positions = (uint64_t)n * p0 + (uint64_t)n * (n - 1) / 2;
    return n + (positions + k - 1) / k;
}

/* Rows of a prompt from position p0 (left of them to go) that fit budget: at least one
 * when budget is not zero, so that a deep chunk still moves. */
static uint32_t chunk_rows(const ember_sched *s, uint32_t p0, uint32_t left, uint32_t budget)
{
    uint32_t n = left < budget ? left : budget;
    while (n > 1 && chunk_cost(s, p0, n) > budget) n--;
    return n;
}

/* Takes what rows p0 .. p0+n-1 cost from *budget (all of it when they cost more). */
static void spend(const ember_sched *s, uint32_t *budget, uint32_t p0, uint32_t n)
{
    uint64_t c = chunk_cost(s, p0, n);
    *budget = c >= *budget ? 0 : *budget - (uint32_t)c;
}

static uint32_t plan_running(ember_sched *s, ember_sched_item *items, uint32_t *budget, request **stuck,
                             uint32_t *n_stuck, bool hold)
{
    uint32_t n_items = 0;
    /* Decodes first, oldest first: a decoder never waits behind a prompt. Victims of
     * preemption are newer than r, so none of them has been planned yet. A request that
     * could not get its block was preempted or is stuck (the caller finishes it). While
     * a fixed-shape batch prefills (hold), only prompt rows are planned: a 1-token rest
     * of a prompt here, longer chunks below. */
    for (request *r = next_running(s, 0); r; r = next_running(s, r->admitted)) {
        bool decodes = r->n_tokens - r->n_computed == 1 && !(hold && r->n_computed >= r->n_prefill);
        if (r->padding || !decodes || !make_room(s, r, stuck, n_stuck)) continue;
        items[n_items++] = (ember_sched_item){r, 1, true, 0};
        (*budget)--;
    }
    /* Then prompt chunks of running sequences, oldest first, as the budget allows. */
    for (request *r = next_running(s, 0); r && *budget; r = next_running(s, r->admitted)) {
        uint32_t left = r->n_tokens - r->n_computed;
        if (r->padding || left == 1) continue; /* decoding: planned above */
        uint32_t n = chunk_rows(s, r->n_computed, left, *budget), bs = ember_kv_block_size(s->kv);
        grow_real(s, r, r->n_computed + n);
        /* A fixed-shape batch in its prefill has no decoder that would free a block:
         * the newest members make room (preempted) instead. */
        if (hold && r->n_blocks * bs <= r->n_computed && !make_room(s, r, stuck, n_stuck)) continue;
        uint32_t room = r->n_blocks * bs - r->n_computed;
        if (n > room) n = room;
        if (!n) continue;
        items[n_items++] = (ember_sched_item){r, n, r->n_computed + n == r->n_tokens, 0};
        spend(s, budget, r->n_computed, n);
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
    uint32_t n = chunk_rows(s, r->n_computed, r->n_tokens - r->n_computed, *budget);
    uint32_t want = s->o.contiguous_kv ? s->o.max_blocks_per_seq * bs : r->n_computed + n;
    bool stuck = !grow_real(s, r, want) && (s->o.contiguous_kv || r->n_blocks * bs <= r->n_computed);
    if (stuck || !own_block(s, r)) {
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
    items[(*n_items)++] = (ember_sched_item){r, n, r->n_computed + n == r->n_tokens, 0};
    spend(s, budget, r->n_computed, n);
    r->n_prefill = r->n_tokens;
    r->n_pad_rows = 0;
    if (s->o.static_batching && r->n_tokens > s->batch_prompt) s->batch_prompt = r->n_tokens;
    return true;
}

/* Padding rows last, so that real work has first pick of the blocks: each computes its
 * next throw-away token, or is let go of when it reached the context's end or no block
 * is left for it (padding never preempts). */
static uint32_t plan_padding(ember_sched *s, ember_sched_item *items, uint32_t n_items)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    for (request *r = next_running(s, 0); r && s->n_padding; r = next_running(s, r->admitted)) {
        if (!r->padding) continue;
        bool room = r->n_computed < s->o.ctx_len && grow_to(s, r, r->n_computed + 1) &&
                    r->n_blocks * bs > r->n_computed;
        if (room) items[n_items++] = (ember_sched_item){r, 1, true, 0};
        else retire(s, r);
    }
    return n_items;
}

static ember_sched_item *item_of(ember_sched_item *items, uint32_t n_items, const request *r)
{
    for (uint32_t i = 0; i < n_items; i++)
        if (items[i].r == r) return &items[i];
    return NULL;
}

/* Prompt padding, after all real work, as the budget allows: a member whose prompt is
 * through by the end of this step computes padding rows after its item's tokens (or as
 * an item of its own). A member that cannot get a block for them gives its padding up:
 * padding never makes a real request wait. */
static uint32_t plan_prompt_padding(ember_sched *s, ember_sched_item *items, uint32_t n_items, uint32_t *budget)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    if (!s->o.pad_prompts) return n_items;
    for (request *r = next_running(s, 0); r && *budget; r = next_running(s, r->admitted)) {
        uint32_t left = pad_left(s, r);
        if (!left) continue;
        ember_sched_item *it = item_of(items, n_items, r);
        if (r->n_computed + (it ? it->n : 0) < r->n_prefill) continue;
        uint32_t start = r->n_prefill + r->n_pad_rows, n = left < *budget ? left : *budget;
        grow_to(s, r, start + n);
        uint32_t room = r->n_blocks * bs > start ? r->n_blocks * bs - start : 0;
        if (n > room) n = room;
        if (!n) {
            r->n_pad_rows += left;
            continue;
        }
        if (it) it->n_pad = n;
        else items[n_items++] = (ember_sched_item){r, 0, false, n};
        *budget -= n;
    }
    return n_items;
}

uint32_t ember_sched_plan(ember_sched *s, ember_sched_item *items, request **stuck, uint32_t *n_stuck)
{
    uint32_t budget = s->o.max_batch_tokens;
    *n_stuck = 0;
    release_copied(s); /* the last step's copies have run */
    budget = budget > s->reserve ? budget - s->reserve : 0;
    if (budget < s->n_running) budget = s->n_running; /* every decoder gets its token */
    budget -= s->n_padding; /* ... and every padding row (planned last) its own */
    bool hold = prefilling(s);
    uint32_t n_items = plan_running(s, items, &budget, stuck, n_stuck, hold);
    /* Static batching admits only while a batch forms: from the moment nothing runs
     * until the batch is full, the queue is empty or the KV pool cannot take the next. */
    if (s->o.static_batching && s->n_running == 0) {
        s->batch_open = true;
        s->batch_prompt = 0;
    }
    bool may_admit = !s->o.static_batching || s->batch_open;
    while (may_admit && s->head && budget && s->n_running < s->o.max_seqs) {
        if (admit_one(s, items, &n_items, &budget)) continue;
        if (s->n_running) s->batch_open = false;
        break;
    }
    if (!s->head || s->n_running == s->o.max_seqs) s->batch_open = false;
    n_items = plan_prompt_padding(s, items, n_items, &budget);
    /* Padding given up for want of blocks can end the prefill with nothing planned: the
     * batch decodes at once rather than the step coming back empty. */
    if (hold && !n_items && !prefilling(s)) n_items = plan_running(s, items, &budget, stuck, n_stuck, false);
    return plan_padding(s, items, n_items);
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
