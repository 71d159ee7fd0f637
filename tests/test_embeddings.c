/* test_embeddings.c — ember_request_desc.on_embedding through the public API, on qwen2
 * test models (the architecture most open embedding models use) declaring each pooling:
 *  - every embedding has unit L2 norm and the model's dim;
 *  - the same text gives the same bits alone, among other texts, beside a request that
 *    generates, in small prompt chunks, and twice in a row (no prefix blocks reused);
 *  - the Vulkan engine agrees with the plain-C reference (the CPU backend);
 *  - the poolings mean what they say: cls of a text is the last-token embedding of its
 *    first token alone, mean and last of a one-token prompt are that token's, and mean
 *    differs from last on longer text; a file without pooling_type gives last; a
 *    reranker's (rank) is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "engine_fixture.h"
#include "testutil.h"

#define DIM 64
#define N_TEXTS 5

typedef struct emb {
    float v[DIM];
    uint32_t dim;
    int calls;
    ember_request_metrics m;
    ember_finish why;
    int done;
} emb;

static void on_embedding(void *user, ember_request_id id, const float *v, uint32_t dim)
{
    emb *e = user;
    e->calls++;
    e->dim = dim;
    memcpy(e->v, v, (dim < DIM ? dim : DIM) * sizeof *v);
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    emb *e = user;
    e->why = why;
    e->m = *m;
    e->done++;
}

static const char *const texts[N_TEXTS] = {
    "The cat sat on the mat and looked at the moon for a long while.",
    "hello",
    "A much longer text about dragons, castles and the brave knight who went out to find them all.",
    "short one",
    "Numbers 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30",
};

static ember_request_desc desc(const char *text, ember_pooling p, emb *out)
{
    memset(out, 0, sizeof *out);
    return (ember_request_desc){.prompt = text, .on_embedding = on_embedding, .on_done = on_done, .pooling = p,
                                .user = out};
}

static void drain(ember_engine *e)
{
    ember_status s;
    while ((s = ember_engine_step(e)) == EMBER_OK) {}
    CHECKF(s == EMBER_IDLE, "step: %s", ember_engine_error(e));
}

/* The embedding of text alone on a fresh engine of m (opts o). */
static void embed_one(ember_model *m, ember_engine_opts o, const char *text, const uint32_t *ids, size_t n,
                      ember_pooling p, emb *out)
{
    ember_engine *e = ef_engine(m, o);
    if (!e) return;
    ember_request_desc d = desc(text, p, out);
    d.tokens = ids, d.n_tokens = n;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    CHECKF(out->calls == 1 && out->done == 1 && out->why == EMBER_FINISH_LENGTH && out->m.n_gen == 0,
           "%d embeddings, %d done, why %d", out->calls, out->done, (int)out->why);
    ember_engine_destroy(e);
}

static double norm(const float *v, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++) s += (double)v[i] * v[i];
    return sqrt(s);
}

