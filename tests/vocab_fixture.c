/* vocab_fixture.c — see vocab_fixture.h. */
#include "vocab_fixture.h"

#include <stdlib.h>
#include <string.h>

/* ---- vocabularies ------------------------------------------------------------------ */

void vf_add_scored(vf_vocab *v, const char *piece, int32_t type, float score)
{
    v->tok = realloc(v->tok, (v->n + 1) * sizeof *v->tok);
    v->type = realloc(v->type, (v->n + 1) * sizeof *v->type);
    v->score = realloc(v->score, (v->n + 1) * sizeof *v->score);
    v->tok[v->n] = strdup(piece);
    v->type[v->n] = type;
    v->score[v->n++] = score;
}

void vf_add(vf_vocab *v, const char *piece, int32_t type)
{
    vf_add_scored(v, piece, type, 0.0f);
}

void vf_merge(vf_vocab *v, const char *line)
{
    v->merges = realloc(v->merges, (v->n_merges + 1) * sizeof *v->merges);
    v->merges[v->n_merges++] = strdup(line);
}

void vf_vocab_free(vf_vocab *v)
{
    for (uint32_t i = 0; i < v->n; i++)
        free(v->tok[i]);
    for (uint32_t i = 0; i < v->n_merges; i++)
        free(v->merges[i]);
    free(v->tok), free(v->type), free(v->score), free(v->merges);
    memset(v, 0, sizeof *v);
}

ember_gguf_writer *vf_writer(const vf_vocab *v, const char *model)
{
    ember_gguf_writer *w = NULL;
    ember_err err = {{0}};
    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    ember_gguf_add_str(w, "general.architecture", "llama");
    ember_gguf_add_str(w, "tokenizer.ggml.model", model);
    ember_gguf_add_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tok, v->n);
    ember_gguf_add_arr_i32(w, "tokenizer.ggml.token_type", v->type, v->n);
    return w;
}

void vf_write(ember_gguf_writer *w, const char *path)
{
    ember_err err = {{0}};
    CHECKF(ember_gguf_write(w, path, &err) == EMBER_OK, "%s", err.msg);
    ember_gguf_writer_free(w);
}

/* ---- tokenizers -------------------------------------------------------------------- */

ember_tokenizer *vf_open(const char *path, ember_gguf **g)
{
    ember_err err = {{0}};
    ember_tokenizer *t = NULL;
    if (ember_gguf_open(path, g, &err) != EMBER_OK) {
        fprintf(stderr, "open %s: %s\n", path, err.msg);
        return NULL;
    }
    if (ember_tokenizer_load(*g, &t, &err) != EMBER_OK) {
        fprintf(stderr, "tokenizer %s: %s\n", path, err.msg);
        ember_gguf_close(*g);
        *g = NULL;
    }
    return t;
}

ember_tokenizer *vf_open_shared(const char *shared, const char *rel, ember_gguf **g)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", shared, rel);
    return vf_open(path, g);
}

void vf_close(ember_tokenizer *t, ember_gguf *g)
{
    ember_tokenizer_free(t);
    ember_gguf_close(g);
}

size_t vf_encode_flags(const ember_tokenizer *t, const char *text, size_t len, unsigned flags,
                       uint32_t *ids, size_t cap)
{
    size_t n = 0;
    ember_err err = {{0}};
    ember_status st = ember_tokenizer_encode_ex(t, text, len, flags, ids, cap, &n, &err);
    CHECKF(st == EMBER_OK, "encode: %s", err.msg);
    CHECKF(n <= cap, "%zu ids do not fit in %zu", n, cap);
    return n <= cap ? n : cap;
}

size_t vf_encode(const ember_tokenizer *t, const char *text, uint32_t *ids, size_t cap)
{
    return vf_encode_flags(t, text, strlen(text), 0, ids, cap);
}

bool vf_ids_equal(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

void vf_check_ids(const ember_tokenizer *t, const char *text, const uint32_t *want, size_t n_want)
{
    uint32_t ids[64];
    size_t n = vf_encode(t, text, ids, 64);
    CHECKF(vf_ids_equal(ids, n, want, n_want), "encode \"%s\": got %zu ids (first %u)", text, n,
           n ? ids[0] : 0);
}

char *vf_decode(const ember_tokenizer *t, const uint32_t *ids, size_t n, size_t *len)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ember_tokenizer_decode(t, ids[i], NULL, 0);
    char *s = malloc(total + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        o += ember_tokenizer_decode(t, ids[i], s + o, total - o);
    s[o] = 0;
    if (len)
        *len = o;
    return s;
}

/* ---- files ------------------------------------------------------------------------- */

char *vf_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf)
        buf[n] = 0;
    return buf;
}

size_t vf_parse_ids(const char *s, uint32_t *out, size_t cap)
{
    size_t n = 0;
    for (char *q; n < cap; s = q) {
        unsigned long v = strtoul(s, &q, 10);
        if (q == s)
            break;
        out[n++] = (uint32_t)v;
    }
    return n;
}

static char *read_vectors(const char *shared, const char *name, const char *ext)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/testdata/tokenizer/%s/ggml-vocab-%s.gguf.%s", shared, name,
             name, ext);
    return vf_read_file(path);
}

bool vf_check_vectors(const ember_tokenizer *t, const char *shared, const char *name,
                      int min_cases)
{
    char *inp = read_vectors(shared, name, "inp"), *outp = read_vectors(shared, name, "out");
    CHECKF(inp && outp, "%s: vector files missing", name);
    if (!inp || !outp) {
        free(inp), free(outp);
        return false;
    }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *c = inp, *line = outp;
    int cases = 0, passed = 0;
    uint32_t *got = malloc(4096 * sizeof *got), want[1024];
    for (char *end; (end = strstr(c, sep)) != NULL; c = end + strlen(sep)) {
        char *eol = strchr(line, '\n');
        if (!eol)
            break;
        *eol = 0;
        size_t n_want = vf_parse_ids(line, want, 1024);
        size_t n_got = vf_encode_flags(t, c, (size_t)(end - c), 0, got, 4096);
        cases++;
        if (vf_ids_equal(got, n_got, want, n_want))
            passed++;
        else
            fprintf(stderr, "%s case %d (\"%.*s\"): got %zu ids, want %zu\n", name, cases,
                    (int)(end - c > 40 ? 40 : end - c), c, n_got, n_want);
        line = eol + 1;
    }
    CHECKF(cases >= min_cases && passed == cases && *line == 0, "%d of %d %s cases pass", passed,
           cases, name);
    free(got), free(inp), free(outp);
    return true;
}
