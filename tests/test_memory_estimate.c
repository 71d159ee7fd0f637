/* test_memory_estimate.c — ember_estimate_memory, the device memory of a model and an
 * engine read from the file alone (`ember info -m`), against what loading allocates:
 *  - weights: the spans the upload made (every part's data and Q8_0 scales, the norms,
 *    the bias rows) sum to the estimate, bar each part's rounding to 16 bytes, for single
 *    types, llama.cpp's mixes (Q4_K_M: Q4_K with Q6_K, padded to 224-byte blocks on the
 *    device; Q3_K_L: Q3_K, padded, with Q5_K), Q8_0 (quants and scales apart), a tied head,
 *    qwen2's biases, weights cut into many parts, and mixtures of experts (Q8_0, Q4_K_M,
 *    MXFP4 experts), whose expert stacks are counted apart (expert_bytes);
 *  - KV: bytes per token equal the engine's (ember_engine_stats) for F32 and Q8_0 KV, and
 *    a context is counted in whole blocks;
 *  - what the device holds once the model is loaded and an engine made is the estimate
 *    but for alignment (their pools are reserved at their size);
 *  - a mixture whose weights exceed the memory budget is refused at load with its weights'
 *    and experts' sizes;
 *  - a bad file gives its message. */
#include <stdio.h>
#include <string.h>

#include "ember.h"
#include "engine/gpu/gpu_model.h"
#include "engine/model/model.h"
#include "platform/vk.h"
#include "testutil.h"

typedef struct spans {
    uint64_t bytes, parts;
    uint64_t experts; /* of bytes, the expert stacks' */
} spans;

static void add_weight(spans *s, const ember_gpu_weight *w)
{
    for (uint32_t i = 0; i < w->n_parts; i++) {
        s->bytes += w->parts[i].data.size + w->parts[i].scales.size;
        s->parts++;
    }
}

/* What the upload allocated for g's weights. */
static spans uploaded(const ember_gpu_model *g)
{
    spans s = {g->output_norm.size + g->rope_freqs.size, 0};
    add_weight(&s, &g->tok_embd);
    if (g->output.parts[0].data.buffer != g->tok_embd.parts[0].data.buffer ||
        g->output.parts[0].data.offset != g->tok_embd.parts[0].data.offset)
        add_weight(&s, &g->output);
    for (uint32_t l = 0; l < g->hp.n_layers; l++) {
        const ember_gpu_layer *L = &g->layers[l];
        s.bytes += L->attn_norm.size + L->ffn_norm.size + L->bias_qkv.size + L->qk_norm.size;
        s.bytes += L->attn_post_norm.size + L->ffn_post_norm.size;
        add_weight(&s, &L->qkv), add_weight(&s, &L->wo), add_weight(&s, &L->gate_up), add_weight(&s, &L->down);
        add_weight(&s, &L->router);
        uint64_t before = s.bytes;
        add_weight(&s, &L->gate_up_exps), add_weight(&s, &L->down_exps);
        s.experts += s.bytes - before;
    }
    return s;
}

/* Uploads path's weights (bindings of at most max_part bytes; 0 = the device's) and
 * compares with the estimate; returns false when there is no device. */
static bool check_weights(ember_vk *vk, const char *path, const char *what, uint64_t max_part)
{
    ember_err err = {{0}};
    ember_gguf *g = NULL;
    ember_llama m = {0};
    ember_gpu_model *gm = NULL;
    ember_memory_estimate e;
    char msg[256];
    bool ok = ember_gguf_open(path, &g, &err) == EMBER_OK && ember_llama_load(g, &m, &err) == EMBER_OK &&
              ember_gpu_model_create(vk, &m, max_part, NULL, &gm, &err) == EMBER_OK;
    CHECKF(ok, "%s: %s", what, err.msg);
    CHECKF(ember_estimate_memory(path, 0, NULL, &e, msg, sizeof msg) == EMBER_OK, "%s: %s", what, msg);
    if (ok) {
        spans s = uploaded(gm);
        printf("%-34s weights: estimate %10llu, uploaded %10llu bytes in %3llu parts\n", what,
               (unsigned long long)e.weight_bytes, (unsigned long long)s.bytes, (unsigned long long)s.parts);
        CHECKF(s.bytes >= e.weight_bytes && s.bytes - e.weight_bytes <= 16 * s.parts, "%s: %llu vs %llu", what,
               (unsigned long long)s.bytes, (unsigned long long)e.weight_bytes);
        CHECK(e.weight_bytes == ember_gpu_model_bytes(&m));
        CHECKF(s.experts >= e.expert_bytes && s.experts - e.expert_bytes <= 16 * s.parts &&
                   (m.hp.n_expert != 0) == (e.expert_bytes != 0),
               "%s: experts %llu vs %llu", what, (unsigned long long)s.experts, (unsigned long long)e.expert_bytes);
        CHECK(e.file_bytes == g->size);
    }
    ember_gpu_model_free(gm);
    if (m.layers) ember_llama_free(&m);
    ember_gguf_close(g);
    return ok;
}

