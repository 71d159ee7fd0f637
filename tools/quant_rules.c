/* quant_rules.c — llama-quantize's names and llama.cpp's per-tensor type rules
 * (quant_rules.h), read from llama.cpp 80fb11a's src/llama-quant.cpp and
 * tools/quantize/quantize.cpp and written again here, so that `ember quantize` picks the
 * type llama.cpp picks for every tensor (bench/quant-vs-llama.sh compares the files).
 *
 * Left out, because they never apply to what Ember quantizes (a llama or qwen2 model it
 * loads, without an importance matrix, to a name of the table below):
 *  - the branches of other file types: IQ1_*, IQ2_*, IQ3_*, Q2_K_S (it needs an importance
 *    matrix), TQ*, Q1_0, Q2_0, and BailingMoE3's exception to MXFP4_MOE;
 *  - Falcon's rules (arch == LLM_ARCH_FALCON);
 *  - what an importance matrix changes (has_imatrix is false), and llama-quantize's
 *    --output-tensor-type, --token-embedding-type, --tensor-type overrides.
 * With those out, every type the rules choose is one Ember writes (Q3_K..Q6_K, Q8_0 and
 * the fallbacks); tests/test_quant_rules.c checks that over many shapes. */
#include "quant_rules.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names -------------------------------------------------------------------------- */

/* quantize.cpp's QUANT_OPTIONS, the names Ember writes: the single types keep their
 * names, and the bare K names are llama-quantize's aliases (Q3_K is Q3_K_M, Q4_K is
 * Q4_K_M, Q5_K is Q5_K_M; Q2_K and Q6_K are presets of their own). The default type is
 * llama_ftype_get_default_type's. */
static const quant_preset PRESETS[] = {
    {"f32", QUANT_FTYPE_ALL_F32, EMBER_DTYPE_F32},
    {"f16", QUANT_FTYPE_F16, EMBER_DTYPE_F16},
    {"bf16", QUANT_FTYPE_BF16, EMBER_DTYPE_BF16},
    {"q4_0", QUANT_FTYPE_Q4_0, EMBER_DTYPE_Q4_0},
    {"q4_1", QUANT_FTYPE_Q4_1, EMBER_DTYPE_Q4_1},
    {"q5_0", QUANT_FTYPE_Q5_0, EMBER_DTYPE_Q5_0},
    {"q5_1", QUANT_FTYPE_Q5_1, EMBER_DTYPE_Q5_1},
    {"q8_0", QUANT_FTYPE_Q8_0, EMBER_DTYPE_Q8_0},
    {"q2_k", QUANT_FTYPE_Q2_K, EMBER_DTYPE_Q2_K},
    {"q3_k_s", QUANT_FTYPE_Q3_K_S, EMBER_DTYPE_Q3_K},
    {"q3_k_m", QUANT_FTYPE_Q3_K_M, EMBER_DTYPE_Q3_K},
    {"q3_k_l", QUANT_FTYPE_Q3_K_L, EMBER_DTYPE_Q3_K},
    {"q3_k", QUANT_FTYPE_Q3_K_M, EMBER_DTYPE_Q3_K},
    {"q4_k_s", QUANT_FTYPE_Q4_K_S, EMBER_DTYPE_Q4_K},
    {"q4_k_m", QUANT_FTYPE_Q4_K_M, EMBER_DTYPE_Q4_K},
    {"q4_k", QUANT_FTYPE_Q4_K_M, EMBER_DTYPE_Q4_K},
    {"q5_k_s", QUANT_FTYPE_Q5_K_S, EMBER_DTYPE_Q5_K},
    {"q5_k_m", QUANT_FTYPE_Q5_K_M, EMBER_DTYPE_Q5_K},
    {"q5_k", QUANT_FTYPE_Q5_K_M, EMBER_DTYPE_Q5_K},
    {"q6_k", QUANT_FTYPE_Q6_K, EMBER_DTYPE_Q6_K},
    {"iq4_nl", QUANT_FTYPE_IQ4_NL, EMBER_DTYPE_IQ4_NL},
    {"iq4_xs", QUANT_FTYPE_IQ4_XS, EMBER_DTYPE_IQ4_XS},
    /* MXFP4 has no name of its own in llama-quantize: only this mix, MXFP4 experts */
    {"mxfp4_moe", QUANT_FTYPE_MXFP4_MOE, EMBER_DTYPE_MXFP4},
};

#define N_PRESETS (sizeof PRESETS / sizeof *PRESETS)

