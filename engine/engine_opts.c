/* engine_opts.c — the engine's option defaults and the sizes derived from them
 * (engine_opts.h). */
#include "engine_opts.h"

void ember_engine_opts_defaults(ember_engine_opts *o)
{
    if (!o->max_seqs) o->max_seqs = 16;
    if (!o->max_batch_tokens) o->max_batch_tokens = 256;
    if (o->max_batch_tokens < o->max_seqs) o->max_batch_tokens = o->max_seqs;
    if (!o->kv_block_size) o->kv_block_size = 16;
}

uint32_t ember_model_window(const ember_hparams *hp)
{
    for (uint32_t l = 0; l < hp->n_layers; l++) {
        ember_layer_attn at;
        ember_layer_attn_of(hp, l, &at);
        if (at.window) return at.window;
    }
    return 0;
}

/* Every running sequence's window (the blocks it reaches, one more where it does not start
 * on a block) and the blocks a step's new tokens (speculative ones included) may start. */
uint32_t ember_engine_local_slots(const ember_hparams *hp, const ember_engine_opts *o, uint32_t kv_blocks)
{
    uint32_t w = ember_model_window(hp), bs = o->kv_block_size;
    if (!w || o->batching != EMBER_BATCHING_CONTINUOUS || o->kv_layout == EMBER_KV_CONTIGUOUS || o->draft) return 0;
    uint64_t tokens = o->max_batch_tokens + 2ull * o->max_seqs;
    uint64_t need = (uint64_t)o->max_seqs * ((w + bs - 1) / bs + 2) + (tokens + bs - 1) / bs;
    return need < kv_blocks ? (uint32_t)need : 0;
}
