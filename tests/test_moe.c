/* test_moe.c — a mixture of experts on the GPU (docs/models.md, "Mixtures of experts";
 * docs/kernels.md), on models made by `ember make-test-model`:
 *  - routing: for every token of a 45-token prompt prefilled in chunks of 20 and of 8
 *    decode steps after it, and every layer, the GPU picks the experts the CPU reference
 *    picks, in the same order (qwen3moe F32, Q8_0, Q4_K_M and MXFP4 experts, Mixtral F32,
 *    gpt-oss with MXFP4 experts, attention sinks and biases, with and without split-K
 *    attention), and its logits are the reference's (F32 1e-4, quantized 1e-3); the counts
 *    it keeps agree with its picks; the Q8_0 case again with its expert stacks in 6 and in
 *    12 bindings a layer (indirect dispatches, then direct ones);
 *  - batch invariance: 4 sequences prefilled together in one ragged step and decoded
 *    together give the logits, bit for bit, that each gives alone;
 *  - what a step reads: with profiling on, a step of 16 decode tokens (16 sequences) shows
 *    each layer's grouped products reading the bytes of the experts the step chose, each
 *    once, and fewer than all its experts' bytes.
 * At subgroups 4 and 16 (test_moe_sg4, _sg16): the Q8_0, MXFP4 and gpt-oss routing cases
 * and batch invariance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_fixture.h"

#define CTX 128
#define BS 16
#define MAXB (CTX / BS)
#define MAXK 8

static bool make_model(const char *name, const char *args, char *path, size_t cap)
{
    char all[1024];
    snprintf(path, cap, "%s/moe_%s.gguf", tu_tmp_dir(), name);
    snprintf(all, sizeof all, "--layers 2 --heads 8 --kv-heads 2 --vocab 512 --ctx %d --seed 7 %s", CTX, args);
    return tu_make_model(path, all);
}

/* Each token of the last step: its experts on the GPU against want (rows row0.. of the
 * reference's picks, cap rows a layer), and the counts against those experts. */
static uint32_t check_step_picks(mf_model *M, const uint32_t *want, uint32_t cap, uint32_t row0, uint32_t n)
{
    const ember_hparams *hp = &M->m.hp;
    uint32_t k = hp->n_expert_used, bad = 0;
    uint32_t *got = malloc((size_t)n * k * sizeof *got), *counts = malloc(hp->n_expert * sizeof *counts);
    for (uint32_t l = 0; l < hp->n_layers; l++) {
        ember_err err = {{0}};
        if (ember_forward_expert_picks(M->f, l, got, counts, &err) != EMBER_OK) {
            CHECKF(false, "layer %u: %s", l, err.msg);
            bad++;
            continue;
        }
        bad += memcmp(got, want + ((size_t)l * cap + row0) * k, (size_t)n * k * sizeof *got) != 0;
        for (uint32_t e = 0; e < hp->n_expert; e++) {
            uint32_t c = 0;
            for (uint32_t p = 0; p < n * k; p++) c += got[p] == e;
            CHECKF(c == counts[e], "layer %u expert %u: counted %u, picked %u times", l, e, counts[e], c);
        }
    }
    free(got);
    free(counts);
    return bad;
}

/* The prompt in chunks then decode steps, every step's picks and logits against one
 * reference pass over the whole sequence; split: attention in chunks of 32 positions, the
 * decode rows' split over workgroups and merged (as on a GPU); max_part (0: none): each
 * weight binding at most that many bytes, so that an expert stack is several parts. */