static bool same_name(const char *lower, const char *any_case)
{
    while (*lower && tolower((unsigned char)*any_case) == *lower) lower++, any_case++;
    return !*lower && !*any_case;
}

const quant_preset *quant_preset_find(const char *name)
{
    for (size_t i = 0; i < N_PRESETS; i++)
        if (same_name(PRESETS[i].name, name)) return &PRESETS[i];
    return NULL;
}

const quant_preset *quant_preset_at(size_t i) { return i < N_PRESETS ? &PRESETS[i] : NULL; }

const char *quant_preset_names(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < N_PRESETS; i++) {
        int n = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", PRESETS[i].name);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
    }
    return buf;
}

/* ---- the model ---------------------------------------------------------------------- */

quant_model quant_model_of(const ember_llama *m)
{
    const ember_hparams *hp = &m->hp;
    quant_model q = {.n_layers = hp->n_layers, .n_gqa = hp->n_kv_heads ? hp->n_heads / hp->n_kv_heads : 0,
                     .n_expert = hp->n_expert};
    /* models/llama.cpp and models/qwen2.cpp: 80 layers is the 70B model (for llama only
     * with grouped KV heads: with as many as query heads it is LLaMA-1 65B) */
    q.is_70b = hp->n_layers == 80 && (m->arch == EMBER_ARCH_QWEN2 || hp->n_heads != hp->n_kv_heads);
    return q;
}

/* ---- which tensors are quantized ---------------------------------------------------- */

static bool has(const char *name, const char *part) { return strstr(name, part) != NULL; }

static bool ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), k = strlen(end);
    return n >= k && strcmp(s + n - k, end) == 0;
}