static double max_diff(const float *a, const float *b, uint32_t n)
{
    double d = 0;
    for (uint32_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

/* Every text embedded together with a request that generates, in chunks of at most 8
 * prompt tokens, the first text twice: the same bits as alone. */
static void check_batch(ember_model *m, ember_pooling p, const emb alone[N_TEXTS])
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 8, .max_batch_tokens = 8});
    if (!e) return;
    ef_result gen;
    uint32_t prompt[40];
    for (uint32_t i = 0; i < 40; i++) prompt[i] = 5 + i;
    ember_request_desc g = ef_desc(prompt, 40, 20, &gen);
    CHECK(ember_submit(e, &g, NULL) == EMBER_OK);
    ember_engine_step(e);
    emb got[N_TEXTS + 1];
    for (int i = 0; i <= N_TEXTS; i++) {
        ember_request_desc d = desc(texts[i % N_TEXTS], p, &got[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    drain(e);
    CHECK(gen.done == 1 && gen.n == 20);
    for (int i = 0; i <= N_TEXTS; i++) {
        const emb *a = &alone[i % N_TEXTS];
        CHECKF(got[i].calls == 1 && memcmp(got[i].v, a->v, sizeof a->v) == 0,
               "pooling %d, text %d: batched differs from alone by %g", (int)p, i, max_diff(got[i].v, a->v, DIM));
        CHECK(got[i].m.n_cached == 0); /* every row computed, even for the repeated text */
    }
    ember_engine_destroy(e);
}

/* One model declaring pooling p: unit norms, batch invariance, the CPU reference. */
static void check_model(const char *path, ember_model *cpu, ember_pooling p, emb alone[N_TEXTS])
{
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = ef_load(path, &mo);
    if (!m) return;
    ember_model_info info;
    ember_model_get_info(m, &info);
    CHECKF(info.pooling == p, "the file's pooling %d, expected %d", (int)info.pooling, (int)p);
    double worst = 0;
    for (int i = 0; i < N_TEXTS; i++) {
        embed_one(m, (ember_engine_opts){0}, texts[i], NULL, 0, EMBER_POOLING_DEFAULT, &alone[i]);
        CHECKF(alone[i].dim == DIM && fabs(norm(alone[i].v, DIM) - 1) < 1e-5, "dim %u, norm %g", alone[i].dim,
               norm(alone[i].v, DIM));
        emb ref;
        embed_one(cpu, (ember_engine_opts){0}, texts[i], NULL, 0, p, &ref);
        worst = fmax(worst, max_diff(alone[i].v, ref.v, DIM));
    }
    printf("pooling %d: Vulkan vs the plain-C reference, largest difference %.3g\n", (int)p, worst);
    CHECKF(worst < 1e-4, "pooling %d: the GPU's embeddings differ from the reference by %g", (int)p, worst);
    check_batch(m, p, alone);
    ember_model_free(m);
}

/* What the poolings mean, on the reference (any backend would do). */
static void check_meanings(ember_model *cpu, const emb mean[N_TEXTS], const emb cls[N_TEXTS],
                           const emb last[N_TEXTS])
{
    uint32_t ids[64];
    size_t n = 0;
    CHECK(ember_tokenize(cpu, texts[0], strlen(texts[0]), 1, ids, 64, &n) == EMBER_OK && n > 2);
    emb first, one_mean;
    embed_one(cpu, (ember_engine_opts){0}, NULL, ids, 1, EMBER_POOLING_LAST, &first);
    embed_one(cpu, (ember_engine_opts){0}, NULL, ids, 1, EMBER_POOLING_MEAN, &one_mean);
    CHECKF(max_diff(cls[0].v, first.v, DIM) < 1e-4, "cls is the first token's: %g", max_diff(cls[0].v, first.v, DIM));
    CHECK(max_diff(one_mean.v, first.v, DIM) < 1e-6); /* one token: its mean is itself */
    emb whole;
    embed_one(cpu, (ember_engine_opts){0}, NULL, ids, n, EMBER_POOLING_LAST, &whole);
    CHECK(max_diff(whole.v, last[0].v, DIM) < 1e-4);
    CHECK(max_diff(mean[0].v, last[0].v, DIM) > 1e-2 && max_diff(mean[2].v, mean[3].v, DIM) > 1e-2);
}

int main(void)
{
    char base[512], path[4][600];
    snprintf(base, sizeof base, "%s/embeddings_model", tu_tmp_dir());
    const char *common = "--arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256";
    for (int p = 0; p < 4; p++) { /* none declared, mean, cls, last */
        char args[256];
        snprintf(path[p], sizeof path[p], "%s_%d.gguf", base, p);
        if (p) snprintf(args, sizeof args, "%s --pooling %d", common, p);
        else snprintf(args, sizeof args, "%s", common); /* no pooling_type key */
        CHECK(tu_make_model(path[p], args));
    }
    ember_model_opts co = {.backend = EMBER_BACKEND_CPU};
    ember_model *cpu = NULL;
    CHECKF(ember_model_load(path[1], &co, &cpu) == EMBER_OK, "%s", ember_model_error(cpu));
    if (!cpu) return tu_finish("test_embeddings");
    static emb alone[4][N_TEXTS];
    ember_model_opts probe = {0};
    ember_model *gpu = ef_load(path[1], &probe);
    if (!gpu) return tu_skip("cannot load the test model on a Vulkan device");
    ember_model_free(gpu);
    check_model(path[1], cpu, EMBER_POOLING_MEAN, alone[1]);
    check_model(path[2], cpu, EMBER_POOLING_CLS, alone[2]);
    check_model(path[3], cpu, EMBER_POOLING_LAST, alone[3]);
    check_model(path[0], cpu, EMBER_POOLING_LAST, alone[0]); /* "none": the default */
    for (int i = 0; i < N_TEXTS; i++) CHECK(memcmp(alone[0][i].v, alone[3][i].v, sizeof alone[0][i].v) == 0);
    check_meanings(cpu, alone[1], alone[2], alone[3]);

    char rank[600];
    snprintf(rank, sizeof rank, "%s_rank.gguf", base);
    char args[256];
    snprintf(args, sizeof args, "%s --pooling 4", common);
    CHECK(tu_make_model(rank, args));
    ember_model *rm = NULL;
    CHECK(ember_model_load(rank, &co, &rm) == EMBER_OK);
    ember_engine *e = rm ? ef_engine(rm, (ember_engine_opts){0}) : NULL;
    emb r;
    ember_request_desc d = desc("hello", EMBER_POOLING_DEFAULT, &r);
    CHECK(e && ember_submit(e, &d, NULL) == EMBER_ERR_UNSUPPORTED && r.done == 0);
    ember_engine_destroy(e);
    ember_model_free(rm);
    ember_model_free(cpu);
    return tu_finish("test_embeddings");
}
