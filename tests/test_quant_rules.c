/* test_quant_rules.c — llama-quantize's names and llama.cpp's per-tensor rules
 * (tools/quant_rules.c), and `ember quantize` with them end to end:
 *  - every single type Ember writes is a name of its own; q3_k, q4_k, q5_k are the _M
 *    presets, as in llama-quantize; names are taken in any case;
 *  - over many shapes (1 to 80 layers, GQA 1 to 8, rows of 64 to 512, tied or not), every
 *    preset, pure or not, chooses only types Ember writes, with rows of whole blocks: the
 *    types Ember cannot write (IQ3_S, ...) never arise without an importance matrix;
 *  - the types q4_k_m, q3_k_m and q2_k give each tensor of a 16-layer GQA-4 model (dim
 *    256, FFN 512), by the program: derived from llama.cpp's rules by hand below, and the
 *    same as llama.cpp's own llama_model_quantize wrote for that model
 *    (bench/quant-vs-llama.sh, docs/quantization.md); and --pure q4_k_m is Q4_K throughout;
 *  - the same model with 8 experts a layer (make-test-model --arch mixtral): llama.cpp's
 *    rules for 8 experts (attn_k, attn_v Q8_0, attn_output Q5_K), the router unquantized,
 *    the 3-D expert tensors by the dense rules (ffn_down_exps by its layer).
 * No network: the model is made by make-test-model. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "engine/model/gguf.h"
#include "tools/quant_rules.c"

/* ---- names -------------------------------------------------------------------------- */

static void test_names(void)
{
    int singles = 0;
    for (uint64_t id = 0; id < 64; id++) {
        const ember_dtype_info *t = ember_dtype_find(id);
        if (!t || !t->from_float || t->type == EMBER_DTYPE_MXFP4) continue; /* below */
        const quant_preset *p = quant_preset_find(t->name); /* "Q4_K": upper case works */
        CHECKF(p != NULL, "%s is no name", t->name);
        CHECKF(p && p->type == t->type, "%s is not its own type", t->name);
        singles++;
    }
    CHECK(singles == 15);
    /* llama-quantize names MXFP4 only as the mix of MXFP4 experts */
    CHECK(!quant_preset_find("mxfp4") && quant_preset_find("MXFP4_MOE")->ftype == 38 &&
          quant_preset_find("mxfp4_moe")->type == EMBER_DTYPE_MXFP4);
    CHECK(quant_preset_find("q3_k")->ftype == QUANT_FTYPE_Q3_K_M);
    CHECK(quant_preset_find("Q4_K")->ftype == QUANT_FTYPE_Q4_K_M && quant_preset_find("q4_k_m")->ftype == 15);
    CHECK(quant_preset_find("q5_k")->ftype == QUANT_FTYPE_Q5_K_M);
    CHECK(quant_preset_find("q2_k")->ftype == 10 && quant_preset_find("q6_k")->ftype == 18);
    CHECK(quant_preset_find("q4_k_s")->type == EMBER_DTYPE_Q4_K && quant_preset_find("q3_k_l")->ftype == 13);
    CHECK(!quant_preset_find("q2_k_s") && !quant_preset_find("iq3_s") && !quant_preset_find("q4_k_x") &&
          !quant_preset_find("q4_") && !quant_preset_find(""));
    size_t n = 0;
    while (quant_preset_at(n)) n++;
    CHECK(n == 23);
    char names[512];
    CHECK(strstr(quant_preset_names(names, sizeof names), "f32, f16, bf16, q4_0") == names);
}

/* ---- every choice is writable ------------------------------------------------------- */

typedef struct shape {
    uint32_t layers, dim, kv_dim, ffn, gqa;
    bool tied, is_70b;
} shape;

#define MAX_TENSORS (3 + 80 * 9)

/* The tensors of a llama model of shape s, in make-test-model's order. */
static uint64_t make_tensors(const shape *s, ember_gguf_tensor *t, char (*names)[48])
{
    static const char *const parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                        "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"};
    uint64_t n = 0;
    const uint64_t vocab = 512;