/* ggml_n_dims: trailing dimensions of 1 do not count (a [256, 1] tensor is a vector). */
static uint32_t n_dims(const ember_gguf_tensor *t)
{
    for (uint32_t i = 3; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}

/* tensor_allows_quantization: matrices whose name ends in "weight", but not the norms nor
 * the small or special tensors of other architectures (llama.cpp's whole list, since a
 * file Ember loads may carry tensors it does not read). */
static bool allows_quantization(const ember_gguf_tensor *t)
{
    static const char *const keep[] = {
        "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
        "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
        "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
        "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
        "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
        "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
        "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
    };
    if (n_dims(t) < 2 || !ends_with(t->name, "weight")) return false;
    if (strcmp(t->name, "position_embd.weight") == 0 || strcmp(t->name, "token_types.weight") == 0) return false;
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
        if (has(t->name, keep[i])) return false;
    return true;
}

/* ---- categories and counters -------------------------------------------------------- */

/* tensor_get_category, the categories the rules below tell apart. */
typedef enum category {
    CAT_OUTPUT, CAT_TOKEN_EMBD, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_OUTPUT, CAT_FFN_DOWN, CAT_OTHER
} category;

static category category_of(const char *name)
{
    /* in llama.cpp's order, since the first match wins ("attn_qkv" before "attn_v"...) */
    static const struct { const char *part; category cat; } parts[] = {
        {"attn_qkv.weight", CAT_ATTN_V}, {"attn_kv_b.weight", CAT_ATTN_V}, {"attn_v.weight", CAT_ATTN_V},
        {"attn_k.weight", CAT_ATTN_K}, {"attn_q.weight", CAT_OTHER}, {"attn_output.weight", CAT_ATTN_OUTPUT},
        {"ffn_up", CAT_OTHER}, {"ffn_gate", CAT_OTHER}, {"ffn_down", CAT_FFN_DOWN},
    };
    if (strcmp(name, "output.weight") == 0) return CAT_OUTPUT;
    if (strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0)
        return CAT_TOKEN_EMBD;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (has(name, parts[i].part)) return parts[i].cat;
    return CAT_OTHER;
}

/* llama.cpp visits the tensors in its loader's order (weight_name_comparer: by layer,
 * tensors outside the layers first, then by name), and its counters of attn_v and
 * ffn_down tensors seen so far stand for the layer. */
static int layer_of(const char *name)
{
    /* sscanf(name, "blk.%d.", &layer), which is slow for a quadratic loop */
    char *end;
    if (strncmp(name, "blk.", 4) != 0) return -1;
    long layer = strtol(name + 4, &end, 10);
    return end == name + 4 ? -1 : (int)layer;
}

static bool visited_before(const char *a, const char *b)
{
    int la = layer_of(a), lb = layer_of(b);
    return la != lb ? la < lb : strcmp(a, b) < 0;
}

/* How many quantized tensors of category cat llama.cpp's rules saw before tensor i
 * (i_attention_wv, i_ffn_down). Quadratic in the tensors, which is nothing beside
 * quantizing them (a 126-layer model has 1137). */
static int seen_before(const quant_job *job, uint64_t i, category cat)
{
    const char *name = job->tensors[i].name;
    int n = 0;
    for (uint64_t j = 0; j < job->n_tensors; j++) {
        const ember_gguf_tensor *t = &job->tensors[j];
        n += visited_before(t->name, name) && category_of(t->name) == cat && allows_quantization(t);
    }
    return n;
}

/* How many tensors of category cat the file has (n_attention_wv). */
static int count_of(const quant_job *job, category cat)
{
    int n = 0;
    for (uint64_t j = 0; j < job->n_tensors; j++) n += category_of(job->tensors[j].name) == cat;
    return n;
}

/* Whether the LM head reuses token_embd (no output.weight), whose type then follows the
 * output's rule. */
static bool tied(const quant_job *job) { return count_of(job, CAT_OUTPUT) == 0; }

/* ---- the rules (llama_tensor_get_type_impl) ----------------------------------------- */

/* The layers that get more bits: the first and last eighth, and every third between. */
static bool use_more_bits(int i_layer, int n_layers)
{
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

/* The LM head (and a tied token_embd) is what quantization hurts most: Q6_K, or Q8_0 when
 * its rows are not whole blocks of the default type; a Q8_0 file keeps Q8_0. */
static ember_dtype output_type(const quant_job *job, const ember_gguf_tensor *t)
{
    ember_dtype def = job->preset->type;
    if (t->ne[0] % ember_dtype_block(def) != 0) return EMBER_DTYPE_Q8_0;
    return def == EMBER_DTYPE_Q8_0 ? def : EMBER_DTYPE_Q6_K;
}

/* attn_v is small (with GQA, n_gqa times smaller than attn_q) and sensitive, so the low
 * presets give it more bits. Its counter stands for the layer (one attn_v per layer);
 * counted only where a rule asks. */
static ember_dtype attn_v_type(const quant_job *job, uint64_t i)
{
    const quant_model *m = &job->model;
    ember_dtype type = job->preset->type;
    switch (job->preset->ftype) {
    case QUANT_FTYPE_Q2_K: type = m->n_gqa >= 4 ? EMBER_DTYPE_Q4_K : EMBER_DTYPE_Q3_K; break;
    case QUANT_FTYPE_Q3_K_M:
        type = seen_before(job, i, CAT_ATTN_V) < 2 ? EMBER_DTYPE_Q5_K : EMBER_DTYPE_Q4_K;
        break;
    case QUANT_FTYPE_Q3_K_L: type = EMBER_DTYPE_Q5_K; break;
    case QUANT_FTYPE_IQ4_NL:
    case QUANT_FTYPE_IQ4_XS: if (m->n_gqa >= 4) type = EMBER_DTYPE_Q5_K; break;
    case QUANT_FTYPE_Q4_K_M:
    case QUANT_FTYPE_Q5_K_M:
        if (use_more_bits(seen_before(job, i, CAT_ATTN_V), count_of(job, CAT_ATTN_V))) type = EMBER_DTYPE_Q6_K;
        break;
    case QUANT_FTYPE_Q4_K_S: if (seen_before(job, i, CAT_ATTN_V) < 4) type = EMBER_DTYPE_Q5_K; break;
    default: break;
    }
    /* 70B: 8 query heads share each attn_v, which is 8x smaller than attn_q; more bits
     * there cost little */
    if (m->is_70b && (type == EMBER_DTYPE_Q3_K || type == EMBER_DTYPE_Q4_K)) type = EMBER_DTYPE_Q5_K;
    /* Mixtral's 8 experts: attn_v (and attn_k) are a sliver of the weights, Q8_0 costs
     * little */
    return m->n_expert == 8 ? EMBER_DTYPE_Q8_0 : type;
}

static ember_dtype attn_k_type(const quant_job *job)
{
    return job->model.n_expert == 8 ? EMBER_DTYPE_Q8_0 : job->preset->type;
}

/* ffn_down's layer: llama.cpp's counter of ffn_down tensors seen, but in a mixture of
 * experts the number in the name (a layer may hold several: experts, a shared expert). */
static int ffn_down_layer(const quant_job *job, uint64_t i)
{
    return job->model.n_expert > 1 ? layer_of(job->tensors[i].name) : seen_before(job, i, CAT_FFN_DOWN);
}

/* ffn_down: more bits in the first layers (or the use_more_bits ones) for the presets
 * that mix; the layer out of block_count (ffn_down_layer). */
static ember_dtype ffn_down_type(const quant_job *job, uint64_t i)
{
    ember_dtype type = job->preset->type;
    int n = (int)job->model.n_layers;
    switch (job->preset->ftype) {
    case QUANT_FTYPE_Q2_K: return EMBER_DTYPE_Q3_K;
    case QUANT_FTYPE_Q3_K_M: return ffn_down_layer(job, i) < n / 16 ? EMBER_DTYPE_Q5_K : EMBER_DTYPE_Q4_K;
    case QUANT_FTYPE_Q3_K_L: return EMBER_DTYPE_Q5_K;
    case QUANT_FTYPE_Q4_K_M:
    case QUANT_FTYPE_Q5_K_M: return use_more_bits(ffn_down_layer(job, i), n) ? EMBER_DTYPE_Q6_K : type;
    case QUANT_FTYPE_IQ4_NL:
    case QUANT_FTYPE_IQ4_XS:
    case QUANT_FTYPE_Q4_K_S: return ffn_down_layer(job, i) < n / 8 ? EMBER_DTYPE_Q5_K : type;
    default: return type;
    }
}

/* attn_output: one step up for the low presets; with 8 experts Q5_K for the presets of
 * 4 bits and fewer (their attention is a small part of the weights). */
static ember_dtype attn_output_type(const quant_job *job)
{
    if (job->model.n_expert == 8) {
        switch (job->preset->ftype) {
        case QUANT_FTYPE_Q2_K: case QUANT_FTYPE_Q3_K_S: case QUANT_FTYPE_Q3_K_M: case QUANT_FTYPE_IQ4_NL:
        case QUANT_FTYPE_Q4_K_S: case QUANT_FTYPE_Q4_K_M: case QUANT_FTYPE_IQ4_XS: return EMBER_DTYPE_Q5_K;
        default: return job->preset->type;
        }
    }
    switch (job->preset->ftype) {
    case QUANT_FTYPE_Q2_K: return EMBER_DTYPE_Q3_K;
    case QUANT_FTYPE_Q3_K_M: return EMBER_DTYPE_Q4_K;
    case QUANT_FTYPE_Q3_K_L: return EMBER_DTYPE_Q5_K;
    default: return job->preset->type;
    }
}

/* MXFP4_MOE: the expert tensors (3-D: more than one matrix) MXFP4, every other matrix,
 * the LM head included, Q8_0. */
static ember_dtype mxfp4_moe_type(const ember_gguf_tensor *t)
{
    return t->ne[2] > 1 ? EMBER_DTYPE_MXFP4 : EMBER_DTYPE_Q8_0;
}

/* llama_tensor_get_type_impl: the type the preset's rules give tensor i (before the
 * fallback for rows that are not whole blocks). attn_q, ffn_gate, ffn_up (experts too)
 * and an untied token_embd keep the default type in every preset Ember writes. */
static ember_dtype rules_type(const quant_job *job, uint64_t i)
{
    const ember_gguf_tensor *t = &job->tensors[i];
    if (job->preset->ftype == QUANT_FTYPE_MXFP4_MOE) return mxfp4_moe_type(t);
    switch (category_of(t->name)) {
    case CAT_OUTPUT: return output_type(job, t);
    case CAT_TOKEN_EMBD: return tied(job) ? output_type(job, t) : job->preset->type;
    case CAT_ATTN_V: return attn_v_type(job, i);
    case CAT_ATTN_K: return attn_k_type(job);
    case CAT_FFN_DOWN: return ffn_down_type(job, i);
    case CAT_ATTN_OUTPUT: return attn_output_type(job);
    default: return job->preset->type;
    }
}

/* llama_tensor_get_type. The float names (f32, f16, bf16) have no rules and no fallback:
 * every matrix becomes that type. */
ember_dtype quant_tensor_type(const quant_job *job, uint64_t i)
{
    const ember_gguf_tensor *t = &job->tensors[i];
    if (!allows_quantization(t)) return t->type;
    ember_dtype def = job->preset->type;
    if (ember_dtype_block(def) == 1) return def;
    ember_dtype type = job->pure ? def : rules_type(job, i);
    return ember_dtype_for_rows(type, t->ne[0]);
}
