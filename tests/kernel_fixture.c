/* kernel_fixture.c — see kernel_fixture.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel_fixture.h"

const kt_variant kt_variants[4] = {{"subgroup+texel", false, false}, {"subgroup+storage", false, true},
                                   {"baseline+texel", true, false},  {"baseline+storage", true, true}};

bool kt_open(kt_ctx *t)
{
    ember_vk_opts vo = {.validation = tu_validation()};
    ember_status s = ember_vk_create(&vo, &t->vk, &t->err);
    if (s == EMBER_ERR_NO_DEVICE) return false;
    if (s != EMBER_OK) kt_die(t, "ember_vk_create");
    if (ember_vk_cmd_create(t->vk, &t->cmd, &t->err) != EMBER_OK) kt_die(t, "cmd_create");
    return true;
}

void kt_close(kt_ctx *t)
{
    char first[512] = "";
    uint32_t nv = ember_vk_validation_count(t->vk, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages, first: %s", nv, first);
    ember_vk_arena_destroy(t->arena);
    ember_vk_cmd_destroy(t->cmd);
    ember_vk_destroy(t->vk);
}

void kt_die(kt_ctx *t, const char *what)
{
    fprintf(stderr, "%s failed: %s\n", what, t->err.msg);
    exit(1);
}

void kt_case_begin(kt_ctx *t)
{
    ember_vk_arena_destroy(t->arena);
    if (ember_vk_arena_create(t->vk, &t->arena, &t->err) != EMBER_OK) kt_die(t, "arena");
    if (ember_vk_cmd_begin(t->cmd, &t->err) != EMBER_OK) kt_die(t, "cmd_begin");
}

ember_vk_span kt_buf(kt_ctx *t, const void *data, size_t bytes)
{
    ember_vk_span s;
    if (ember_vk_alloc(t->arena, bytes ? bytes : 4, EMBER_VK_MEM_HOST, &s, &t->err) != EMBER_OK) kt_die(t, "alloc");
    if (data) memcpy(s.host, data, bytes);
    else memset(s.host, 0, bytes);
    return s;
}

bool kt_submit(kt_ctx *t, const char *what)
{
    ember_status s = ember_vk_cmd_submit(t->cmd, &t->err);
    CHECKF(s == EMBER_OK, "%s: submit: %s", what, t->err.msg);
    return s == EMBER_OK;
}

void kt_check_close(const char *what, const float *got, const double *want, size_t n, double tol)
{
    double num = 0, den = 1e-30;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= num)) num = d, worst = i;
        if (fabs(want[i]) > den) den = fabs(want[i]);
    }
    CHECKF(num / den < tol, "%s: rel err %.3g at %zu (got %g want %g)", what, num / den, worst, got[worst],
           want[worst]);
}

float *kt_rand_floats(tu_rng *r, size_t n, float lo, float hi)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        x[i] = tu_uniform(r, lo, hi);
        if (fabsf(x[i]) < 1e-3f) x[i] = 0.5f;
    }
    return x;
}

float kt_half_to_float(uint16_t h)
{
    uint32_t e = h >> 10 & 31, m = h & 1023;
    float v = e ? ldexpf((float)(m | 1024), (int)e - 25) : ldexpf((float)m, -24);
    return h >> 15 ? -v : v;
}

double kt_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int kt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

kt_batch kt_make_batch(tu_rng *r, ember_attn_shape s, uint32_t n_seqs, const uint32_t *last, const uint32_t *chunk)
{
    kt_batch b = {s, s.max_blocks_per_seq * n_seqs + 3, n_seqs, NULL, 0, NULL, NULL};
    uint32_t *perm = malloc(sizeof(uint32_t) * b.n_blocks);
    for (uint32_t i = 0; i < b.n_blocks; i++) perm[i] = i;
    for (uint32_t i = b.n_blocks - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(tu_next(r) % (i + 1)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    b.table = perm;
    for (uint32_t q = 0; q < n_seqs; q++) b.n_tok += chunk[q];
    b.pos = malloc(sizeof(uint32_t) * b.n_tok);
    b.seq = malloc(sizeof(uint32_t) * b.n_tok);
    uint32_t done[32] = {0}, t = 0;
    while (t < b.n_tok)
        for (uint32_t q = 0; q < n_seqs; q++)
            if (done[q] < chunk[q]) {
                b.seq[t] = q;
                b.pos[t++] = last[q] + 1 - chunk[q] + done[q]++;
            }
    return b;
}

void kt_free_batch(kt_batch *b)
{
    free(b->table);
    free(b->pos);
    free(b->seq);
}

size_t kt_cache_row(const kt_batch *b, uint32_t seq, uint32_t pos, uint32_t kvh)
{
    const ember_attn_shape *s = &b->s;
    uint32_t blk = b->table[seq * s->max_blocks_per_seq + pos / s->block_size];
    return ((size_t)blk * s->n_kv_heads + kvh) * s->block_size + pos % s->block_size;
}

void kt_attention_ref(const kt_batch *b, const float *qkv, const double *kc, const double *vc, double *want)
{
    const ember_attn_shape *s = &b->s;
    uint32_t D = s->head_dim, w = (s->n_heads + 2 * s->n_kv_heads) * D, group = s->n_heads / s->n_kv_heads;
    double *p = NULL, scale = s->attn_scale > 0 ? s->attn_scale : 1 / sqrt((double)D);
    for (uint32_t i = 0; i < b->n_tok; i++) {
        /* positions lo .. pos[i]: the window's on a local layer */
        uint32_t n = b->pos[i] + 1, lo = s->window && n > s->window ? n - s->window : 0;
        p = realloc(p, sizeof(double) * n);
        for (uint32_t h = 0; h < s->n_heads; h++) {
            const float *q = qkv + (size_t)i * w + h * D;
            double m = -INFINITY, l = 0;
            for (uint32_t j = lo; j < n; j++) {
                const double *k = kc + kt_cache_row(b, b->seq[i], j, h / group) * D;
                double d = 0;
                for (uint32_t e = 0; e < D; e++) d += (double)q[e] * k[e];
                p[j] = d * scale;
                if (s->softcap > 0) p[j] = s->softcap * tanh(p[j] / s->softcap);
                m = fmax(m, p[j]);
            }
            for (uint32_t j = lo; j < n; j++) l += p[j] = exp(p[j] - m);
            for (uint32_t e = 0; e < D; e++) {
                double o = 0;
                for (uint32_t j = lo; j < n; j++) o += p[j] * vc[kt_cache_row(b, b->seq[i], j, h / group) * D + e];
                want[((size_t)i * s->n_heads + h) * D + e] = o / l;
            }
        }
    }
    free(p);
}
