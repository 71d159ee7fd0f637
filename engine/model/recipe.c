/* recipe.c — what the hyper-parameters make of one layer: whether it is local (sliding
 * window) or global, whether it rotates, and with which RoPE base, scale and YaRN ramp,
 * all as llama.cpp computes them (llama_context's cparams, ggml's rope), so that both
 * forward passes take the same numbers from one place. */
#include <math.h>

#include "recipe.h"

float ember_rope_pos_scale(const ember_hparams *hp)
{
    return hp->rope_scale > 0 ? 1.0f / hp->rope_scale : 1.0f;
}

float ember_attn_scale(const ember_hparams *hp)
{
    return hp->attn_scale > 0 ? hp->attn_scale : 1.0f / sqrtf((float)hp->head_dim);
}

float ember_attn_temp(const ember_hparams *hp, uint32_t pos)
{
    if (!(hp->attn_temp_scale > 0)) return 1.0f;
    float floor_scale = (float)(hp->rope_orig_ctx ? hp->rope_orig_ctx : hp->ctx_len);
    return (float)(log(floor((float)pos / floor_scale) + 1.0) * hp->attn_temp_scale + 1.0);
}

static bool is_local(const ember_hparams *hp, uint32_t l)
{
    uint32_t p = hp->swa_period;
    return hp->swa_window && (p == 0 || l % p < p - 1);
}

/* llama_context's get_mscale: YaRN's magnitude correction for a scale factor. */
static float yarn_mscale(float scale, float mscale)
{
    return scale <= 1.0f ? 1.0f : 0.1f * mscale * logf(scale) + 1.0f;
}

/* The attn_factor llama.cpp hands every rope of the model (cparams.yarn_attn_factor). */
static float model_attn_factor(const ember_hparams *hp, bool yarn)
{
    float f = hp->rope_scale > 0 ? hp->rope_scale : 1.0f, a = 1.0f;
    if (yarn) {
        a = hp->yarn_log_mul != 0 ? yarn_mscale(f, 1.0f) / yarn_mscale(f, hp->yarn_log_mul) : yarn_mscale(f, 1.0f);
        a *= 1.0f / (1.0f + 0.1f * logf(f));
    }
    return a * (hp->rope_attn_factor > 0 ? hp->rope_attn_factor : 1.0f);
}

/* ggml_rope_yarn_corr_dims: the pair indices where YaRN's ramp starts and ends. */
static float corr_dim(uint32_t n_dims, uint32_t n_ctx_orig, float n_rot, float base)
{
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2 * 3.14159265358979f)) / (2 * logf(base));
}

static void corr_dims(const ember_hparams *hp, float base, ember_layer_attn *o)
{
    uint32_t n_ctx = hp->rope_orig_ctx ? hp->rope_orig_ctx : hp->ctx_len;
    float fast = hp->yarn_beta_fast > 0 ? hp->yarn_beta_fast : 32.0f;
    float slow = hp->yarn_beta_slow > 0 ? hp->yarn_beta_slow : 1.0f;
    float start = floorf(corr_dim(hp->rope_dim, n_ctx, fast, base));
    float end = ceilf(corr_dim(hp->rope_dim, n_ctx, slow, base));
    o->corr_lo = start > 0 ? start : 0;
    o->corr_hi = end < (float)(hp->rope_dim - 1) ? end : (float)(hp->rope_dim - 1);
}

void ember_layer_attn_of(const ember_hparams *hp, uint32_t layer, ember_layer_attn *o)
{
    bool yarn = hp->rope_scaling == EMBER_ROPE_SCALING_YARN, local = is_local(hp, layer);
    float attn_factor = model_attn_factor(hp, yarn);
    *o = (ember_layer_attn){.window = local ? hp->swa_window : 0,
                            .rope = !(hp->nope_step && (layer + 1) % hp->nope_step == 0),
                            .rope_base = hp->rope_base, .pos_scale = ember_rope_pos_scale(hp),
                            .ext_factor = yarn ? 1.0f : 0.0f};
    if (local && (hp->recipe & EMBER_RECIPE_SWA_PLAIN_ROPE)) {
        o->pos_scale = 1.0f, o->ext_factor = 0.0f, attn_factor = 1.0f;
    } else if (local) {
        if (hp->rope_base_swa > 0) o->rope_base = hp->rope_base_swa;
        if (!hp->swa_scaled) o->pos_scale = 1.0f;
    }
    o->mscale = attn_factor * (o->ext_factor != 0 ? 1.0f + 0.1f * logf(1.0f / o->pos_scale) : 1.0f);
    if (o->ext_factor != 0) corr_dims(hp, o->rope_base, o);
}
