/* gen.c — makes the quantization reference vectors of tests/data/quant with llama.cpp's
 * own quantizers and dequantizers (libggml-base from npm node-llama-cpp; make.sh builds
 * and runs this). For each type: the rows of input.c quantized as llama.cpp writes them
 * without an importance matrix (ggml_quantize_chunk, what llama_model_quantize calls),
 * and a line of ref.txt with FNV-1a hashes of those bytes and of the floats ggml's
 * dequantizer makes of them. Only the hashes are kept: test_quant_types makes the bytes
 * with Ember and checks them against the first.
 *
 *     gen OUT_DIR
 *
 * ggml's functions are declared here by hand: their header (ggml-quants.h) is internal
 * to ggml. Blocks are passed as bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input.h"

typedef void (*dequantize_fn)(const void *x, float *y, int64_t k);

size_t ggml_quantize_chunk(int type, const float *src, void *dst, int64_t start, int64_t nrows, int64_t n_per_row,
                           const float *imatrix);
#define DECL(q) void dequantize_row_##q(const void *x, float *y, int64_t k);
DECL(q4_0) DECL(q4_1) DECL(q5_0) DECL(q5_1) DECL(q8_0)
DECL(q2_K) DECL(q3_K) DECL(q4_K) DECL(q5_K) DECL(q6_K)
DECL(iq4_nl) DECL(iq4_xs) DECL(mxfp4)
void ggml_fp16_to_fp32_row(const void *x, float *y, int64_t n);
void ggml_bf16_to_fp32_row(const void *x, float *y, int64_t n);

#define Q(name, id, block, bytes, q) {name, id, block, bytes, (dequantize_fn)dequantize_row_##q}

static const struct type {
    const char *name;
    int id, block, bytes;
    dequantize_fn dequantize;
} TYPES[] = {
    {"F16", 1, 1, 2, ggml_fp16_to_fp32_row},
    {"BF16", 30, 1, 2, ggml_bf16_to_fp32_row},
    Q("Q4_0", 2, 32, 18, q4_0), Q("Q4_1", 3, 32, 20, q4_1), Q("Q5_0", 6, 32, 22, q5_0),
    Q("Q5_1", 7, 32, 24, q5_1), Q("Q8_0", 8, 32, 34, q8_0),
    Q("Q2_K", 10, 256, 84, q2_K), Q("Q3_K", 11, 256, 110, q3_K), Q("Q4_K", 12, 256, 144, q4_K),
    Q("Q5_K", 13, 256, 176, q5_K), Q("Q6_K", 14, 256, 210, q6_K),
    Q("IQ4_NL", 20, 32, 18, iq4_nl), Q("IQ4_XS", 23, 256, 136, iq4_xs), Q("MXFP4", 39, 32, 17, mxfp4),
};

static uint64_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen OUT_DIR\n");
        return 2;
    }
    static float x[QV_ROWS * QV_COLS], back[QV_ROWS * QV_COLS];
    qv_input(x);
    char path[4096];
    snprintf(path, sizeof path, "%s/ref.txt", argv[1]);
    FILE *ref = fopen(path, "w");
    if (!ref) return perror(path), 1;
    fprintf(ref, "# type ggml_id block bytes rows cols fnv1a64(quantized) fnv1a64(ggml's dequantized floats)\n");
    for (size_t t = 0; t < sizeof TYPES / sizeof *TYPES; t++) {
        const struct type *ty = &TYPES[t];
        size_t row_bytes = (size_t)QV_COLS / ty->block * ty->bytes, n = QV_ROWS * row_bytes;
        uint8_t *q = malloc(n);
        if (!q) return 1;
        if (ggml_quantize_chunk(ty->id, x, q, 0, QV_ROWS, QV_COLS, NULL) != n) return 1;
        for (int r = 0; r < QV_ROWS; r++) ty->dequantize(q + r * row_bytes, back + r * QV_COLS, QV_COLS);
        fprintf(ref, "%s %d %d %d %d %d %016llx %016llx\n", ty->name, ty->id, ty->block, ty->bytes, QV_ROWS, QV_COLS,
                (unsigned long long)fnv(q, n), (unsigned long long)fnv(back, sizeof back));
        free(q);
    }
    return fclose(ref) != 0;
}