static void test_picks_opts(ember_vk *vk, const char *name, const char *args, double tol, bool split,
                            uint64_t max_part, uint32_t want_parts)
{
    enum { N = 45, CHUNK = 20, DEC = 8, TOTAL = N + DEC };
    char path[512];
    if (!make_model(name, args, path, sizeof path)) return;
    ember_forward_opts o = {.max_tokens = CHUNK, .max_seqs = 1, .n_blocks = MAXB + 3, .block_size = BS,
                            .max_blocks_per_seq = MAXB};
    uint32_t bt[MAXB], toks[TOTAL];
    for (uint32_t i = 0; i < MAXB; i++) bt[i] = (5 * i + 3) % (MAXB + 3);
    mf_model M;
    ember_gpu_model_opts go = {.attn_split = split ? EMBER_ATTN_SPLIT_ON : EMBER_ATTN_SPLIT_OFF,
                               .attn_chunk = split ? 32 : 0, .max_part_bytes = max_part};
    if (!mf_gpu_open_opts(&M, vk, path, &go, &o)) {
        mf_unload(&M);
        return;
    }
    const ember_hparams *hp = &M.m.hp;
    uint32_t nv = hp->n_vocab, k = hp->n_expert_used;
    const ember_gpu_layer *L0 = &M.gm->layers[0];
    uint32_t parts = L0->gate_up_exps.n_parts + L0->down_exps.n_parts;
    CHECKF(parts == want_parts, "%s: %llu-byte parts made %u expert parts a layer, not %u", name,
           (unsigned long long)max_part, parts, want_parts);
    CHECKF(hp->n_expert >= 8 && k >= 2 && k <= MAXK, "%s: %u experts, %u used", name, hp->n_expert, k);
    tu_rng rng = {31};
    for (uint32_t i = 0; i < TOTAL; i++) toks[i] = 3 + (uint32_t)(tu_next(&rng) % (nv - 3));
    uint32_t *want = calloc((size_t)hp->n_layers * TOTAL * k, sizeof *want);
    float *ref = malloc((size_t)TOTAL * nv * sizeof *ref), *got = malloc((size_t)CHUNK * nv * sizeof *got);
    ember_err err = {{0}};
    ember_ref_keep_picks(M.ref, want, TOTAL);
    bool ok = ember_ref_forward(M.ref, toks, TOTAL, 0, ref, 1, &err) == EMBER_OK;
    ember_ref_keep_picks(M.ref, NULL, 0);
    CHECKF(ok, "reference: %s", err.msg);
    ember_forward_keep_picks(M.f, true);
    uint32_t bad = 0, steps = 0;
    double worst = 0;
    for (uint32_t p = 0; ok && p < TOTAL; steps++) {
        uint32_t n = p < N ? (N - p < CHUNK ? N - p : CHUNK) : 1;
        ok = mf_gpu_run(&M, bt, 0, toks + p, n, p, got, false);
        if (!ok) break;
        bad += check_step_picks(&M, want, TOTAL, p, n);
        for (uint32_t i = 0; i < n; i++)
            worst = fmax(worst, tu_rel_err(got + (size_t)i * nv, ref + (size_t)(p + i) * nv, nv));
        p += n;
    }
    printf("%-12s (%s%s, %u expert parts a layer): %u steps x %u layers, %u with other picks than the reference; "
           "logits max rel err %.2e\n", name, args, split ? ", split-K attention" : "", parts, steps, hp->n_layers, bad,
           worst);
    CHECKF(ok && bad == 0, "%s: %u step-layers pick other experts than the reference", name, bad);
    CHECKF(ok && worst < tol, "%s: rel err %.3e", name, worst);
    free(want);
    free(ref);
    free(got);
    mf_unload(&M);
    remove(path);
}

static void test_picks(ember_vk *vk, const char *name, const char *args, double tol)
{
    test_picks_opts(vk, name, args, tol, false, 0, 2);
}

/* One step of a ragged batch: sequence s contributes toks[s][p0[s] .. p0[s] + n[s]) at
 * those positions in slot s; logits of every row. */
typedef struct seq_set {
    uint32_t n_seq;
    const uint32_t *bt;           /* [slot][MAXB] */
    uint32_t toks[16][40];
} seq_set;

