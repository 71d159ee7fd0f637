/* model_handle.c — the public ember_model: the GGUF file, its llama description, the
 * tokenizer and (for the Vulkan backend) the device and the weights on it. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "model_handle.h"
#include "engine/model/fingerprint.h"
#include "engine/tokenizer/detok.h"

#include "engine/gpu/kernels_attention.h"
#include "platform/os_file.h"
#include "platform/vk_pipeline_cache.h"

/* A model whose weights alone exceed the budget is refused before anything is uploaded,
 * with the numbers; a mixture's experts all stay on the device (Ember does not offload
 * them to the host), so they are counted and said. */
static ember_status check_budget(const ember_llama *l, uint32_t mib, ember_err *err)
{
    uint64_t need = ember_gpu_model_bytes(l), experts = ember_gpu_model_expert_bytes(l);
    if (!mib || need <= (uint64_t)mib << 20) return EMBER_OK;
    if (!experts)
        return ember_fail(err, EMBER_ERR_DEVICE_MEMORY, "the model's weights need %.1f MiB on the device, over the "
                          "memory budget of %u MiB", need / 1048576.0, mib);
    return ember_fail(err, EMBER_ERR_DEVICE_MEMORY, "the model's weights need %.1f MiB on the device, over the memory "
                      "budget of %u MiB: its %u experts a layer take %.1f MiB of it, and every expert stays on the "
                      "device (Ember does not offload experts to the host)", need / 1048576.0, mib, l->hp.n_expert,
                      experts / 1048576.0);
}

static ember_status load(ember_model *m, const char *path, const ember_model_opts *o)
{
    ember_status s = ember_gguf_open(path, &m->gguf, &m->err);
    if (s == EMBER_OK && o->vocab_only) return ember_tokenizer_load(m->gguf, &m->tok, &m->err);
    if (s == EMBER_OK && m->gguf->n_tensors == 0) /* else "missing key ...": true, but no help */
        return ember_fail(&m->err, EMBER_ERR_FORMAT, "%s is a vocabulary-only file (no weights): it can "
                          "tokenize (loaded with vocab_only) but not run", path);
    if (s == EMBER_OK) s = ember_llama_load(m->gguf, &m->llama, &m->err);
    if (s != EMBER_OK) return s;
    m->llama_loaded = true;
    m->fingerprint = ember_gguf_fingerprint(m->gguf);
    if ((s = ember_tokenizer_load(m->gguf, &m->tok, &m->err)) != EMBER_OK) return s;
    if (m->backend == EMBER_BACKEND_CPU) return EMBER_OK;
    ember_vk_opts vo = {.device_index = o->device_index, .validation = o->enable_validation != 0,
                        .host = o->vulkan, .discrete_memory = o->memory == EMBER_MEMORY_DISCRETE};
    if ((s = ember_vk_create(&vo, &m->vk, &m->err)) != EMBER_OK) return s;
    if (o->faults) ember_vk_inject_faults(m->vk, o->faults); /* before anything is allocated */
    ember_vk_set_memory_budget(m->vk, (uint64_t)o->memory_budget_mib << 20);
    /* Compiled pipelines are kept in the user's cache folder (XDG) for the next start. */
    char dir[1024];
    bool disk = !o->no_pipeline_cache && ember_cache_dir(dir, sizeof dir);
    const ember_kernel_opts *ko = &o->kernels;
    ember_gpu_model_opts go = {.progress = {o->progress, o->progress_user}, .pipeline_cache_dir = disk ? dir : NULL,
                               .file = m->gguf, .linear_lanes = ko->linear_lanes, .int_dot = ko->int_dot,
                               .fp16_dot = ko->fp16_dot,
                               .linear_stage = ko->stage_x, .norm_fusion = ko->norm_fusion,
                               .attn_split = ko->attn_split, .matrix = ko->matrix, .coop = ko->coop_matrix};
    if ((s = check_budget(&m->llama, o->memory_budget_mib, &m->err)) != EMBER_OK) return s;
    s = ember_gpu_model_create_opts(m->vk, &m->llama, &go, &m->gpu, &m->err);
    if (s == EMBER_ERR_DEVICE_MEMORY && o->memory_budget_mib)
        return ember_fail_ctx(&m->err, s, "the model's weights do not fit the memory budget");
    m->weight_bytes = ember_vk_memory_used(m->vk);
    /* Where the device cannot attend over the whole context (lavapipe stops long shader
     * loops), the model's context is what the device can serve: longer requests are then
     * refused as too long instead of coming back wrong. */
    uint32_t max_pos = s == EMBER_OK ? ember_kernels_max_positions(m->gpu->kernels) : UINT32_MAX;
    if (m->llama.hp.ctx_len > max_pos) m->llama.hp.ctx_len = max_pos;
    return s;
}

/* ember_kernel_opts' fields are in range (ember.h). */
static ember_status check_kernel_opts(const ember_kernel_opts *k, ember_err *err)
{
    uint32_t l = k->linear_lanes;
    if (l != 0 && l != 8 && l != 16 && l != 32 && l != 64)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "kernels: linear_lanes is 8, 16, 32 or 64, not %u", l);
    const struct { const char *name; int v; } sw[] = {{"int_dot", k->int_dot}, {"fp16_dot", k->fp16_dot},
                                                       {"stage_x", k->stage_x},
                                                       {"norm_fusion", k->norm_fusion}, {"attn_split", k->attn_split},
                                                       {"matrix", k->matrix}};
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++)
        if (sw[i].v < EMBER_KERNEL_AUTO || sw[i].v > EMBER_KERNEL_OFF)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "kernels: %s is EMBER_KERNEL_AUTO, _ON or _OFF, not %d",
                              sw[i].name, sw[i].v);
    if (k->coop_matrix < EMBER_COOP_AUTO || k->coop_matrix > EMBER_COOP_OFF)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "kernels: coop_matrix is EMBER_COOP_AUTO, _KHR, _NV or _OFF, "
                          "not %d", k->coop_matrix);
    return EMBER_OK;
}

