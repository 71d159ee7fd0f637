/* engine_budget.c — an engine's KV pool under the device's memory budget (engine_budget.h). */
#include "engine_budget.h"

/* The static baselines keep their pool: their padding rows hold blocks of their own. */
bool ember_budget_active(const ember_engine *e)
{
    return e->model->vk && !e->fixed && e->o.batching == EMBER_BATCHING_CONTINUOUS &&
           ember_vk_memory_budget(e->model->vk) != 0;
}

/* The pool never shrinks below one sequence of the whole context: a request that was
 * admitted can always finish. */
uint32_t ember_budget_floor(const ember_engine *e)
{
    return e->max_blocks_per_seq < e->o.kv_blocks ? e->max_blocks_per_seq : e->o.kv_blocks;
}

/* Blocks the budget leaves this engine: what remains after everything else on the
 * device, in blocks of what ours cost (target and draft pools). */
static uint32_t budget_blocks(const ember_engine *e)
{
    if (!ember_budget_active(e)) return e->o.kv_blocks;
    ember_vk *vk = e->model->vk;
    uint64_t budget = ember_vk_memory_budget(vk), mine = ember_step_kv_bytes(e->step) + ember_spec_kv_bytes(e->spec);
    uint64_t per_block = mine / e->kv_now, others = ember_vk_memory_used(vk) - mine;
    uint64_t n = budget > others && per_block ? (budget - others) / per_block : 0;
    if (n > e->o.kv_blocks) n = e->o.kv_blocks;
    return n < ember_budget_floor(e) ? ember_budget_floor(e) : (uint32_t)n;
}

/* The KV blocks that move below the new size, copied in both pools. */
static ember_status move_blocks(ember_engine *e, uint32_t old_n)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < old_n; i++)
        if (e->kv_map[i] != EMBER_NO_BLOCK && e->kv_map[i] != i) {
            e->kv_src[n] = i;
            e->kv_dst[n++] = e->kv_map[i];
        }
    /* the blocks' local slots stay where they are */
    ember_status s = n ? ember_step_copy_blocks(e->step, e->kv_src, e->kv_dst, NULL, NULL, n, &e->step_err) : EMBER_OK;
    if (s == EMBER_OK) s = ember_spec_copy_blocks(e->spec, e->kv_src, e->kv_dst, n, &e->step_err);
    return s;
}

/* The pool's blocks whose K/V a resize keeps: all of them once a step has run (a free
 * block may still hold a cached prefix), none before, when there is nothing to copy. */
static uint32_t kv_written(const ember_engine *e) { return e->steps ? e->kv_now : 0; }

/* Grows the pools to n blocks. When the device has no memory for it (the budget is a
 * promise the driver may not keep), the engine goes on with the pool it has: what fits
 * is served, the message is kept as the engine's last error, and growing is tried again
 * only when the budget changes. */
static ember_status grow_pool(ember_engine *e, uint32_t n)
{
    uint64_t budget = ember_vk_memory_budget(e->model->vk);
    if (budget == e->grow_failed_budget) return EMBER_OK;
    uint32_t keep = kv_written(e);
    ember_status s = ember_step_resize_kv(e->step, n, keep, &e->step_err);
    if (s == EMBER_OK) s = ember_spec_resize_kv(e->spec, n, keep, &e->step_err);
    if (s == EMBER_OK) s = ember_kv_resize(e->kv, n, e->kv_map, &e->step_err);
    if (s == EMBER_OK) {
        e->kv_now = n;
        e->grow_failed_budget = 0;
        return EMBER_OK;
    }
    if (s != EMBER_ERR_DEVICE_MEMORY && s != EMBER_ERR_OUT_OF_MEMORY) return s;
    ember_err note = e->step_err;
    /* Back to one size for both pools (the target's may have grown before the draft's
     * failed); shrinking frees more than it takes, and a failure here changes nothing. */
    ember_step_resize_kv(e->step, e->kv_now, keep, &note);
    ember_spec_resize_kv(e->spec, e->kv_now, keep, &note);
    ember_fail_ctx(&e->step_err, s, "the KV pool stays at %u blocks (%u wanted)", e->kv_now, n);
    ember_inbox_store_error(e->inbox, &e->err, &e->step_err);
    e->grow_failed_budget = budget;
    return EMBER_OK;
}

/* Brings the pool to the size the budget allows: growing makes the device pools first;
 * shrinking preempts the newest requests until the blocks in use fit, moves blocks from
 * the end down, then remakes the device pools smaller. */
ember_status ember_budget_apply(ember_engine *e)
{
    uint32_t n = budget_blocks(e), old_n = e->kv_now;
    if (n == old_n) return EMBER_OK;
    ember_status s = EMBER_OK;
    if (n > old_n) return grow_pool(e, n);
    while (ember_kv_n_used(e->kv) > n && ember_sched_preempt_newest(e->sched)) {}
    if (ember_kv_n_used(e->kv) > n) n = ember_kv_n_used(e->kv); /* copies on write still hold some */
    if (n >= old_n) return EMBER_OK;
    s = ember_kv_resize(e->kv, n, e->kv_map, &e->step_err);
    if (s != EMBER_OK) return s;
    e->kv_now = n;
    ember_sched_rename_blocks(e->sched, e->kv_map);
    s = move_blocks(e, old_n);
    if (s == EMBER_OK) s = ember_step_resize_kv(e->step, n, kv_written(e), &e->step_err);
    if (s == EMBER_OK) s = ember_spec_resize_kv(e->spec, n, kv_written(e), &e->step_err);
    return s;
}