static void test_weights(void)
{
    ember_err err = {{0}};
    ember_vk *vk = NULL;
    ember_vk_opts vo = {.validation = tu_validation() != 0};
    if (ember_vk_create(&vo, &vk, &err) != EMBER_OK) {
        printf("SKIP (part): no Vulkan device: %s\n", err.msg);
        return;
    }
    static const struct { const char *args, *what; uint64_t max_part; } cases[] = {
        {"--type f32", "f32", 0},
        {"--type q8_0", "q8_0 (quants and scales)", 0},
        {"--type q4_k_m", "q4_k_m (Q4_K + Q6_K)", 0},
        {"--type q3_k_l --tied", "q3_k_l, tied (Q3_K + Q5_K)", 0},
        {"--type q4_0 --arch qwen2", "q4_0, qwen2 biases", 0},
        {"--type q4_0 --rope-freqs", "q4_0, rope_freqs", 0},
        {"--type q8_0 --arch phi3 --longrope --rope-dim 16", "q8_0, phi3: fused QKV and gate|up, LongRoPE", 0},
        {"--type q4_k_m --arch gemma3 --head-dim 64", "q4_k_m, gemma3: QK-norm, post-norms", 0},
        {"--type q4_0 --arch olmo2", "q4_0, olmo2: no pre-norms, full QK-norm", 0},
        {"--type q6_k", "q6_k in parts of 16 KiB", 16384},
        {"--type bf16 --ffn 320", "bf16, ffn 320", 0},
        {"--type q8_0 --arch qwen3moe --head-dim 32 --experts 8 --experts-used 2 --expert-ffn 256",
         "q8_0, qwen3moe: 8 experts", 0},
        {"--type q4_k_m --arch mixtral --experts 4", "q4_k_m, mixtral: 4 experts", 0},
        {"--type mxfp4_moe --arch qwen3moe --head-dim 32 --experts 16 --expert-ffn 256", "mxfp4_moe, qwen3moe in parts",
         200000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[512], args[512];
        snprintf(path, sizeof path, "%s/memory_estimate_%zu.gguf", tu_tmp_dir(), i);
        snprintf(args, sizeof args, "--dim 256 --layers 4 --heads 8 --kv-heads 2 --ffn 512 --vocab 600 %s",
                 cases[i].args);
        if (!tu_make_model(path, args)) continue;
        check_weights(vk, path, cases[i].what, cases[i].max_part);
        remove(path);
    }
    ember_vk_destroy(vk);
}

/* KV per token as the engine counts it, and the engine's memory against the estimate. */
static void check_engine(const char *path, ember_kv_type kv)
{
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = NULL;
    if (ember_model_load(path, &mo, &m) != EMBER_OK) {
        printf("SKIP (part): %s\n", ember_model_error(m));
        ember_model_free(m);
        return;
    }
    ember_model_info before, after;
    ember_model_get_info(m, &before);
    ember_engine_opts eo = {.max_seqs = 1, .kv_type = kv};
    ember_engine *e = NULL;
    ember_memory_estimate est;
    char msg[256];
    CHECK(ember_engine_create(m, &eo, &e) == EMBER_OK);
    CHECKF(ember_estimate_memory(path, 0, &eo, &est, msg, sizeof msg) == EMBER_OK, "%s", msg);
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    ember_model_get_info(m, &after);
    uint64_t engine_bytes = after.device_bytes - before.device_bytes, pool = (uint64_t)st.kv_blocks_total *
                            st.kv_block_size * st.kv_bytes_per_token;
    printf("KV %s: %llu bytes a token (engine %llu); engine holds %llu bytes for a pool of %llu and step buffers "
           "of %llu\n", kv == EMBER_KV_Q8_0 ? "q8_0" : "f32", (unsigned long long)est.kv_bytes_per_token,
           (unsigned long long)st.kv_bytes_per_token, (unsigned long long)engine_bytes, (unsigned long long)pool,
           (unsigned long long)est.activation_bytes);
    CHECK(est.kv_bytes_per_token == st.kv_bytes_per_token);
    CHECK(est.n_ctx == after.ctx_len);
    CHECK(est.kv_bytes == (uint64_t)(after.ctx_len + 15) / 16 * 16 * est.kv_bytes_per_token);
    /* the pools are reserved at their size: alignment (256 bytes a span) to spare at most */
    CHECKF(engine_bytes >= pool + est.activation_bytes && engine_bytes - pool - est.activation_bytes <=
           256ull * (16 + 2 * after.n_layers), "engine %llu bytes", (unsigned long long)engine_bytes);
    CHECK(est.total_bytes == est.weight_bytes + est.kv_bytes + est.activation_bytes);
    /* the weights too, with room for each stack's parts rounded to 16 bytes */
    CHECKF(before.device_bytes >= est.weight_bytes && before.device_bytes - est.weight_bytes <=
           (256ull + 16 * EMBER_MAX_WEIGHT_PARTS) * (4 + 7 * after.n_layers), "weights %llu bytes, estimate %llu",
           (unsigned long long)before.device_bytes, (unsigned long long)est.weight_bytes);
    ember_engine_destroy(e);
    ember_model_free(m);
}

static void test_kv_and_engine(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/memory_estimate_engine.gguf", tu_tmp_dir());
    if (!tu_make_model(path, "--dim 256 --layers 3 --heads 8 --kv-heads 2 --ffn 512 --vocab 600 --ctx 200")) return;
    check_engine(path, EMBER_KV_F32);
    check_engine(path, EMBER_KV_Q8_0);
    ember_memory_estimate e;
    char msg[256];
    ember_engine_opts eo = {.kv_block_size = 32};
    CHECK(ember_estimate_memory(path, 33, &eo, &e, msg, sizeof msg) == EMBER_OK);
    CHECK(e.n_ctx == 33 && e.kv_bytes == 64 * e.kv_bytes_per_token); /* two blocks of 32 */
    /* 3 layers, K and V, 2 KV heads of 32 floats */
    CHECK(e.kv_bytes_per_token == 3ull * 2 * 2 * 32 * 4);
    remove(path);
}

/* A mixture whose weights exceed the memory budget is refused at load, before any upload,
 * with the weights' and the experts' sizes. */
static void test_moe_budget(void)
{
    char path[512], msg[256];
    snprintf(path, sizeof path, "%s/memory_estimate_moe.gguf", tu_tmp_dir());
    if (!tu_make_model(path, "--dim 256 --layers 2 --heads 8 --kv-heads 2 --head-dim 32 --ffn 512 --vocab 512 "
                             "--arch qwen3moe --experts 32 --experts-used 4 --expert-ffn 256 --type q8_0"))
        return;
    ember_memory_estimate e;
    CHECKF(ember_estimate_memory(path, 0, NULL, &e, msg, sizeof msg) == EMBER_OK, "%s", msg);
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory_budget_mib = (uint32_t)(e.weight_bytes >> 21)};
    ember_model *m = NULL;
    ember_status s = ember_model_load(path, &mo, &m);
    const char *why = ember_model_error(m);
    char want[64];
    snprintf(want, sizeof want, "experts a layer take %.1f MiB", e.expert_bytes / 1048576.0);
    printf("qwen3moe, 32 experts (%.1f MiB of %.1f MiB of weights), budget %u MiB: %s: %s\n",
           e.expert_bytes / 1048576.0, e.weight_bytes / 1048576.0, mo.memory_budget_mib, ember_status_name(s), why);
    if (s != EMBER_ERR_NO_DEVICE)
        CHECKF(s == EMBER_ERR_DEVICE_MEMORY && strstr(why, want) && strstr(why, "need"), "%s", why);
    ember_model_free(m);
    remove(path);
}

static void test_errors(void)
{
    ember_memory_estimate e;
    char msg[256], path[512];
    snprintf(path, sizeof path, "%s/memory_estimate_none.gguf", tu_tmp_dir());
    CHECK(ember_estimate_memory(path, 0, NULL, &e, msg, sizeof msg) == EMBER_ERR_IO);
    CHECKF(strstr(msg, "cannot open") != NULL, "%s", msg);
    CHECK(e.total_bytes == 0);
    CHECK(ember_estimate_memory(NULL, 0, NULL, &e, NULL, 0) == EMBER_ERR_INVALID_ARG);
}

int main(void)
{
    test_weights();
    test_kv_and_engine();
    test_moe_budget();
    test_errors();
    return tu_finish("test_memory_estimate");
}
