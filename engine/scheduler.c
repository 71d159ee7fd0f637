/* scheduler.c — see scheduler.h. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "scheduler.h"

static void release_copied(struct ember_sched *s);

struct ember_sched {
    ember_sched_opts o;
    ember_kv_cache *kv;
    request *head, *tail;        /* waiting, in order */
    request **running;           /* n_running of max_seqs, in admission order */
    uint32_t n_running;
    bool *slot_used;             /* by a running request or by the hook */
    uint32_t n_slots_used;
    uint64_t admissions;
    uint32_t reserve;            /* budget kept for speculative drafts this step */
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
    ember_sched *s = ember_calloc(1, sizeof *s);
    if (s) {
        s->running = ember_calloc(o->max_seqs, sizeof *s->running);
        s->slot_used = ember_calloc(o->max_seqs, sizeof *s->slot_used);
        s->copy_src = ember_calloc(2 * o->max_seqs, sizeof *s->copy_src);
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
    ember_free(s->running);
    ember_free(s->slot_used);
    ember_free(s->copy_src);
    ember_free(s);
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

static void unlink_waiting(ember_sched *s, request *r)
{
    request **p = &s->head, *prev = NULL;
    while (*p && *p != r) prev = *p, p = &(*p)->next;
    if (!*p) return;
    *p = r->next;
    if (s->tail == r) s->tail = prev;
}

/* Releases blocks [from, n_blocks) of r. */
static void release_from(ember_sched *s, request *r, uint32_t from)
{
    for (uint32_t i = from; i < r->n_blocks; i++) {
        if (i < r->n_local_dropped) ember_kv_release_dropped(s->kv, r->blocks[i]);
        else ember_kv_release(s->kv, r->blocks[i]);
    }
    r->n_blocks = from;
    if (r->n_published > from) r->n_published = from;
    if (r->n_local_dropped > from) r->n_local_dropped = from;
}

static void release_blocks(ember_sched *s, request *r) { release_from(s, r, 0); }

static uint32_t take_slot(ember_sched *s)
{
    for (uint32_t i = 0; i < s->o.max_seqs; i++)
        if (!s->slot_used[i]) {
            s->slot_used[i] = true;
            s->n_slots_used++;
            return i;
        }
    return UINT32_MAX;
}

void ember_sched_release_slot(ember_sched *s, uint32_t slot)
{
    if (!s->slot_used[slot]) return;
    s->slot_used[slot] = false;
    s->n_slots_used--;
}

uint32_t ember_sched_free_slots(const ember_sched *s) { return s->o.max_seqs - s->n_slots_used; }

/* Takes r out of the running set; its slot too unless keep_slot (the hook took it). */
static void unrun(ember_sched *s, request *r, bool keep_slot)
{
    for (uint32_t i = 0; i < s->n_running; i++) {
        if (s->running[i] != r) continue;
        memmove(&s->running[i], &s->running[i + 1], (s->n_running - i - 1) * sizeof *s->running);
        s->n_running--;
        if (!keep_slot) ember_sched_release_slot(s, r->slot);
        return;
    }
}

static void left(ember_sched *s)
{
    if (s->o.hook) s->o.hook->left(s->o.hook->ctx, s);
}

/* Publishes the partly filled block r ends in, so that a request continuing r's tokens
 * (the next turn of a chat, the same prompt again) finds all of them. Draft-model
 * requests would need the draft's K/V complete too: they do not publish. */
static void publish_tail(ember_sched *s, request *r)
{
    uint32_t bs = ember_kv_block_size(s->kv), j = r->n_computed / bs, fill = r->n_computed % bs;
    if (!s->o.prefix_cache || r->spec_draft || !fill || j >= r->n_blocks || j != r->n_published) return;
    ember_kv_publish_n(s->kv, r->blocks[j], j ? r->hashes[j - 1] : r->hash_seed, r->tokens + (size_t)j * bs, fill);
}

void ember_sched_remove(ember_sched *s, request *r)
{
    if (r->state == REQ_RUNNING) {
        const ember_sched_hook *h = s->o.hook;
        if (h && h->keep(h->ctx, s, r)) {
            unrun(s, r, true);
            r->n_blocks = r->n_published = r->n_local_dropped = 0; /* the hook's now */
            left(s);
            return;
        }
        publish_tail(s, r);
        unrun(s, r, false);
    } else {
        unlink_waiting(s, r);
    }
    release_blocks(s, r);
    left(s);
}

static void preempt(ember_sched *s, request *r)
{
    unrun(s, r, false);
    release_blocks(s, r);
    r->n_computed = 0;
    r->draft_computed = 0;
    r->m.preemptions++;
    s->stats.preemptions++;
    push_front(s, r);
    left(s);
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

/* grow_to, and when the pool runs dry the hook gives its blocks up first, so that what
 * it holds never makes a request wait or be preempted. */
static bool grow(ember_sched *s, request *r, uint32_t end)
{
    const ember_sched_hook *h = s->o.hook;
    while (!grow_to(s, r, end))
        if (!h || !h->reclaim(h->ctx, s)) return false;
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

/* ---- sliding windows (kv_cache.h's local slots) --------------------------------------- */

/* The first block the window of r's next query (at position n_computed) reaches. */
static uint32_t window_block(const ember_sched *s, const request *r)
{
    uint32_t w = s->o.window, q = r->n_computed;
    return q + 1 > w ? (q + 1 - w) / ember_kv_block_size(s->kv) : 0;
}

/* r drops the local part of every block behind its window: a sequence's local layers
 * hold at most a window of positions (plus what a step writes). */
static void trim_window(ember_sched *s, request *r)
{
    if (!s->o.window) return;
    uint32_t lo = window_block(s, r);
    if (lo > r->n_blocks) lo = r->n_blocks;
    for (; r->n_local_dropped < lo; r->n_local_dropped++) ember_kv_drop_local(s->kv, r->blocks[r->n_local_dropped]);
}

/* A cached prefix is usable only as far as the blocks of its last window still have their
 * local slots: cut back to before the last one in the window that has none, until none
 * is missing. */
static void fit_window(ember_sched *s, request *r)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    for (bool cut = s->o.window != 0; cut;) {
        cut = false;
        for (uint32_t j = r->n_blocks; j-- > window_block(s, r) && !cut;)
            if (ember_kv_local(s->kv, r->blocks[j]) == EMBER_NO_BLOCK) {
                release_from(s, r, j);
                r->n_computed = r->draft_computed = j * bs;
                cut = true;
            }
    }
    trim_window(s, r);
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
    fit_window(s, r);
}

/* A sample of a group whose prompt another sample is computing: the one at the queue's
 * head waits for it (and the queue with it, for the few steps of one prefill), so that
 * the group's prompt is computed once. */
static bool group_waits(const ember_sched *s, const request *r)
{
    for (uint32_t i = 0; r->group && i < s->n_running; i++) {
        const request *q = s->running[i];
        if (q->group == r->group && q->n_computed + 1 < q->n_prefill) return true;
    }
    return false;
}

/* A sample of a group has computed its prompt but for the last token: its blocks are
 * published for the others up to there; each of them computes that last token itself
 * (its logits are its own first draw). Full blocks are published already; this is the
 * part of the last one, the entry match_partial looks for (published once: the call is
 * a no-op for a published block). The owner goes on writing into that block past what
 * was published: the others read only the published slots and copy the block before
 * they write (own_block). */
static void publish_for_group(ember_sched *s, request *r)
{
    uint32_t bs = ember_kv_block_size(s->kv), m = r->n_prefill - 1, j = m / bs, fill = m % bs;
    if (!r->group || r->spec_draft || r->n_computed < m || !fill || j != r->n_published) return;
    ember_kv_publish_n(s->kv, r->blocks[j], j ? r->hashes[j - 1] : r->hash_seed, r->tokens + (size_t)j * bs, fill);
}

void ember_sched_advance(ember_sched *s, request *r, uint32_t n)
{
    uint32_t bs = ember_kv_block_size(s->kv);
    r->n_computed += n;
    trim_window(s, r);
    if (!s->o.prefix_cache) return;
    while ((r->n_published + 1) * bs <= r->n_computed && r->n_published < r->n_blocks) {
        uint32_t j = r->n_published;
        uint64_t parent = j ? r->hashes[j - 1] : r->hash_seed;
        const uint32_t *t = r->tokens + (size_t)j * bs;
        ember_kv_publish(s->kv, r->blocks[j], parent, t);
        r->hashes[j] = ember_kv_hash(parent, t, bs);
        r->n_published++;
    }
    publish_for_group(s, r);
}

/* ---- copy on write ------------------------------------------------------------------- */

/* Before r writes position pos: when the block holding it is shared (taken from the
 * prefix cache), r gets a private copy. The step copies the K/V over before it runs;
 * the old block stays referenced until then, so it cannot be handed out and overwritten
 * first. False when no block is left for the copy. */
static bool own_block(ember_sched *s, request *r, uint32_t pos)
{
    uint32_t j = pos / ember_kv_block_size(s->kv);
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

/* ---- planning --------------------------------------------------------------------- */

static ember_sched_item item(request *r, uint32_t n)
{
    return (ember_sched_item){.r = r, .n = n, .logits = r->n_computed + n == r->n_tokens};
}

/* The first running request admitted after `after` (running is in admission order):
 * the planning loops walk the running set this way because preempting a request shifts
 * the array under them. */
static request *next_running(ember_sched *s, uint64_t after)
{
    for (uint32_t i = 0; i < s->n_running; i++)
        if (s->running[i]->admitted > after) return s->running[i];
    return NULL;
}

/* r needs a block for position n_computed: preempt the newest others until it has one.
 * Returns false if r itself had to go (preempted, or stuck when it is alone). */
static bool make_room(ember_sched *s, request *r, request **stuck, uint32_t *n_stuck)
{
    while (!grow(s, r, r->n_computed + 1)) {
        request *victim = s->running[s->n_running - 1];
        if (victim == r && s->n_running == 1) {
            stuck[(*n_stuck)++] = r;
            return false;
        }
        preempt(s, victim);
        if (victim == r) return false;
    }
    return true;
}

uint32_t ember_sched_budget(const ember_sched *s, uint32_t keep)
{
    uint32_t kept = s->reserve + keep, budget = s->o.max_batch_tokens > kept ? s->o.max_batch_tokens - kept : 0;
    return budget > s->n_running ? budget : s->n_running; /* every decoder gets its token */
}

uint32_t ember_sched_plan_running(ember_sched *s, ember_sched_item *items, uint32_t n_items, uint32_t *budget,
                                  request **stuck, uint32_t *n_stuck, bool prefill_only)
{
    /* Decoders first, oldest first. Victims of preemption are newer than r, so none of
     * them has been planned yet. A request that could not get its block was preempted or
     * is stuck (the caller finishes it). With prefill_only, a 1-token rest of a prompt is
     * planned here and longer chunks below. */
    for (request *r = next_running(s, 0); r; r = next_running(s, r->admitted)) {
        bool decodes = r->n_tokens - r->n_computed == 1 && !(prefill_only && r->n_computed >= r->n_prefill);
        if (!decodes || !make_room(s, r, stuck, n_stuck)) continue;
        items[n_items++] = item(r, 1);
        (*budget)--;
    }
    /* Then prompt chunks, oldest first, as the budget allows: whatever blocks the pool
     * has (a decoder will free more), or with prefill_only what preemption makes. */
    uint32_t bs = ember_kv_block_size(s->kv);
    for (request *r = next_running(s, 0); r && *budget; r = next_running(s, r->admitted)) {
        uint32_t left = r->n_tokens - r->n_computed;
        if (left == 1) continue; /* a decoder: planned above */
        uint32_t n = chunk_rows(s, r->n_computed, left, *budget);
        grow(s, r, r->n_computed + n);
        if (prefill_only && r->n_blocks * bs <= r->n_computed && !make_room(s, r, stuck, n_stuck)) continue;
        uint32_t room = r->n_blocks * bs - r->n_computed;
        if (n > room) n = room;
        if (!n) continue;
        items[n_items++] = item(r, n);
        spend(s, budget, r->n_computed, n);
    }
    return n_items;
}

/* Admits the queue's head if it can make progress now; false to stop admitting. */
static bool admit_one(ember_sched *s, ember_sched_item *items, uint32_t *n_items, uint32_t *budget)
{
    request *r = s->head;
    uint32_t bs = ember_kv_block_size(s->kv);
    if (s->o.prefix_cache && group_waits(s, r)) return false;
    if (s->o.prefix_cache && !r->every_row) match_prefix(s, r);
    /* positions a KV state gives (request.h) are written, not computed: from the first
     * one the cache did not have; the block it falls in is the only one that may be
     * shared (the rest are new) */
    uint32_t cached = r->n_computed, restored = r->n_restore > cached ? r->n_restore - cached : 0;
    r->n_computed += restored;
    uint32_t n = chunk_rows(s, r->n_computed, r->n_tokens - r->n_computed, *budget);
    uint32_t want = s->o.contiguous_kv ? s->o.max_blocks_per_seq * bs : r->n_computed + n;
    bool stuck = !grow(s, r, want) && (s->o.contiguous_kv || r->n_blocks * bs <= r->n_computed);
    if (stuck || !own_block(s, r, cached)) {
        release_blocks(s, r);
        r->n_computed = 0;
        return false;
    }
    uint32_t room = r->n_blocks * bs - r->n_computed;
    if (n > room) n = room;
    pop_front(s);
    r->draft_computed = r->n_computed;
    r->restore_from = cached;
    r->restore_to = cached + restored;
    s->stats.prefix_hit_tokens += cached;
    if (r->m.preemptions == 0) r->m.n_cached = cached;
    r->state = REQ_RUNNING;
    r->slot = take_slot(s);
    r->admitted = ++s->admissions;
    r->n_prefill = r->n_tokens;
    s->running[s->n_running++] = r;
    items[(*n_items)++] = item(r, n);
    spend(s, budget, r->n_computed, n);
    return true;
}

uint32_t ember_sched_admit(ember_sched *s, ember_sched_item *items, uint32_t n_items, uint32_t *budget)
{
    while (s->head && *budget && ember_sched_free_slots(s) && admit_one(s, items, &n_items, budget)) {}
    return n_items;
}

uint32_t ember_sched_plan(ember_sched *s, ember_sched_item *items, request **stuck, uint32_t *n_stuck)
{
    *n_stuck = 0;
    release_copied(s); /* the last step's copies have run */
    const ember_sched_hook *h = s->o.hook;
    if (h) return h->plan(h->ctx, s, items, stuck, n_stuck);
    uint32_t budget = ember_sched_budget(s, 0);
    uint32_t n_items = ember_sched_plan_running(s, items, 0, &budget, stuck, n_stuck, false);
    return ember_sched_admit(s, items, n_items, &budget);
}

void ember_sched_end_step(ember_sched *s)
{
    uint32_t used = ember_kv_n_used(s->kv);
    if (used <= s->stats.peak_blocks) return;
    double filled = 0, slots = 0;
    for (uint32_t i = 0; i < s->n_running; i++) {
        const request *r = s->running[i];
        ember_kv_count_fill(s->kv, r->blocks, r->n_blocks, r->n_computed, &filled, &slots);
    }
    if (s->o.hook) s->o.hook->count_fill(s->o.hook->ctx, s->kv, &filled, &slots);
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

/* ---- a pool that changes size -------------------------------------------------------- */

bool ember_sched_preempt_newest(ember_sched *s)
{
    if (!s->n_running) return false;
    preempt(s, s->running[s->n_running - 1]);
    return true;
}

void ember_sched_rename_blocks(ember_sched *s, const uint32_t *map)
{
    for (uint32_t i = 0; i < s->n_running; i++) {
        request *r = s->running[i];
        for (uint32_t j = 0; j < r->n_blocks; j++) r->blocks[j] = map[r->blocks[j]];
    }
    for (uint32_t i = 0; i < s->n_copies; i++) {
        s->copy_src[i] = map[s->copy_src[i]];
        s->copy_dst[i] = map[s->copy_dst[i]];
    }
}
