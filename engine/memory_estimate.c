/* memory_estimate.c — ember_estimate_memory: a model's and an engine's device memory from
 * the file alone. Each part asks the code that allocates it: the weights gpu_model.c,
 * the step's buffers forward.c, the KV cache kv_layout.c, the defaults engine.c. */
#include <stdio.h>

#include "common/alloc.h"
#include "engine/gpu/forward.h"
#include "engine/gpu/gpu_model.h"
#include "engine/model/model.h"
#include "engine_opts.h"
#include "kv_layout.h"

static void estimate(const ember_gguf *g, const ember_llama *m, uint32_t n_ctx, const ember_engine_opts *opts,
                     ember_memory_estimate *out)
{
    const ember_hparams *hp = &m->hp;
    ember_engine_opts o = opts ? *opts : (ember_engine_opts){0};
    ember_engine_opts_defaults(&o);
    uint32_t bs = o.kv_block_size, ctx = n_ctx ? n_ctx : hp->ctx_len;
    ember_forward_opts fo = {.max_tokens = o.max_batch_tokens, .max_seqs = o.max_seqs, .block_size = bs,
                             .max_blocks_per_seq = (hp->ctx_len + bs - 1) / bs, .kv_type = o.kv_type};
    out->file_bytes = g->size;
    out->weight_bytes = ember_gpu_model_bytes(m);
    out->expert_bytes = ember_gpu_model_expert_bytes(m);
    out->kv_bytes_per_token = ember_kv_token_bytes(hp->n_layers, hp->n_kv_heads, hp->head_dim, o.kv_type);
    out->kv_bytes = (uint64_t)(ctx + bs - 1) / bs * bs * out->kv_bytes_per_token;
    /* A sliding-window model's local layers: the engine's pool of local slots instead of
     * the context (engine_opts.h) */
    uint32_t blocks = (ctx + bs - 1) / bs, local = ember_engine_local_slots(hp, &o, blocks + 1), n_local = 0;
    for (uint32_t l = 0; local && l < hp->n_layers; l++) {
        ember_layer_attn at;
        ember_layer_attn_of(hp, l, &at);
        n_local += at.window != 0;
    }
    if (n_local) {
        uint64_t layer_block = ember_kv_token_bytes(1, hp->n_kv_heads, hp->head_dim, o.kv_type) * bs;
        out->kv_bytes = (uint64_t)blocks * layer_block * (hp->n_layers - n_local) + (uint64_t)local * layer_block * n_local;
    }
    out->activation_bytes = ember_forward_buffer_bytes(hp, &fo, UINT64_MAX);
    out->total_bytes = out->weight_bytes + out->kv_bytes + out->activation_bytes;
    out->n_ctx = ctx;
}

ember_status ember_estimate_memory(const char *gguf_path, uint32_t n_ctx, const ember_engine_opts *opts,
                                   ember_memory_estimate *out, char *msg, size_t msg_cap)
{
    ember_err err = {{0}};
    ember_gguf *g = NULL;
    ember_llama m = {0};
    *out = (ember_memory_estimate){0};
    ember_status s = gguf_path ? ember_gguf_open(gguf_path, &g, &err)
                               : ember_fail(&err, EMBER_ERR_INVALID_ARG, "no model path given");
    if (s == EMBER_OK) s = ember_llama_load(g, &m, &err);
    if (s == EMBER_OK) {
        estimate(g, &m, n_ctx, opts, out);
        ember_llama_free(&m);
    }
    ember_gguf_close(g);
    if (msg && msg_cap) snprintf(msg, msg_cap, "%s", s == EMBER_OK ? "" : err.msg);
    return s;
}
