/* engine_finish.c — how an engine's requests end (engine_finish.h). */
#include <math.h>

#include "engine_finish.h"
#include "kv_layout.h"

/* Ends r: out of the scheduler (its blocks released at once, or kept by static batching
 * as a padding row), reported and freed. */
void ember_eng_finish(ember_engine *e, request *r, ember_finish why)
{
    ember_sched_remove(e->sched, r);
    r->m.n_prompt = r->n_prompt;
    r->m.e2e_ms = ember_now_ms() - r->t_submit;
    if (r->m.n_gen > 1) r->m.tpot_ms = (r->t_last_token - r->t_first_token) / (r->m.n_gen - 1);
    /* A failed step's message; step_err is written only by the stepping thread, which is
     * running this: it stays put through the callback. */
    if (why != EMBER_FINISH_ERROR) r->m.error = NULL;
    else if (!r->m.error) r->m.error = e->step_err.msg;
    ember_request_id id = r->id;
    if (r->on_done) r->on_done(r->user, id, why, &r->m);
    ember_request_free(r);
    /* Before it stops counting as pending: whoever ember_engine_wait_idle wakes must not
     * read stats that still show it running and its blocks in use. */
    ember_eng_publish_stats(e);
    ember_inbox_done(e->inbox, id);
}

/* The snapshot other threads read: taken by the stepping thread after every change. */
void ember_eng_publish_stats(ember_engine *e)
{
    const ember_sched_stats *ss = ember_sched_get_stats(e->sched);
    const ember_hparams *hp = &e->model->llama.hp;
    uint32_t n_run, n_wait = 0;
    ember_sched_running(e->sched, &n_run);
    for (request *r = ember_sched_waiting(e->sched); r; r = r->next) n_wait++;
    ember_engine_stats st = {
        .kv_block_size = e->o.kv_block_size, .kv_blocks_total = e->kv_now,
        .kv_blocks_used = ember_kv_n_used(e->kv), .kv_peak_blocks_used = ss->peak_blocks,
        .kv_peak_tokens = (uint64_t)llround(ss->peak_fill * ss->peak_blocks * e->o.kv_block_size),
        .prefix_hit_tokens = ss->prefix_hit_tokens, .preemptions = ss->preemptions,
        .steps = e->steps, .tokens_computed = e->tokens_computed, .padding_tokens = e->filler_tokens,
        .cow_copies = ss->cow_copies,
        .sampled_from_candidates = e->sampled_cands, .sampled_from_rows = e->sampled_rows,
        .kv_states_saved = e->states_saved, .kv_states_restored = e->states_restored,
        .kv_state_bytes_saved = e->state_bytes_saved, .kv_state_bytes_restored = e->state_bytes_restored,
        .kv_state_positions_restored = e->state_positions, .kv_state_transfer_s = e->state_s,
        .kv_type = e->o.kv_type,
        .kv_bytes_per_token = ember_kv_token_bytes(hp->n_layers, hp->n_kv_heads, hp->head_dim, e->o.kv_type),
        .requests_running = n_run, .requests_waiting = n_wait, .kv_blocks_max = e->o.kv_blocks,
        .device_lost = e->lost, .kv_window = e->window, .kv_local_slots = e->n_local,
        .kv_local_slots_used = ember_kv_n_local_used(e->kv), .kv_local_peak_used = e->local_peak};
    ember_inbox_publish(e->inbox, &st);
}

request *ember_eng_first_running(ember_engine *e)
{
    uint32_t n;
    request **run = ember_sched_running(e->sched, &n);
    return n ? run[0] : NULL;
}