#define ADD(nm, a, b)                                                                   \
    do {                                                                                \
        snprintf(names[n], 48, "%s", nm);                                               \
        t[n] = (ember_gguf_tensor){.name = names[n], .n_dims = (b) > 1 ? 2 : 1,         \
                                   .ne = {(a), (b), 1, 1}, .type = EMBER_DTYPE_F32};    \
        n++;                                                                            \
    } while (0)
    ADD("token_embd.weight", s->dim, vocab);
    for (uint32_t l = 0; l < s->layers; l++)
        for (size_t p = 0; p < sizeof parts / sizeof *parts; p++) {
            char nm[48];
            snprintf(nm, sizeof nm, "blk.%u.%s.weight", l, parts[p]);
            bool norm = strstr(parts[p], "norm") != NULL, down = strcmp(parts[p], "ffn_down") == 0;
            bool kv = strcmp(parts[p], "attn_k") == 0 || strcmp(parts[p], "attn_v") == 0;
            bool ffn = strcmp(parts[p], "ffn_gate") == 0 || strcmp(parts[p], "ffn_up") == 0;
            ADD(nm, down ? s->ffn : s->dim, norm ? 1 : kv ? s->kv_dim : ffn ? s->ffn : s->dim);
        }
    ADD("output_norm.weight", s->dim, 1);
    if (!s->tied) ADD("output.weight", s->dim, vocab);
#undef ADD
    return n;
}

static void test_all_writable(void)
{
    static ember_gguf_tensor t[MAX_TENSORS];
    static char names[MAX_TENSORS][48];
    const uint32_t layers[] = {1, 2, 16, 80}, dims[] = {64, 256, 320}, ffns[] = {172, 512}, gqas[] = {1, 4, 8};
    int bad = 0, cases = 0;
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 3; b++)
            for (size_t c = 0; c < 2; c++)
                for (size_t g = 0; g < 3; g++)
                    for (int tied = 0; tied < 2; tied++) {
                        /* 80 layers: the 70B model (llama with GQA, or qwen2) */
                        shape s = {layers[a], dims[b], dims[b] / gqas[g], ffns[c], gqas[g], tied, layers[a] == 80};
                        quant_job job = {.model = {s.layers, s.gqa, s.is_70b}, .tensors = t};
                        job.n_tensors = make_tensors(&s, t, names);
                        for (size_t p = 0; quant_preset_at(p); p++)
                            for (int pure = 0; pure < 2; pure++) {
                                job.preset = quant_preset_at(p), job.pure = pure;
                                for (uint64_t i = 0; i < job.n_tensors; i++) {
                                    ember_dtype to = quant_tensor_type(&job, i);
                                    const ember_dtype_info *d = ember_dtype_find((uint64_t)to);
                                    if ((!d || !d->from_float || t[i].ne[0] % d->block) && bad++ < 5)
                                        fprintf(stderr, "%s%s, %u layers, dim %u: %s is %s\n", pure ? "--pure " : "",
                                                job.preset->name, s.layers, s.dim, t[i].name, ember_dtype_name(to));
                                }
                                cases++;
                            }
                    }
    CHECKF(bad == 0, "%d choices of types Ember does not write (of %d cases)", bad, cases);
}

/* ---- the program on a 16-layer GQA-4 model -------------------------------------------- */

/* The layers llama.cpp's use_more_bits picks of 16: the first and last two (16/8), and
 * every third from layer 2 on (i - 2) % 3 == 2: 0 1 4 7 10 13 14 15. */
static bool more_bits_16(int layer) { return layer < 2 || layer >= 14 || (layer - 2) % 3 == 2; }

/* The type llama.cpp gives a tensor of that model for preset p (the hand derivation of
 * llama_tensor_get_type_impl's branches for this model: 16 layers, n_gqa 4, untied,
 * rows of 256 and 512: no fallbacks). */
static ember_dtype expected(const char *preset, const char *name)
{
    int layer = -1;
    sscanf(name, "blk.%d.", &layer);
    if (strstr(name, "_norm.weight")) return EMBER_DTYPE_F32;
    if (strcmp(name, "output.weight") == 0) return EMBER_DTYPE_Q6_K;
    bool v = strstr(name, "attn_v.") != NULL, down = strstr(name, "ffn_down") != NULL;
    bool o = strstr(name, "attn_output.") != NULL;
    if (strcmp(preset, "q4_k_m") == 0)  /* attn_v, ffn_down: Q6_K in the use_more_bits layers */
        return (v || down) && more_bits_16(layer) ? EMBER_DTYPE_Q6_K : EMBER_DTYPE_Q4_K;
    if (strcmp(preset, "q3_k_m") == 0) { /* attn_v: Q5_K in the first two; ffn_down: in the first 16th */
        if (v) return layer < 2 ? EMBER_DTYPE_Q5_K : EMBER_DTYPE_Q4_K;
        if (down) return layer < 1 ? EMBER_DTYPE_Q5_K : EMBER_DTYPE_Q4_K;
        return o ? EMBER_DTYPE_Q4_K : EMBER_DTYPE_Q3_K;
    }
    /* q2_k: attn_v Q4_K (n_gqa >= 4), ffn_down and attn_output Q3_K */
    return v ? EMBER_DTYPE_Q4_K : down || o ? EMBER_DTYPE_Q3_K : EMBER_DTYPE_Q2_K;
}

