/* test_reference.c — the plain-C forward pass and the models it runs: stories260K
 * greedy decoding equals llama2.c's token for token (GGUF v1 and v3), the shipped Q8_0
 * model follows its own float64 greedy run, a prompt in one call equals token by token,
 * the context limit is enforced (for llama and qwen2 models); `ember make-test-model`
 * is deterministic, validates its arguments, writes what it is asked for, and its
 * F16/Q8_0 models stay close to the F32 one. */
#include "model_fixture.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A model with its reference pass (L->ref); a failure is a failed check. */
static bool load(const char *path, mf_model *L) { return mf_load_checked(path, true, L); }

static uint32_t argmax(const float *x, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* Greedy decoding from BOS at position 0; writes n ids. */
static void greedy(ember_ref *r, uint32_t n_vocab, uint32_t *ids, uint32_t n)
{
    float *logits = malloc(n_vocab * sizeof *logits);
    uint32_t tok = 1;
    ember_err err = {{0}};
    for (uint32_t pos = 0; pos < n; pos++) {
        ember_status st = ember_ref_forward(r, &tok, 1, pos, logits, 0, &err);
        CHECKF(st == EMBER_OK, "forward at %u: %s", pos, err.msg);
        if (st)
            break;
        ids[pos] = tok = argmax(logits, n_vocab);
    }
    free(logits);
}

static size_t read_ids(const char *path, uint32_t *ids, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    unsigned v;
    if (!f)
        return 0;
    while (n < cap && fscanf(f, "%u", &v) == 1)
        ids[n++] = v;
    fclose(f);
    return n;
}

static uint32_t common_prefix(const uint32_t *a, const uint32_t *b, uint32_t n)
{
    uint32_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* ---- stories260K ----------------------------------------------------------------- */

static void test_stories_greedy(const char *shared, const char *file, const uint32_t *want)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K/%s", shared, file);
    mf_model L;
    if (!load(path, &L))
        return;
    CHECK(L.m.hp.n_vocab == 512 && L.m.hp.dim == 64 && L.m.hp.n_layers == 5);
    CHECK(L.m.hp.n_heads == 8 && L.m.hp.n_kv_heads == 4 && L.m.hp.ctx_len == 512);
    uint32_t got[200];
    greedy(L.ref, L.m.hp.n_vocab, got, 200);
    uint32_t same = common_prefix(got, want, 200);
    CHECKF(same == 200, "%s: greedy ids differ from token %u (got %u, want %u)", file, same,
           got[same < 200 ? same : 0], want[same < 200 ? same : 0]);
    mf_unload(&L);
}

/* Runs the same tokens as one call (all logits) and one call per token. */
static void test_prompt_vs_steps(const char *path, const uint32_t *prompt, uint32_t n)
{
    mf_model A, B;
    if (!load(path, &A))
        return;
    if (!load(path, &B)) {
        mf_unload(&A);
        return;
    }
    uint32_t nv = A.m.hp.n_vocab;
    float *all = malloc((size_t)n * nv * sizeof *all);
    float *one = malloc(nv * sizeof *one);
    float *last = malloc(nv * sizeof *last);
    ember_err err = {{0}};
    CHECK(ember_ref_forward(A.ref, prompt, n, 0, all, 1, &err) == EMBER_OK);
    double worst = 0;
    for (uint32_t i = 0; i < n; i++) {
        CHECK(ember_ref_forward(B.ref, &prompt[i], 1, i, one, 0, &err) == EMBER_OK);
        double e = tu_rel_err(all + (size_t)i * nv, one, nv);
        if (e > worst)
            worst = e;
    }
    CHECKF(worst <= 1e-5, "%s: prompt vs token-by-token rel err %g", path, worst);
    /* all_logits = 0 gives only the last row; logits = NULL just fills the cache */
    CHECK(ember_ref_forward(A.ref, prompt, n - 1, 0, NULL, 0, &err) == EMBER_OK);
    CHECK(ember_ref_forward(A.ref, prompt + n - 1, 1, n - 1, last, 0, &err) == EMBER_OK);
    CHECK(tu_rel_err(last, all + (size_t)(n - 1) * nv, nv) <= 1e-5);
    CHECK(ember_ref_forward(A.ref, prompt, n, 0, last, 0, &err) == EMBER_OK);
    CHECK(tu_rel_err(last, all + (size_t)(n - 1) * nv, nv) <= 1e-5);
    free(all), free(one), free(last);
    mf_unload(&A);
    mf_unload(&B);
}

static void test_context_full(const char *path)
{
    mf_model L;
    if (!load(path, &L))
        return;
    uint32_t ctx = L.m.hp.ctx_len, tok[4] = { 1, 2, 3, 4 };
    float *logits = malloc(4 * (size_t)L.m.hp.n_vocab * sizeof *logits);
    ember_err err = {{0}};
    CHECK(ember_ref_forward(L.ref, tok, 1, ctx - 1, logits, 0, &err) == EMBER_OK);
    CHECK(ember_ref_forward(L.ref, tok, 1, ctx, logits, 0, &err) == EMBER_ERR_CONTEXT_FULL);
    CHECK(strlen(err.msg) > 0);
    CHECK(ember_ref_forward(L.ref, tok, 4, ctx - 3, logits, 1, &err) == EMBER_ERR_CONTEXT_FULL);
    CHECK(ember_ref_forward(L.ref, tok, 1, UINT32_MAX, logits, 0, &err) == EMBER_ERR_CONTEXT_FULL);
    CHECK(ember_ref_forward(L.ref, tok, 3, ctx - 3, logits, 1, &err) == EMBER_OK);
    uint32_t bad = L.m.hp.n_vocab;
    CHECK(ember_ref_forward(L.ref, &bad, 1, 0, logits, 0, &err) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_ref_forward(L.ref, tok, 0, ctx, logits, 0, &err) == EMBER_OK);
    free(logits);
    mf_unload(&L);
}

/* The shipped Q8_0 file has ffn_down rows of 172 values quantized in blocks that cross
 * rows, which ember_llama_load refuses; the reference reads any flat layout, so the
 * model is assembled by hand here to check Q8_0 against its float64 greedy run. */
static void test_stories_q8_0(const char *shared, const uint32_t *want_f32)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K/tinyllamas-stories-260k-q8_0.gguf", shared);
    ember_gguf *g = NULL;
    ember_err err = {{0}};
    if (ember_gguf_open(path, &g, &err)) {
        CHECKF(0, "%s", err.msg);
        return;
    }
    ember_llama m = { .hp = { 512, 64, 5, 8, 4, 8, 172, 512, 8, 10000.0f, 1e-5f } };
    ember_layer_tensors layers[5];
    memset(layers, 0, sizeof layers); /* no biases */
    m.layers = layers;
    m.tok_embd = ember_gguf_find_tensor(g, "token_embd.weight");
    m.output_norm = ember_gguf_find_tensor(g, "output_norm.weight");
    m.output = ember_gguf_find_tensor(g, "output.weight");
    bool ok = m.tok_embd && m.output_norm && m.output && m.tok_embd->type == EMBER_DTYPE_Q8_0;
    static const char *const names[9] = { "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                          "ffn_norm", "ffn_gate", "ffn_up", "ffn_down" };
    for (int l = 0; l < 5; l++) {
        const ember_gguf_tensor **slot[9] = { &layers[l].attn_norm, &layers[l].wq, &layers[l].wk,
            &layers[l].wv, &layers[l].wo, &layers[l].ffn_norm, &layers[l].w_gate, &layers[l].w_up,
            &layers[l].w_down };
        for (int k = 0; k < 9; k++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, names[k]);
            ok = ok && (*slot[k] = ember_gguf_find_tensor(g, name)) != NULL;
        }
    }
    CHECK(ok);
    ember_ref *r = NULL;
    if (ok && ember_ref_create(&m, &r, &err) == EMBER_OK) {
        uint32_t want[200], got[200];
        snprintf(path, sizeof path, "%s/models/stories260K/expected/greedy200_q8_0_ids.txt", shared);
        CHECK(read_ids(path, want, 200) == 200);
        greedy(r, 512, got, 200);
        uint32_t same = common_prefix(got, want, 200);
        /* The expected run used float64 throughout; ours rounds activations to f32, so
         * allow a near-tie late in the run, but the part shared with f32 must match. */
        CHECKF(same >= 114, "q8_0 greedy matches only %u tokens", same);
        CHECK(common_prefix(got, want_f32, 200) >= 100);
        if (same < 200)
            printf("note: q8_0 greedy equals the float64 run for %u of 200 tokens\n", same);
        ember_ref_free(r);
    }
    ember_gguf_close(g);
}