static bool run_ragged(mf_model *M, const seq_set *S, const uint32_t *slots, uint32_t n_slots, const uint32_t *p0,
                       const uint32_t *n, float *logits)
{
    uint32_t tok[128], pos[128], seq[128], rows[128], T = 0;
    for (uint32_t i = 0; i < n_slots; i++)
        for (uint32_t j = 0; j < n[i]; j++, T++) {
            tok[T] = S->toks[slots[i]][p0[i] + j];
            pos[T] = p0[i] + j;
            seq[T] = slots[i];
            rows[T] = T;
        }
    ember_batch b = {.n_tokens = T, .tokens = tok, .pos = pos, .seq = seq, .block_tables = S->bt, .n_logits = T,
                     .logit_rows = rows};
    ember_err err = {{0}};
    ember_status s = ember_forward_run(M->f, &b, logits, NULL, NULL, &err);
    CHECKF(s == EMBER_OK, "step: %s", err.msg);
    return s == EMBER_OK;
}

/* 4 sequences of different lengths: alone (prefill, then DEC steps), then together (one
 * prefill step of all 4, then DEC steps of 4 tokens); every row's logits must match. */
static void test_invariance(ember_vk *vk, const char *name, const char *args)
{
    enum { NS = 4, DEC = 4, ROWS = 64 };
    static const uint32_t plen[NS] = {7, 13, 5, 10};
    char path[512];
    if (!make_model(name, args, path, sizeof path)) return;
    static uint32_t bt[NS * MAXB];
    for (uint32_t i = 0; i < NS * MAXB; i++) bt[i] = i;
    ember_forward_opts o = {.max_tokens = ROWS, .max_seqs = NS, .n_blocks = NS * MAXB, .block_size = BS,
                            .max_blocks_per_seq = MAXB};
    mf_model M;
    seq_set S = {.n_seq = NS, .bt = bt};
    tu_rng rng = {77};
    for (uint32_t s = 0; s < NS; s++)
        for (uint32_t i = 0; i < 40; i++) S.toks[s][i] = 3 + (uint32_t)(tu_next(&rng) % 509);
    if (!mf_gpu_open(&M, vk, path, 0, &o)) {
        mf_unload(&M);
        return;
    }
    uint32_t nv = M.m.hp.n_vocab;
    /* alone[s][r]: row r of sequence s (prompt rows, then one per decode step) */
    float *alone = malloc((size_t)NS * 40 * nv * sizeof *alone), *step = malloc((size_t)ROWS * nv * sizeof *step);
    bool ok = true;
    for (uint32_t s = 0; ok && s < NS; s++) {
        uint32_t zero = 0;
        ok = run_ragged(&M, &S, &s, 1, &zero, &plen[s], alone + (size_t)s * 40 * nv);
        for (uint32_t d = 0; ok && d < DEC; d++) {
            uint32_t p = plen[s] + d, one = 1;
            ok = run_ragged(&M, &S, &s, 1, &p, &one, alone + ((size_t)s * 40 + p) * nv);
        }
    }
    uint32_t slots[NS] = {0, 1, 2, 3}, p0[NS] = {0}, n[NS], differ = 0, compared = 0;
    memcpy(n, plen, sizeof n);
    ok = ok && run_ragged(&M, &S, slots, NS, p0, n, step);
    for (uint32_t s = 0, r = 0; ok && s < NS; r += plen[s], s++, compared += plen[s - 1])
        differ += memcmp(step + (size_t)r * nv, alone + (size_t)s * 40 * nv, (size_t)plen[s] * nv * sizeof *step) != 0;
    for (uint32_t d = 0; ok && d < DEC; d++) {
        for (uint32_t s = 0; s < NS; s++) p0[s] = plen[s] + d, n[s] = 1;
        ok = run_ragged(&M, &S, slots, NS, p0, n, step);
        for (uint32_t s = 0; ok && s < NS; s++, compared++)
            differ += memcmp(step + (size_t)s * nv, alone + ((size_t)s * 40 + p0[s]) * nv, nv * sizeof *step) != 0;
    }
    printf("%-12s batch invariance: %u rows (4 sequences, prefilled together, %d decode steps of 4), "
           "%u differ from the sequence alone\n", name, compared, DEC, differ);
    CHECKF(ok && compared == 35 + NS * DEC && differ == 0, "%s: %u of %u rows differ", name, differ, compared);
    free(alone);
    free(step);
    mf_unload(&M);
    remove(path);
}

