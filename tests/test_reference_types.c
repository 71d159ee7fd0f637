/* test_reference_types.c — every weight type Ember reads, end to end on both backends:
 * the token embedding lookup, every layer's matrices, the LM head, and the fallback types
 * of rows that are not whole blocks. For each type T that `ember quantize` writes, a
 * random F32 model (rows of 256, and ffn_down's rows of 320, which K types cannot hold)
 * is quantized to T (`--pure`: every matrix T, not llama.cpp's mix), then quantized back
 * to F32: its weights are then exactly the floats the CPU backend decodes from T's
 * blocks.
 *  - CPU backend (the oracle): both files score a token sequence to the same
 *    log-likelihood, bit for bit (test_quant_types checks the decoding itself against
 *    llama.cpp's);
 *  - Vulkan backend: T's file scores within 1e-4 (relative) of the CPU backend: the
 *    shaders decode every type as the C codecs do (shaders/types);
 *  - make-test-model --type T writes what ember quantize writes. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "engine/model/gguf.h"
#include "testutil.h"

#define SHAPE "--dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 320 --vocab 512 --ctx 128 --seed 11"

/* -log p of tokens[1..n) on a backend; < 0 when the model does not load, -2 without a
 * Vulkan device. */
static double score(const char *path, ember_backend backend, const uint32_t *tokens, size_t n)
{
    ember_model_opts o = {.backend = backend, .enable_validation = backend == EMBER_BACKEND_VULKAN && tu_validation()};
    ember_model *m = NULL;
    double nll = -1;
    size_t scored = 0;
    ember_status s = ember_model_load(path, &o, &m);
    if (s == EMBER_OK) s = ember_score(m, tokens, n, 0, &nll, &scored);
    if (s != EMBER_OK) {
        printf("%s: %s\n", path, ember_model_error(m));
        nll = s == EMBER_ERR_NO_DEVICE ? -2 : -1;
    }
    if (m && backend == EMBER_BACKEND_VULKAN) CHECK(ember_model_validation_messages(m, NULL, 0) == 0);
    ember_model_free(m);
    return nll;
}

/* The same tensors, of the same types and bytes (the metadata may be ordered otherwise). */
static bool same_tensors(const char *a, const char *b)
{
    ember_gguf *ga = NULL, *gb = NULL;
    ember_err err = {{0}};
    bool same = ember_gguf_open(a, &ga, &err) == EMBER_OK && ember_gguf_open(b, &gb, &err) == EMBER_OK &&
                ga->n_tensors == gb->n_tensors;
    for (uint64_t i = 0; same && i < ga->n_tensors; i++) {
        const ember_gguf_tensor *x = &ga->tensors[i], *y = ember_gguf_find_tensor(gb, x->name);
        same = y && x->type == y->type && x->nbytes == y->nbytes && memcmp(x->data, y->data, x->nbytes) == 0;
    }
    ember_gguf_close(ga);
    ember_gguf_close(gb);
    return same;
}

/* name: the type's (make-test-model --type name: every matrix of it); preset: the name
 * `ember quantize --pure` takes for it (llama-quantize's: MXFP4 has only mxfp4_moe). */
static void check_type(const char *name, const char *preset, const char *f32, const uint32_t *tokens, size_t n,
                       double exact)
{
    const char *tmp = tu_tmp_dir();
    char q[512], back[512], made[512], args[2048];
    snprintf(q, sizeof q, "%s/ref_types_%s.gguf", tmp, name);
    snprintf(back, sizeof back, "%s/ref_types_%s_f32.gguf", tmp, name);
    snprintf(made, sizeof made, "%s/ref_types_%s_made.gguf", tmp, name);
    snprintf(args, sizeof args, "quantize --pure '%s' '%s' %s", f32, q, preset);
    bool ok = tu_ember(args);
    snprintf(args, sizeof args, "quantize '%s' '%s' f32", q, back);
    ok = ok && tu_ember(args);
    snprintf(args, sizeof args, "make-test-model '%s' " SHAPE " --type %s", made, name);
    ok = ok && tu_ember(args);
    double a = ok ? score(q, EMBER_BACKEND_CPU, tokens, n) : -1, b = ok ? score(back, EMBER_BACKEND_CPU, tokens, n) : -3;
    double g = ok ? score(q, EMBER_BACKEND_VULKAN, tokens, n) : -1;
    bool same_made = ok && same_tensors(q, made);
    printf("%-7s nll %.6f (F32 weights: %.6f), %s its F32 twin; Vulkan %.6f; make-test-model %s\n", name, a, exact,
           a == b ? "the same as" : "DIFFERENT FROM", g, same_made ? "writes the same tensors" : "DIFFERS");
    CHECKF(ok && a > 0 && a == b, "%s: %.9g vs %.9g", name, a, b);
    if (g == -2) printf("SKIP (part): no Vulkan device\n");
    else CHECKF(g > 0 && fabs(g - a) <= 1e-4 * a, "%s: Vulkan %.9g, CPU %.9g", name, g, a);
    CHECKF(same_made, "%s: make-test-model --type and ember quantize differ", name);
    /* quantized weights change the scores a little, never wildly */
    CHECKF(a > 0.8 * exact && a < 1.25 * exact, "%s: nll %.4f against %.4f unquantized", name, a, exact);
    remove(q), remove(back), remove(made);
}

int main(void)
{
    char f32[512], args[1024];
    snprintf(f32, sizeof f32, "%s/ref_types_f32.gguf", tu_tmp_dir());
    snprintf(args, sizeof args, "make-test-model '%s' " SHAPE " --type f32", f32);
    if (!tu_ember(args)) return tu_finish("test_reference_types");
    uint32_t tokens[96];
    tu_rng r = {3};
    for (size_t i = 0; i < 96; i++) tokens[i] = 3 + (uint32_t)(tu_next(&r) % 509);
    double exact = score(f32, EMBER_BACKEND_CPU, tokens, 96);
    CHECK(exact > 0);
    int types = 0;
    for (uint64_t id = 2; id < 64; id++) { /* every block type Ember writes, and BF16 */
        const ember_dtype_info *t = ember_dtype_find(id);
        if (!t || !t->from_float) continue;
        char name[16];
        size_t k = 0;
        for (; t->name[k] && k + 1 < sizeof name; k++) name[k] = (char)tolower((unsigned char)t->name[k]);
        name[k] = 0;
        check_type(name, t->type == EMBER_DTYPE_MXFP4 ? "mxfp4_moe" : name, f32, tokens, 96, exact);
        types++;
    }
    CHECK(types == 14);
    remove(f32);
    return tu_finish("test_reference_types");
}