/* ---- generated models ------------------------------------------------------------ */

/* A note, not a failed check: the first model made only tells whether the tool is there
 * at all, and the other callers check what this returns. */
static bool make_model(const char *path, const char *args)
{
    char out[1024];
    int rc = tu_make_model_rc(path, args, out, sizeof out);
    if (rc != 0)
        printf("note: make-test-model failed (exit %d): %.300s\n", rc, out);
    return rc == 0;
}

static bool same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* The arguments become the hyper-parameters, matrices get the asked type except rows
 * that are not whole Q8_0 blocks (F16), norms stay F32. */
static void check_generated_shape(const char *tmp)
{
    char path[512];
    snprintf(path, sizeof path, "%s/mtm_shape.gguf", tmp);
    if (!make_model(path, "--dim 96 --layers 3 --heads 6 --kv-heads 3 --ffn 80 --vocab 700 "
                          "--ctx 100 --type q8_0 --rope-base 5000"))
        return;
    mf_model L;
    if (load(path, &L)) {
        const ember_hparams *hp = &L.m.hp;
        CHECK(hp->dim == 96 && hp->n_layers == 3 && hp->n_heads == 6 && hp->n_kv_heads == 3);
        CHECK(hp->ffn_dim == 80 && hp->n_vocab == 700 && hp->ctx_len == 100);
        CHECK(hp->head_dim == 16 && hp->rope_dim == 16 && hp->rope_base == 5000.0f);
        CHECK(fabsf(hp->rms_eps - 1e-5f) < 1e-9f);
        CHECK(L.m.output != L.m.tok_embd && L.m.output->type == EMBER_DTYPE_Q8_0);
        CHECK(L.m.tok_embd->type == EMBER_DTYPE_Q8_0 && L.m.output_norm->type == EMBER_DTYPE_F32);
        for (uint32_t l = 0; l < hp->n_layers; l++) {
            const ember_layer_tensors *t = &L.m.layers[l];
            CHECK(t->wq->type == EMBER_DTYPE_Q8_0 && t->wk->type == EMBER_DTYPE_Q8_0);
            CHECK(t->w_gate->type == EMBER_DTYPE_Q8_0 && t->w_up->type == EMBER_DTYPE_Q8_0);
            CHECK(t->w_down->type == EMBER_DTYPE_F16); /* rows of 80 */
            CHECK(t->attn_norm->type == EMBER_DTYPE_F32 && t->ffn_norm->type == EMBER_DTYPE_F32);
            const float *nw = t->attn_norm->data;
            bool all_one = true, near_one = true;
            for (uint32_t i = 0; i < hp->dim; i++)
                all_one &= nw[i] == 1.0f, near_one &= fabsf(nw[i] - 1.0f) <= 0.1f;
            CHECK(!all_one && near_one);
        }
        uint32_t ft = 0;
        ember_err err = {{0}};
        CHECK(ember_gguf_get_u32(L.g, "general.file_type", &ft, &err) == EMBER_OK && ft == 7);
        ember_gguf_str arch;
        CHECK(ember_gguf_get_str(L.g, "general.architecture", &arch, &err) == EMBER_OK &&
              ember_gguf_str_eq(arch, "llama"));
        mf_unload(&L);
    }
    remove(path);
}