ember_status ember_model_load(const char *gguf_path, const ember_model_opts *opts, ember_model **out)
{
    ember_model_opts o = opts ? *opts : (ember_model_opts){0};
    ember_model *m = ember_calloc(1, sizeof *m);
    *out = m;
    if (!m) return EMBER_ERR_OUT_OF_MEMORY;
    if (!gguf_path) return ember_fail(&m->err, EMBER_ERR_INVALID_ARG, "no model path given");
    if (o.backend != EMBER_BACKEND_VULKAN && o.backend != EMBER_BACKEND_CPU)
        return ember_fail(&m->err, EMBER_ERR_INVALID_ARG, "unknown backend %d", (int)o.backend);
    m->backend = o.backend;
    ember_status s = check_kernel_opts(&o.kernels, &m->err);
    return s == EMBER_OK ? load(m, gguf_path, &o) : s;
}

void ember_model_free(ember_model *m)
{
    if (!m) return;
    ember_gpu_model_free(m->gpu);
    ember_vk_destroy(m->vk);
    ember_tokenizer_free(m->tok);
    if (m->llama_loaded) ember_llama_free(&m->llama);
    ember_gguf_close(m->gguf);
    ember_free(m);
}

const char *ember_model_error(const ember_model *m) { return m ? m->err.msg : "out of memory"; }

void ember_model_get_info(const ember_model *m, ember_model_info *info)
{
    const ember_hparams *hp = &m->llama.hp;
    memset(info, 0, sizeof *info);
    info->arch = m->llama_loaded ? ember_arch_name(m->llama.arch) : "";
    info->n_vocab = m->llama_loaded || !m->tok ? hp->n_vocab : ember_tokenizer_n_vocab(m->tok);
    info->dim = hp->dim;
    info->n_layers = hp->n_layers;
    info->n_heads = hp->n_heads;
    info->n_kv_heads = hp->n_kv_heads;
    info->ffn_dim = hp->ffn_dim;
    info->ctx_len = hp->ctx_len;
    info->device_name = m->vk ? ember_vk_get_caps(m->vk)->device_name : "cpu";
    info->device_index = m->vk ? ember_vk_get_caps(m->vk)->list_index + 1 : 0;
    info->device_bytes = m->vk ? ember_vk_memory_used(m->vk) : 0;
    info->budget_bytes = m->vk ? ember_vk_memory_budget(m->vk) : 0;
    info->pooling = (ember_pooling)ember_llama_pooling(&m->llama);
}

uint32_t ember_model_validation_messages(const ember_model *m, char *first, size_t cap)
{
    if (m->vk) return ember_vk_validation_count(m->vk, first, cap);
    if (first && cap) first[0] = 0;
    return 0;
}

ember_status ember_tokenize(ember_model *m, const char *text, size_t len, int flags, uint32_t *tokens,
                            size_t cap, size_t *n_tokens)
{
    if (!m->tok) return ember_fail(&m->err, EMBER_ERR_INVALID_ARG, "model not loaded");
    unsigned f = (unsigned)flags & EMBER_TOKENIZE_PARSE_SPECIAL;
    if (flags & EMBER_TOKENIZE_ADD_BOS && ember_tokenizer_add_bos(m->tok)) f |= EMBER_TOKENIZE_ADD_BOS;
    return ember_tokenizer_encode_ex(m->tok, text, len, f, tokens, cap, n_tokens, &m->err);
}

size_t ember_token_to_text(const ember_model *m, uint32_t token, char *buf, size_t cap)
{
    return m->tok ? ember_tokenizer_decode(m->tok, token, buf, cap) : 0;
}

size_t ember_token_to_piece(const ember_model *m, uint32_t token, char *buf, size_t cap)
{
    return m->tok ? ember_tokenizer_text(m->tok, token, buf, cap) : 0;
}

size_t ember_detokenize(const ember_model *m, const uint32_t *tokens, size_t n, int special, char *buf,
                        size_t cap)
{
    if (!m->tok) return 0;
    ember_detok d = {.special = special != 0};
    size_t o = 0, max = ember_detok_max(m->tok);
    char *piece = ember_malloc(max);
    if (!piece) return 0;
    for (size_t i = 0; i <= n; i++) { /* i == n: what is held back */
        size_t k = i < n ? ember_detok_push(&d, m->tok, tokens[i], piece, max) : ember_detok_flush(&d, piece, max);
        if (buf && o < cap) memcpy(buf + o, piece, k < cap - o ? k : cap - o);
        o += k;
    }
    ember_free(piece);
    return o;
}

ember_status ember_model_set_memory_budget(ember_model *m, uint32_t mib)
{
    uint64_t bytes = (uint64_t)mib << 20;
    if (!m->vk) return EMBER_OK; /* the CPU backend holds no device memory */
    if (bytes && bytes < m->weight_bytes)
        return ember_fail(&m->err, EMBER_ERR_DEVICE_MEMORY,
                          "a budget of %u MiB is less than the weights' %.1f MiB", mib, m->weight_bytes / 1048576.0);
    ember_vk_set_memory_budget(m->vk, bytes);
    return EMBER_OK;
}

void ember_model_inject_faults(ember_model *m, const ember_faults *f)
{
    if (m && m->vk) ember_vk_inject_faults(m->vk, f);
}