/* The same for the model with 8 experts a layer (Mixtral's shape): the router stays F32;
 * attn_k and attn_v are Q8_0 and attn_output Q5_K in both presets; ffn_down_exps follows
 * the dense rules by the layer in its name; the other expert tensors take the default. */
static ember_dtype expected_moe(const char *preset, const char *name)
{
    if (strstr(name, "ffn_gate_inp.") || strstr(name, "_norm.")) return EMBER_DTYPE_F32;
    if (strcmp(preset, "mxfp4_moe") == 0) /* experts MXFP4, every other matrix Q8_0 */
        return strstr(name, "_exps.") ? EMBER_DTYPE_MXFP4 : EMBER_DTYPE_Q8_0;
    if (strstr(name, "attn_k.") || strstr(name, "attn_v.")) return EMBER_DTYPE_Q8_0;
    if (strstr(name, "attn_output.")) return EMBER_DTYPE_Q5_K;
    return expected(preset, name);
}

static uint64_t file_type(const ember_gguf *g)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, "general.file_type");
    return kv ? kv->v.u64 : (uint64_t)-1;
}

/* Quantizes in with `ember quantize [--pure] in out preset`; checks every tensor's type
 * (expected(), or expected_moe() for the model of 8 experts, or with --pure Q4_K for
 * every matrix) and the file type. */
static void check_preset(const char *in, const char *preset, bool pure, uint64_t ftype, bool moe)
{
    char out[512], args[2048];
    snprintf(out, sizeof out, "%s/quant_rules_%s%s.gguf", tu_tmp_dir(), preset, pure ? "_pure" : "");
    snprintf(args, sizeof args, "quantize %s'%s' '%s' %s", pure ? "--pure " : "", in, out, preset);
    ember_gguf *g = NULL;
    ember_err err = {{0}};
    if (!tu_ember(args) || ember_gguf_open(out, &g, &err) != EMBER_OK) {
        CHECKF(0, "%s: %s", args, err.msg);
        return;
    }
    int bad = 0, counts[64] = {0};
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ember_gguf_tensor *t = &g->tensors[i];
        bool kept = strstr(t->name, "_norm.") || strstr(t->name, "ffn_gate_inp.");
        ember_dtype want = pure  ? (kept ? EMBER_DTYPE_F32 : EMBER_DTYPE_Q4_K)
                           : moe ? expected_moe(preset, t->name)
                                 : expected(preset, t->name);
        if (t->type != want && bad++ < 5)
            fprintf(stderr, "%s: %s is %s, want %s\n", args, t->name, ember_dtype_name(t->type), ember_dtype_name(want));
        if ((unsigned)t->type < 64) counts[t->type]++;
    }
    printf("%s%s%-7s file type %2llu: %d Q2_K, %d Q3_K, %d Q4_K, %d Q5_K, %d Q6_K, %d Q8_0, %d MXFP4, %d F32 of %llu "
           "tensors\n",
           moe ? "8 experts: " : "", pure ? "--pure " : "", preset, (unsigned long long)file_type(g),
           counts[EMBER_DTYPE_Q2_K], counts[EMBER_DTYPE_Q3_K], counts[EMBER_DTYPE_Q4_K], counts[EMBER_DTYPE_Q5_K],
           counts[EMBER_DTYPE_Q6_K], counts[EMBER_DTYPE_Q8_0], counts[EMBER_DTYPE_MXFP4], counts[EMBER_DTYPE_F32],
           (unsigned long long)g->n_tensors);
    CHECKF(bad == 0, "%s: %d tensors of other types", args, bad);
    CHECKF(file_type(g) == ftype, "%s: file type %llu", args, (unsigned long long)file_type(g));
    CHECK(g->n_tensors == 2 + 16 * (moe ? 10 : 9) + 1); /* a mixture: the router beside */
    ember_gguf_close(g);
    remove(out);
}