static void test_make_test_model(void)
{
    const char *tmp = tu_tmp_dir();
    char a[512], b[512], msg[1024];
    snprintf(a, sizeof a, "%s/mtm_a.gguf", tmp);
    snprintf(b, sizeof b, "%s/mtm_b.gguf", tmp);

    /* deterministic: same arguments, same bytes; another seed, other bytes */
    CHECK(make_model(a, "--seed 5 --type f16"));
    CHECK(make_model(b, "--seed 5 --type f16"));
    CHECK(same_file(a, b));
    CHECK(make_model(b, "--seed 6 --type f16"));
    CHECK(!same_file(a, b) && file_size(a) == file_size(b));

    /* refused with a message that names the problem */
    static const struct { const char *args, *word; } bad[] = {
        { "--dim 64 --heads 5", "divide" },
        { "--heads 4 --kv-heads 3", "divide" },
        { "--dim 12 --heads 4 --kv-heads 2", "even" },
        { "--vocab 100", "vocab" },
        { "--type q1_0", "type" },
        { "--layers", "value" },
        { "--frobnicate 3", "frobnicate" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        remove(b);
        int rc = tu_make_model_rc(b, bad[i].args, msg, sizeof msg);
        CHECKF(rc != 0 && strstr(msg, bad[i].word) != NULL, "'%s' gave %d: %s", bad[i].args, rc, msg);
        CHECK(file_size(b) < 0);
    }
    check_generated_shape(tmp);
    remove(a), remove(b);
}

/* A 300 MB embedding table (for tests of tensors larger than one GPU binding) is
 * generated in seconds, not minutes. */
static void test_big_model(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/mtm_big.gguf", tu_tmp_dir());
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool ok = make_model(path, "--vocab 75000 --dim 1024 --layers 1 --heads 8 --kv-heads 8 "
                               "--ffn 256 --tied");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    CHECK(ok);
    CHECKF(s < 60.0, "a 307 MB embedding took %.1f s", s);
    ember_gguf *g = NULL;
    ember_err err = {{0}};
    if (ok && ember_gguf_open(path, &g, &err) == EMBER_OK) {
        const ember_gguf_tensor *e = ember_gguf_find_tensor(g, "token_embd.weight");
        CHECK(e && e->nbytes == 75000ull * 1024 * 4);
        CHECK(ember_gguf_find_tensor(g, "output.weight") == NULL);
        ember_gguf_close(g);
    }
    remove(path);
}

/* Logits of a fixed prompt (all rows) from the model at path; NULL on failure. */
static float *run_prompt(const char *path, const uint32_t *prompt, uint32_t n, uint32_t *n_vocab)
{
    mf_model L;
    if (!mf_load_checked(path, false, &L))
        return NULL;
    *n_vocab = L.m.hp.n_vocab;
    float *logits = mf_ref_logits(&L.m, prompt, n);
    for (size_t i = 0; logits && i < (size_t)n * L.m.hp.n_vocab; i++)
        if (!isfinite(logits[i])) {
            CHECKF(0, "%s: logit %zu is not finite", path, i);
            break;
        }
    mf_unload(&L);
    return logits;
}

/* A qwen2 Q8_0 GQA model with linear scaling (biases, NeoX pairing, scaled angles;
 * docs/models.md) keeps the properties of the llama ones: one call
 * equals token by token, the context limit holds. Its numbers are checked against a
 * naive pass in test_arch.c. */
static void test_generated_qwen2(const char *common, const uint32_t *prompt)
{
    char path[512], args[512];
    snprintf(path, sizeof path, "%s/ref_qwen2.gguf", tu_tmp_dir());
    snprintf(args, sizeof args, "%s --type q8_0 --arch qwen2 --rope-scale 2", common);
    if (!make_model(path, args)) {
        CHECK(0);
        return;
    }
    mf_model L;
    if (load(path, &L)) {
        CHECK(L.m.arch == EMBER_ARCH_QWEN2 && L.m.hp.rope_style == EMBER_ROPE_NEOX);
        CHECK(!L.m.rope_freqs && L.m.hp.rope_scale == 2.0f && L.m.layers[2].bv);
        mf_unload(&L);
    }
    test_prompt_vs_steps(path, prompt, 12);
    test_context_full(path);
    remove(path);
}

static void test_generated(void)
{
    const char *tmp = tu_tmp_dir();
    char f32[512], f16[512], q8[512], tied[512];
    snprintf(f32, sizeof f32, "%s/ref_f32.gguf", tmp);
    snprintf(f16, sizeof f16, "%s/ref_f16.gguf", tmp);
    snprintf(q8, sizeof q8, "%s/ref_q8_0.gguf", tmp);
    snprintf(tied, sizeof tied, "%s/ref_tied.gguf", tmp);
    const char *common = "--dim 64 --layers 3 --heads 4 --kv-heads 2 --ffn 96 --vocab 300 --ctx 64 --seed 7";
    char args[512];
    snprintf(args, sizeof args, "%s --type f32", common);
    if (!make_model(f32, args)) {
        printf("note: make-test-model unavailable; generated-model checks skipped\n");
        return;
    }
    test_make_test_model();
    test_big_model();
    snprintf(args, sizeof args, "%s --type f16", common);
    CHECK(make_model(f16, args));
    snprintf(args, sizeof args, "%s --type q8_0", common);
    CHECK(make_model(q8, args));

    const uint32_t prompt[12] = { 1, 300 - 1, 260, 45, 3, 77, 200, 280, 290, 12, 2, 150 };
    uint32_t nv = 0, nv2 = 0;
    float *a = run_prompt(f32, prompt, 12, &nv);
    float *b = run_prompt(f16, prompt, 12, &nv2);
    float *c = run_prompt(q8, prompt, 12, &nv2);
    if (a && b && c) {
        double e16 = tu_rel_err(b, a, (size_t)12 * nv), e8 = tu_rel_err(c, a, (size_t)12 * nv);
        CHECKF(e16 < 5e-3, "f16 vs f32 rel err %g", e16);
        CHECKF(e8 < 5e-2, "q8_0 vs f32 rel err %g", e8);
        CHECKF(e16 > 0 && e8 > e16, "f16 %g, q8_0 %g", e16, e8);
        printf("generated model: logits rel err f16 %.2g, q8_0 %.2g (against f32)\n", e16, e8);
        /* logits should be spread out, not collapsed (weights are scaled for that) */
        double lo = a[0], hi = a[0];
        for (uint32_t i = 0; i < nv; i++)
            lo = fmin(lo, a[i]), hi = fmax(hi, a[i]);
        CHECKF(hi - lo > 1.0 && hi - lo < 100.0, "logit range %g", hi - lo);
    }
    free(b), free(c);

    /* a GQA Q8_0 model: one call equals token by token; the context limit holds */
    test_prompt_vs_steps(q8, prompt, 12);
    test_context_full(f32);

    snprintf(args, sizeof args, "%s --type f32 --tied", common);
    if (make_model(tied, args)) {
        mf_model L;
        if (load(tied, &L)) {
            CHECK(L.m.output == L.m.tok_embd);
            mf_unload(&L);
        }
        float *t = run_prompt(tied, prompt, 12, &nv2);
        CHECK(t != NULL);
        free(t);
    }
    free(a);
    remove(f32), remove(f16), remove(q8), remove(tied);
    test_generated_qwen2(common, prompt);
}

int main(void)
{
    test_generated();
    const char *shared = tu_shared_dir();
    if (!shared) return tu_finish_without_shared("test_reference", "stories260K checks not run");
    char path[1024];
    uint32_t want[200];
    snprintf(path, sizeof path, "%s/models/stories260K/expected/greedy200_f32_ids.txt", shared);
    CHECK(read_ids(path, want, 200) == 200);
    test_stories_greedy(shared, "tinyllamas-stories-260k-f32.gguf", want);
    test_stories_greedy(shared, "stories260K-f32.v3.gguf", want);
    snprintf(path, sizeof path, "%s/models/stories260K/stories260K-f32.v3.gguf", shared);
    test_prompt_vs_steps(path, want, 40);
    test_context_full(path);
    test_stories_q8_0(shared, want);
    return tu_finish("test_reference");
}
