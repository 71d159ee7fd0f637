/* model_fixture.c — see model_fixture.h. */
#include "model_fixture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ember_status mf_load(const char *path, bool with_ref, mf_model *M, ember_err *err)
{
    memset(M, 0, sizeof *M);
    ember_status st = ember_gguf_open(path, &M->g, err);
    if (!st)
        st = ember_llama_load(M->g, &M->m, err);
    if (!st && with_ref)
        st = ember_ref_create(&M->m, &M->ref, err);
    return st;
}

bool mf_load_checked(const char *path, bool with_ref, mf_model *M)
{
    ember_err err = {{0}};
    ember_status st = mf_load(path, with_ref, M, &err);
    CHECKF(st == EMBER_OK, "%s: %s", path, err.msg);
    if (st)
        mf_unload(M);
    return st == EMBER_OK;
}

void mf_unload(mf_model *M)
{
    ember_forward_free(M->f);
    ember_gpu_model_free(M->gm);
    ember_ref_free(M->ref);
    ember_llama_free(&M->m);
    ember_gguf_close(M->g);
    memset(M, 0, sizeof *M);
}

float *mf_ref_logits(const ember_llama *m, const uint32_t *prompt, uint32_t n)
{
    ember_ref *r = NULL;
    ember_err err = {{0}};
    float *out = malloc((size_t)n * m->hp.n_vocab * sizeof *out);
    if (ember_ref_create(m, &r, &err) || ember_ref_forward(r, prompt, n, 0, out, 1, &err)) {
        CHECKF(0, "reference: %s", err.msg);
        free(out);
        out = NULL;
    }
    ember_ref_free(r);
    return out;
}

/* ---- on the GPU ------------------------------------------------------------------- */

ember_vk *mf_vk_open(ember_err *err)
{
    ember_vk_opts o = {.validation = tu_validation(), .discrete_memory = tu_memory_mode() == EMBER_MEMORY_DISCRETE};
    ember_vk *vk = NULL;
    return ember_vk_create(&o, &vk, err) == EMBER_OK ? vk : NULL;
}

void mf_vk_close(ember_vk *vk)
{
    char first[512] = "";
    uint32_t nv = ember_vk_validation_count(vk, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages; first: %s", nv, first);
    ember_vk_mem_stats ms;
    ember_vk_memory_stats(vk, &ms);
    if (ms.discrete) { /* the weights went through staging, step inputs were flushed */
        printf("discrete memory: %llu staged uploads, %llu flushes, %llu invalidations\n",
               (unsigned long long)ms.staged_uploads, (unsigned long long)ms.flushes,
               (unsigned long long)ms.invalidates);
        CHECK(ms.staged_uploads > 0 && ms.flushes > 0 && ms.invalidates > 0);
    }
    ember_vk_destroy(vk);
}

bool mf_gpu_open_opts(mf_model *M, ember_vk *vk, const char *path, const ember_gpu_model_opts *go,
                      const ember_forward_opts *o)
{
    ember_err err = {{0}};
    bool ok = mf_load(path, true, M, &err) == EMBER_OK &&
              ember_gpu_model_create_opts(vk, &M->m, go, &M->gm, &err) == EMBER_OK &&
              ember_forward_create(M->gm, o, &M->f, &err) == EMBER_OK;
    CHECKF(ok, "%s: %s", path, err.msg);
    return ok;
}

bool mf_gpu_open(mf_model *M, ember_vk *vk, const char *path, uint64_t max_part, const ember_forward_opts *o)
{
    ember_gpu_model_opts go = {.max_part_bytes = max_part};
    return mf_gpu_open_opts(M, vk, path, &go, o);
}

/* A tie may resolve either way: only the value at the GPU's pick must be the largest. */
static void check_argmax_rows(const float *logits, const uint32_t *am, uint32_t n, uint32_t nv)
{
    for (uint32_t i = 0; i < n; i++) {
        const float *row = logits + (size_t)i * nv;
        uint32_t best = 0;
        for (uint32_t j = 1; j < nv; j++)
            if (row[j] > row[best]) best = j;
        CHECKF(am[i] == best || row[am[i]] == row[best], "argmax %u vs %u", am[i], best);
    }
}

bool mf_gpu_run(mf_model *M, const uint32_t *bt, uint32_t slot, const uint32_t *toks, uint32_t n,
                uint32_t pos0, float *logits, bool check_argmax)
{
    uint32_t *buf = malloc(4 * (size_t)n * sizeof *buf);
    uint32_t *pos = buf, *seq = buf + n, *rows = buf + 2 * n, *am = buf + 3 * n;
    for (uint32_t i = 0; i < n; i++) {
        pos[i] = pos0 + i;
        seq[i] = slot;
        rows[i] = i;
    }
    ember_batch b = {n, toks, pos, seq, bt, n, rows};
    ember_err err = {{0}};
    ember_status s = ember_forward_run(M->f, &b, logits, check_argmax ? am : NULL, NULL, &err);
    CHECKF(s == EMBER_OK, "%s", err.msg);
    if (s == EMBER_OK && check_argmax)
        check_argmax_rows(logits, am, n, M->m.hp.n_vocab);
    free(buf);
    return s == EMBER_OK;
}

double mf_chunked_err(mf_model *M, const mf_chunked *c)
{
    uint32_t nv = M->m.hp.n_vocab, total = c->n_prompt + c->n_decode;
    uint32_t *toks = malloc(total * sizeof *toks);
    tu_rng rng = {c->seed};
    for (uint32_t i = 0; i < total; i++) toks[i] = 3 + (uint32_t)(tu_next(&rng) % (nv - 3));
    float *want = malloc((size_t)total * nv * sizeof *want), *got = malloc((size_t)c->chunk * nv * sizeof *got);
    ember_err err = {{0}};
    bool ok = ember_ref_forward(M->ref, toks, total, 0, want, 1, &err) == EMBER_OK;
    CHECKF(ok, "reference: %s", err.msg);
    double worst = 0;
    for (uint32_t p = 0; ok && p < total;) {
        uint32_t n = p < c->n_prompt ? (c->n_prompt - p < c->chunk ? c->n_prompt - p : c->chunk) : 1;
        ok = mf_gpu_run(M, c->bt, 0, toks + p, n, p, got, c->check_argmax);
        for (uint32_t i = 0; ok && i < n; i++)
            worst = fmax(worst, tu_rel_err(got + (size_t)i * nv, want + (size_t)(p + i) * nv, nv));
        p += n;
    }
    free(toks);
    free(want);
    free(got);
    return ok ? worst : -1;
}
