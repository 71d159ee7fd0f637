/* test_quant_types.c — every tensor element type against llama.cpp's own codecs. The
 * reference (tests/data/quant/ref.txt, made by tests/quant_vectors/make.sh with the
 * libggml of npm node-llama-cpp) holds, per type, a hash of the bytes ggml's reference
 * quantizer makes of the rows of tests/quant_vectors/input.c and a hash of the floats
 * ggml's dequantizer makes of those bytes. For each type in ref.txt:
 *  - dtype.c's table agrees with ggml on its id, name, block and bytes;
 *  - Ember encodes the rows to ggml's bytes (the first hash);
 *  - Ember decodes those bytes, ggml's, to ggml's floats bit for bit (the second hash);
 *  - a span that starts and ends inside blocks reads as the same slice of the row.
 * Only hashes are committed: the bytes are Ember's own once they hash as ggml's. A type
 * Ember would read but not write would need its bytes committed (gen.c wrote NAME.bin
 * files before every type was written). */
#include <stdlib.h>
#include <string.h>

#include "engine/model/quant.h"
#include "quant_vectors/input.h"
#include "testutil.h"

static uint64_t fnv(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

typedef struct ref {
    char name[16];
    unsigned id, block, bytes, rows, cols;
    unsigned long long q_hash, f_hash;
} ref;

static void check_type(const ref *r, const float *x)
{
    const ember_dtype_info *t = ember_dtype_find(r->id);
    CHECKF(t && strcmp(t->name, r->name) == 0 && t->block == r->block && t->bytes == r->bytes,
           "%s: the table says %s, block %u, %u bytes", r->name, t ? t->name : "nothing", t ? t->block : 0,
           t ? t->bytes : 0);
    CHECKF(t && t->from_float && t->to_float, "%s: Ember does not read and write it", r->name);
    if (!t || !t->from_float || !t->to_float) return;
    size_t row_bytes = (size_t)r->cols / r->block * r->bytes, n = r->rows * row_bytes;
    uint8_t *q = calloc(1, n);
    CHECK(q != NULL);
    if (!q) return;
    for (unsigned row = 0; row < r->rows; row++)
        ember_quantize_row(t->type, x + row * r->cols, q + row * row_bytes, r->cols);
    bool encoded = fnv(q, n) == r->q_hash;
    CHECKF(encoded, "%s: encoded bytes differ from ggml's", r->name);
    static float back[QV_ROWS * QV_COLS], part[QV_COLS];
    for (unsigned row = 0; row < r->rows; row++)
        ember_dequantize_row(t->type, q + row * row_bytes, back + row * r->cols, r->cols);
    bool decoded = fnv(back, sizeof back) == r->f_hash;
    CHECKF(decoded, "%s: decoded floats differ from ggml's", r->name);
    /* a span from inside one block to inside another */
    size_t first = r->block > 1 ? r->block / 2 + 3 : 7, len = r->cols - first - 5;
    ember_dequantize_span(t->type, q, first, len, part);
    CHECKF(memcmp(part, back + first, len * sizeof *part) == 0, "%s: a span inside blocks", r->name);
    printf("%-7s block %3u, %3u bytes: %s, %s\n", r->name, r->block, r->bytes,
           encoded ? "encodes as ggml" : "ENCODES OTHERWISE", decoded ? "decodes as ggml" : "DECODES OTHERWISE");
    free(q);
}

int main(void)
{
    const char *src = getenv("EMBER_SOURCE_DIR");
    char dir[1000], path[1100];
    snprintf(dir, sizeof dir, "%.900s/tests/data/quant", src ? src : "..");
    snprintf(path, sizeof path, "%.1000s/ref.txt", dir);
    FILE *f = fopen(path, "r");
    CHECKF(f != NULL, "cannot open %s", path);
    if (!f) return tu_finish("test_quant_types");
    static float x[QV_ROWS * QV_COLS];
    qv_input(x);
    char line[256];
    int types = 0;
    while (fgets(line, sizeof line, f)) {
        ref r;
        if (line[0] == '#') continue;
        if (sscanf(line, "%15s %u %u %u %u %u %llx %llx", r.name, &r.id, &r.block, &r.bytes, &r.rows, &r.cols,
                   &r.q_hash, &r.f_hash) != 8 || r.rows != QV_ROWS || r.cols != QV_COLS) {
            CHECKF(0, "bad line in %s: %s", path, line);
            continue;
        }
        check_type(&r, x);
        types++;
    }
    fclose(f);
    CHECK(types == 15);
    return tu_finish("test_quant_types");
}