/* make-test-model --type PRESET makes the file `ember quantize` makes from the F32 model
 * of the same seed: the same type and bytes for every tensor, and the same file type
 * (it makes big mixes, an 8B-shaped Q4_K_M, without an F32 model to quantize). */
static void check_made_like_quantized(const char *f32, const char *shape, const char *preset)
{
    char made[512], quantized[512], args[2048];
    snprintf(made, sizeof made, "%s/quant_rules_made_%s.gguf", tu_tmp_dir(), preset);
    snprintf(quantized, sizeof quantized, "%s/quant_rules_quantized_%s.gguf", tu_tmp_dir(), preset);
    snprintf(args, sizeof args, "make-test-model '%s' %s --type %s", made, shape, preset);
    bool ok = tu_ember(args);
    snprintf(args, sizeof args, "quantize '%s' '%s' %s", f32, quantized, preset);
    ember_gguf *a = NULL, *b = NULL;
    ember_err err = {{0}};
    if (!ok || !tu_ember(args) || ember_gguf_open(made, &a, &err) || ember_gguf_open(quantized, &b, &err)) {
        CHECKF(0, "%s: %s", preset, err.msg);
        ember_gguf_close(a);
        return;
    }
    int differ = 0, kinds = 0;
    uint64_t types = 0; /* bit t: some matrix is of type t */
    CHECK(a->n_tensors == b->n_tensors);
    for (uint64_t i = 0; i < a->n_tensors && i < b->n_tensors; i++) {
        const ember_gguf_tensor *x = &a->tensors[i], *y = ember_gguf_find_tensor(b, x->name);
        bool same = y && x->type == y->type && x->nbytes == y->nbytes && memcmp(x->data, y->data, x->nbytes) == 0;
        if (!same && differ++ < 3) fprintf(stderr, "%s: %s differs from the quantized file\n", preset, x->name);
        if (x->type != EMBER_DTYPE_F32 && (unsigned)x->type < 64) types |= 1ull << x->type;
    }
    for (; types; types &= types - 1) kinds++;
    printf("make-test-model --type %s: %d of %llu tensors differ from ember quantize's; "
           "%d quantized types\n", preset, differ, (unsigned long long)a->n_tensors, kinds);
    CHECK(differ == 0);
    CHECKF(kinds > 1, "%s: a preset is a mix of types", preset); /* not a single type's file */
    CHECK(file_type(a) == file_type(b));
    ember_gguf_close(a), ember_gguf_close(b);
    remove(made), remove(quantized);
}

static void test_program(void)
{
    static const char shape[] = "--dim 256 --layers 16 --heads 8 --kv-heads 2 --ffn 512 --vocab 512 --seed 7";
    char in[512], args[1024];
    snprintf(in, sizeof in, "%s/quant_rules_f32.gguf", tu_tmp_dir());
    snprintf(args, sizeof args, "make-test-model '%s' %s --type f32", in, shape);
    if (!tu_ember(args)) {
        CHECK(0);
        return;
    }
    check_preset(in, "q4_k_m", false, 15, false);
    check_preset(in, "q3_k_m", false, 12, false);
    check_preset(in, "q2_k", false, 10, false);
    check_preset(in, "q4_k_m", true, 15, false);
    check_made_like_quantized(in, shape, "q4_k_m");
    check_made_like_quantized(in, shape, "q3_k_l");
    remove(in);
    static const char moe[] = "--dim 256 --layers 16 --heads 8 --kv-heads 2 --ffn 512 --vocab 512 --seed 7 "
                              "--arch mixtral";
    snprintf(args, sizeof args, "make-test-model '%s' %s --type f32", in, moe);
    if (!tu_ember(args)) {
        CHECK(0);
        return;
    }
    check_preset(in, "q4_k_m", false, 15, true);
    check_preset(in, "q3_k_m", false, 12, true);
    check_preset(in, "q4_k_m", true, 15, true);
    check_preset(in, "mxfp4_moe", false, 38, true);
    check_made_like_quantized(in, moe, "q4_k_m");
    check_made_like_quantized(in, moe, "mxfp4_moe");
    remove(in);
}

int main(void)
{
    test_names();
    test_all_writable();
    test_program();
    return tu_finish("test_quant_rules");
}