/* One step of 16 decode tokens, profiled: each layer's grouped products (its linear_moe
 * dispatches, gate|up's parts then down's) must read the bytes of the experts its tokens
 * chose, once each. */
static void test_bytes_read(ember_vk *vk, const char *name, const char *args)
{
    enum { NS = 16 };
    char path[512];
    if (!make_model(name, args, path, sizeof path)) return;
    static uint32_t bt[NS * 2];
    for (uint32_t i = 0; i < NS * 2; i++) bt[i] = i;
    ember_forward_opts o = {.max_tokens = NS, .max_seqs = NS, .n_blocks = NS * 2, .block_size = BS,
                            .max_blocks_per_seq = 2};
    mf_model M;
    if (!mf_gpu_open(&M, vk, path, 0, &o)) {
        mf_unload(&M);
        return;
    }
    const ember_hparams *hp = &M.m.hp;
    const ember_gpu_layer *L0 = &M.gm->layers[0];
    ember_err err = {{0}};
    uint32_t tok[NS], pos[NS], seq[NS], rows[NS];
    tu_rng rng = {5};
    for (uint32_t i = 0; i < NS; i++) tok[i] = 3 + (uint32_t)(tu_next(&rng) % 509), pos[i] = 0, seq[i] = i, rows[i] = i;
    ember_batch b = {.n_tokens = NS, .tokens = tok, .pos = pos, .seq = seq, .block_tables = bt, .n_logits = NS,
                     .logit_rows = rows};
    float *logits = malloc((size_t)NS * hp->n_vocab * sizeof *logits);
    bool ok = ember_forward_set_profiling(M.f, true, &err) == EMBER_OK &&
              ember_forward_run(M.f, &b, logits, NULL, NULL, &err) == EMBER_OK;
    CHECKF(ok, "%s", err.msg);
    const ember_vk_dispatch_time *d = NULL;
    uint32_t nb = 0;
    double gpu_ns = 0;
    uint32_t nd = ok ? ember_forward_profile(M.f, &d, &nb, &gpu_ns) : 0;
    CHECKF(!ok || nd > 0, "no profile (timestamps?)");
    /* one expert's gate|up and down */
    uint64_t expert_bytes = ember_gpu_weight_bytes(L0->gate_up_exps.parts[0].type, L0->gate_up_exps.expert_rows,
                                          L0->gate_up_exps.cols) +
                   ember_gpu_weight_bytes(L0->down_exps.parts[0].type, L0->down_exps.expert_rows, L0->down_exps.cols);
    uint32_t per_layer = L0->gate_up_exps.n_parts + L0->down_exps.n_parts, seen = 0, l = 0, in_layer = 0;
    uint64_t bytes = 0;
    uint32_t *counts = malloc(hp->n_expert * sizeof *counts);
    for (uint32_t i = 0; i < nd; i++) {
        if (strncmp(d[i].name, "linear_moe", 10) != 0) continue;
        bytes += d[i].bytes;
        seen++;
        if (++in_layer < per_layer) continue;
        uint32_t chosen = 0;
        CHECKF(ember_forward_expert_picks(M.f, l, NULL, counts, &err) == EMBER_OK, "%s", err.msg);
        for (uint32_t e = 0; e < hp->n_expert; e++) chosen += counts[e] > 0;
        printf("%-12s step of %d decode tokens, layer %u: %u of %u experts chosen; grouped products read %llu bytes "
               "(%u x %llu; all experts: %llu)\n", name, NS, l, chosen, hp->n_expert, (unsigned long long)bytes, chosen,
               (unsigned long long)expert_bytes, (unsigned long long)(expert_bytes * hp->n_expert));
        CHECKF(bytes == chosen * expert_bytes, "layer %u: %llu bytes read, %u experts chosen of %llu bytes", l,
               (unsigned long long)bytes, chosen, (unsigned long long)expert_bytes);
        CHECKF(chosen < hp->n_expert, "layer %u: every expert chosen: the test shows nothing", l);
        bytes = 0, in_layer = 0, l++;
    }
    CHECKF(!ok || seen == hp->n_layers * per_layer, "%u grouped products in the profile, %u layers", seen,
           hp->n_layers);
    free(counts);
    free(logits);
    mf_unload(&M);
    remove(path);
}

