/* kernel_fixture.h — what the kernel test programs (test_kernels, test_kernel_attention)
 * share: a device with kernels, an arena reset per case, one command buffer, host-visible
 * buffers, and checks and timing helpers. A failed set-up step ends the program. */
#ifndef EMBER_KERNEL_FIXTURE_H
#define EMBER_KERNEL_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/gpu/kernels_attention.h"
#include "engine/gpu/kernels_linear.h"
#include "engine/gpu/kernels_rows.h"
#include "engine/kv_layout.h"
#include "testutil.h"

typedef struct kt_ctx {
    ember_vk *vk;
    ember_kernels *k;
    ember_vk_arena *arena;  /* per case: reset by kt_case_begin */
    ember_vk_cmd *cmd;
    ember_err err;
    const char *variant;
    int variant_index;      /* test_kernels: 0 is the reference of the cross-variant checks */
    float *alone[64];       /* test_kernels: per invariance case, outputs of tokens run alone
                               in variant 0 */
} kt_ctx;

/* A batch over a paged cache: sequences with scrambled block tables, and their tokens. */
typedef struct kt_batch {
    ember_attn_shape s;
    uint32_t n_blocks, n_seqs;  /* n_seqs <= 32 */
    uint32_t *table;            /* [n_seqs][max_blocks_per_seq] first, then unused blocks */
    uint32_t n_tok;
    uint32_t *pos, *seq;
} kt_batch;

/* Sequence q gets a chunk of chunk[q] tokens ending at position last[q], the sequences'
 * tokens interleaved as a scheduler's ragged batch may; blocks are a shuffled
 * permutation of the pool, so no sequence's blocks are contiguous. */
kt_batch kt_make_batch(tu_rng *r, ember_attn_shape s, uint32_t n_seqs, const uint32_t *last, const uint32_t *chunk);
void kt_free_batch(kt_batch *b);
/* Cache row of (sequence, position, kv head): rows are [block][kv_head][slot]. */
size_t kt_cache_row(const kt_batch *b, uint32_t seq, uint32_t pos, uint32_t kvh);
/* Attention of every token of b in double (causal, softmax scaled by 1/sqrt(head_dim)):
 * qkv rows as rope_store leaves them, K and V caches as values in double, want
 * [n_tok][n_heads][head_dim]. */
void kt_attention_ref(const kt_batch *b, const float *qkv, const double *kc, const double *vc, double *want);

/* The kernel variants each test runs: subgroup or Vulkan 1.2 core baseline, reads through
 * texel views or storage buffers. */
typedef struct kt_variant {
    const char *name;
    bool no_subgroup, no_texel;
} kt_variant;
extern const kt_variant kt_variants[4];

/* Opens the device (validation as EMBER_VALIDATION says) and the command buffer; false
 * when there is no Vulkan device (the caller skips). Other failures end the program. */
bool kt_open(kt_ctx *t);
/* Checks that the validation layer said nothing, then frees what kt_open made. */
void kt_close(kt_ctx *t);
/* Prints what failed with the last error and exits. */
void kt_die(kt_ctx *t, const char *what);
/* A fresh arena and a command buffer begun for the next case. */
void kt_case_begin(kt_ctx *t);
/* A host-visible buffer holding a copy of data (zeros when NULL). */
ember_vk_span kt_buf(kt_ctx *t, const void *data, size_t bytes);
/* Submits the case's commands and waits; a failure is a check failure. */
bool kt_submit(kt_ctx *t, const char *what);
/* Checks max |got - want| / max |want| < tol. */
void kt_check_close(const char *what, const float *got, const double *want, size_t n, double tol);
/* n uniform floats in [lo, hi), none of magnitude under 1e-3 (malloc'ed). */
float *kt_rand_floats(tu_rng *r, size_t n, float lo, float hi);
float kt_half_to_float(uint16_t h);
double kt_now_s(void);
/* qsort comparator for doubles. */
int kt_cmp_double(const void *a, const void *b);

#endif
