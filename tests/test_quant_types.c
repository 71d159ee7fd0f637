/* test_quant_types.c — every tensor element type against llama.cpp's own codecs. The
 * reference vectors (tests/data/quant, made by tests/quant_vectors/make.sh with the
 * libggml of npm node-llama-cpp) hold, per type, the bytes ggml's reference quantizer
 * makes of the rows of tests/quant_vectors/input.c and a hash of the floats ggml's
 * dequantizer makes of those bytes. For each type in ref.txt:
 *  - dtype.c's table agrees with ggml on its id, name, block and bytes;
 *  - Ember decodes ggml's bytes to the same floats, bit for bit (the hash);
 *  - where Ember writes the type, it encodes the rows to ggml's bytes exactly;
 *  - a span that starts and ends inside blocks reads as the same slice of the row. */
#include <stdlib.h>
#include <string.h>

#include "engine/model/quant.h"
#include "quant_vectors/input.h"
#include "testutil.h"

/* Types that Ember reads but does not write (none yet). */
static bool read_only(ember_dtype t)
{
    (void)t;
    return false;
}

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

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = len > 0 ? malloc((size_t)len) : NULL;
    *n = b && fread(b, 1, (size_t)len, f) == (size_t)len ? (size_t)len : 0;
    fclose(f);
    return b;
}

/* The first block where a and b differ, or -1. */
static long first_diff(const uint8_t *a, const uint8_t *b, size_t n, unsigned block_bytes)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return (long)(i / block_bytes);
    return -1;
}

static void check_type(const char *dir, const ref *r, const float *x)
{
    const ember_dtype_info *t = ember_dtype_find(r->id);
    CHECKF(t && strcmp(t->name, r->name) == 0 && t->block == r->block && t->bytes == r->bytes,
           "%s: the table says %s, block %u, %u bytes", r->name, t ? t->name : "nothing", t ? t->block : 0,
           t ? t->bytes : 0);
    if (!t) return;
    char path[1100];
    snprintf(path, sizeof path, "%.1000s/%.15s.bin", dir, r->name);
    size_t n = 0, row_bytes = (size_t)r->cols / r->block * r->bytes;
    uint8_t *q = read_file(path, &n);
    CHECKF(q && n == r->rows * row_bytes, "%s: %zu bytes", path, n);
    if (!q || n != r->rows * row_bytes) return free(q);
    CHECKF(fnv(q, n) == r->q_hash, "%s: the file's hash", path);
    static float back[QV_ROWS * QV_COLS], part[QV_COLS];
    bool decoded = t->to_float != NULL, encoded = t->from_float != NULL;
    CHECKF(decoded, "%s: Ember does not read it", r->name);
    if (decoded) {
        for (unsigned row = 0; row < r->rows; row++)
            ember_dequantize_row(t->type, q + row * row_bytes, back + row * r->cols, r->cols);
        CHECKF(fnv(back, sizeof back) == r->f_hash, "%s: decoded floats differ from ggml's", r->name);
        /* a span from inside one block to inside another */
        size_t first = r->block > 1 ? r->block / 2 + 3 : 7, len = r->cols - first - 5;
        ember_dequantize_span(t->type, q, first, len, part);
        CHECKF(memcmp(part, back + first, len * sizeof *part) == 0, "%s: a span inside blocks", r->name);
    }
    CHECKF(encoded || read_only(t->type), "%s: Ember does not write it", r->name);
    long at = -1;
    if (encoded) {
        uint8_t *mine = calloc(1, n);
        for (unsigned row = 0; mine && row < r->rows; row++)
            ember_quantize_row(t->type, x + row * r->cols, mine + row * row_bytes, r->cols);
        at = mine ? first_diff(mine, q, n, r->bytes) : 0;
        CHECKF(at < 0, "%s: encoded bytes differ from ggml's from block %ld (row %ld)", r->name, at,
               at * (long)r->block / (long)r->cols);
        free(mine);
    }
    printf("%-7s block %3u, %3u bytes: %s, %s\n", r->name, r->block, r->bytes,
           decoded ? "decodes as ggml" : "NOT READ",
           !encoded ? "read only" : at < 0 ? "encodes as ggml" : "ENCODES OTHERWISE");
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
        check_type(dir, &r, x);
        types++;
    }
    fclose(f);
    CHECK(types == 14);
    return tu_finish("test_quant_types");
}