int main(void)
{
    ember_err err = {0};
    ember_vk *vk = mf_vk_open(&err);
    if (!vk) return tu_skip(err.msg);
    static const char q3[] = "--arch qwen3moe --dim 256 --ffn 512 --head-dim 32 --experts 16 --experts-used 4 "
                             "--expert-ffn 256";
    char a[512];
    /* A repeat at another subgroup size (tu_subgroup_repeat) checks what the lanes change:
     * the grouped product's combine, for one float and one block type; the routing and the
     * decoders are the same code at every size. */
    bool all = !tu_subgroup_repeat();
    snprintf(a, sizeof a, "%s --type f32", q3);
    if (all) test_picks(vk, "qwen3moe", a, 1e-4);
    snprintf(a, sizeof a, "%s --type q8_0", q3);
    test_picks(vk, "qwen3moe_q8", a, 1e-3);
    snprintf(a, sizeof a, "%s --type q4_k_m", q3);
    if (all) test_picks(vk, "qwen3moe_q4k", a, 1e-3);
    snprintf(a, sizeof a, "%s --type mxfp4_moe", q3);
    test_picks(vk, "qwen3moe_mx", a, 1e-3);
    if (all)
        test_picks(vk, "mixtral", "--arch mixtral --dim 128 --ffn 256 --experts 8 --experts-used 2 --type f32", 1e-4);
    /* gpt-oss: biased router (softmax over the 4), biased clamped-SwiGLU experts in MXFP4,
     * sinks (merged one-pass, in chunks, and split-K), window 8 on every other layer */
    static const char oss[] = "--arch gpt-oss --dim 128 --ffn 256 --experts 16 --experts-used 4 --expert-ffn 128 "
                              "--key attention.sliding_window=8 --type mxfp4_moe";
    test_picks_opts(vk, "gpt-oss", oss, 1e-3, false, 0, 2);
    test_picks_opts(vk, "gpt-oss", oss, 1e-3, true, 0, 2);
    /* Expert stacks in several bindings: 4 gate|up parts and 2 down parts of 16 Q8_0
     * experts (6 dispatches, moe_route.comp's counts: indirect), then 8 and 4 (more than
     * EMBER_MOE_MAX_ARGS: direct, a workgroup row per chosen expert in every part). */
    snprintf(a, sizeof a, "%s --type q8_0", q3);
    test_picks_opts(vk, "qwen3moe_q8", a, 1e-3, false, 4 * 139264, 6);
    test_picks_opts(vk, "qwen3moe_q8", a, 1e-3, false, 2 * 139264, 12);
    snprintf(a, sizeof a, "%s --type q8_0", q3);
    test_invariance(vk, "qwen3moe_q8", a);
    /* 64 experts, 2 a token: 16 tokens choose at most 32 */
    if (all) test_bytes_read(vk, "qwen3moe_64",
                    "--arch qwen3moe --dim 128 --ffn 256 --head-dim 32 --experts 64 --experts-used 2 "
                    "--expert-ffn 64 --type q8_0");
    mf_vk_close(vk);
    return tu_finish("test_moe");
}
