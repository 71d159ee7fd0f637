/* ember_tok.c — the Ember side of tests/test_tokenizer_vs_llama.sh.
 *   ember_tok write VOCAB.json ARCH OUT.gguf
 *       a vocabulary-only GGUF (general.architecture ARCH and tokenizer.* keys) from the
 *       JSON hf.mjs made: tokens, types, scores or merges, bos/eos/unk, add_bos,
 *       add_space_prefix; llama.cpp and Ember both read this one file
 *   ember_tok encode VOCAB.gguf CASES.hex special|plain OUT.ids
 *       each string of CASES.hex (hex, one a line) tokenized without BOS, special tokens
 *       parsed or not; the ids, one line a string
 *   ember_tok tokens VOCAB.gguf OUT.txt
 *       one line a token id: 1 when it ends generation (else 0), a tab, and its text as
 *       output shows it (control tokens "") in hex
 * Built against libember.a (the writer, the JSON reader and the tokenizer's EOG set are
 * library-internal). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "common/alloc.h"
#include "engine/grammar/json.h"
#include "engine/model/gguf.h"
#include "engine/model/gguf_write.h"
#include "engine/tokenizer/tokenizer.h"
#include "platform/os_file.h"

/* The whole file at path (ember_free it), or NULL. */
static char *read_whole(const char *path, size_t *len)
{
    uint8_t *buf = NULL;
    bool exists = false;
    return ember_file_read(path, SIZE_MAX, &buf, len, &exists) ? (char *)buf : NULL;
}

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "ember_tok: %s: %s\n", what, why);
    return 1;
}

/* An array member of v as strings (n_out its length); NULL when absent. */
static const char **strings_of(const ember_json *v, const char *key, uint32_t *n_out)
{
    const ember_json *a = ember_json_get(v, key);
    if (!a || a->kind != EJ_ARRAY) return NULL;
    const char **s = calloc(a->n ? a->n : 1, sizeof *s);
    for (uint32_t i = 0; s && i < a->n; i++) s[i] = a->items[i].kind == EJ_STRING ? a->items[i].str : "";
    *n_out = a->n;
    return s;
}

static void add_id(ember_gguf_writer *w, const ember_json *v, const char *json_key, const char *gguf_key)
{
    const ember_json *x = ember_json_get(v, json_key);
    if (x && x->kind == EJ_NUMBER && atol(x->str) >= 0) ember_gguf_add_u32(w, gguf_key, (uint32_t)atol(x->str));
}

static void add_flag(ember_gguf_writer *w, const ember_json *v, const char *json_key, const char *gguf_key)
{
    const ember_json *x = ember_json_get(v, json_key);
    if (x && (x->kind == EJ_TRUE || x->kind == EJ_FALSE)) ember_gguf_add_bool(w, gguf_key, x->kind == EJ_TRUE);
}

static int write_vocab(const char *json_path, const char *arch, const char *out)
{
    size_t len = 0;
    char *text = read_whole(json_path, &len);
    if (!text) return fail(json_path, "cannot read");
    ember_json_doc *doc = NULL;
    const ember_json *v = NULL;
    ember_err err = {{0}};
    if (ember_json_parse(text, len, &doc, &v, &err) != EMBER_OK) return fail(json_path, err.msg);
    ember_gguf_writer *w = NULL;
    if (ember_gguf_writer_create(&w, &err) != EMBER_OK) return fail(out, err.msg);
    uint32_t n = 0, n_merges = 0;
    const char **tokens = strings_of(v, "tokens", &n), **merges = strings_of(v, "merges", &n_merges);
    const ember_json *types = ember_json_get(v, "types"), *scores = ember_json_get(v, "scores");
    int32_t *t = calloc(n, sizeof *t);
    float *sc = calloc(n, sizeof *sc);
    for (uint32_t i = 0; i < n; i++) {
        t[i] = types && i < types->n ? atoi(types->items[i].str) : 1;
        sc[i] = scores && i < scores->n ? strtof(scores->items[i].str, NULL) : 0.0f;
    }
    ember_gguf_add_str(w, "general.architecture", arch);
    ember_gguf_add_str(w, "tokenizer.ggml.model", ember_json_get(v, "model")->str);
    ember_gguf_add_str(w, "tokenizer.ggml.pre", ember_json_get(v, "pre")->str);
    ember_gguf_add_arr_str(w, "tokenizer.ggml.tokens", tokens, n);
    ember_gguf_add_arr_i32(w, "tokenizer.ggml.token_type", t, n);
    if (scores) ember_gguf_add_arr_f32(w, "tokenizer.ggml.scores", sc, n);
    if (merges) ember_gguf_add_arr_str(w, "tokenizer.ggml.merges", merges, n_merges);
    add_id(w, v, "bos", "tokenizer.ggml.bos_token_id");
    add_id(w, v, "eos", "tokenizer.ggml.eos_token_id");
    add_id(w, v, "unk", "tokenizer.ggml.unknown_token_id");
    add_flag(w, v, "add_bos", "tokenizer.ggml.add_bos_token");
    add_flag(w, v, "add_space_prefix", "tokenizer.ggml.add_space_prefix");
    ember_status s = ember_gguf_write(w, out, &err);
    ember_gguf_writer_free(w);
    free(t), free(sc), free(tokens), free(merges);
    ember_json_free(doc);
    ember_free(text);
    return s == EMBER_OK ? 0 : fail(out, err.msg);
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static int encode(const char *gguf, const char *cases, int flags, const char *out_path)
{
    ember_model_opts opts = {0};
    opts.vocab_only = 1;
    ember_model *m = NULL;
    if (ember_model_load(gguf, &opts, &m) != EMBER_OK) {
        int r = fail(gguf, m ? ember_model_error(m) : "cannot load");
        ember_model_free(m);
        return r;
    }
    size_t len = 0;
    char *hex = read_whole(cases, &len);
    FILE *out = fopen(out_path, "w");
    if (!hex || !out) return fail(cases, "cannot read the cases or write the ids");
    char *text = malloc(len / 2 + 1);
    uint32_t *ids = malloc((len / 2 + 16) * sizeof *ids);
    for (char *line = hex, *last = hex + len; line < last;) {
        char *end = memchr(line, '\n', (size_t)(last - line));
        if (!end) end = last;
        size_t n = 0;
        for (char *p = line; p + 1 < end; p += 2) text[n++] = (char)(hexval(p[0]) * 16 + hexval(p[1]));
        size_t n_ids = 0;
        if (ember_tokenize(m, text, n, flags, ids, len / 2 + 16, &n_ids) != EMBER_OK)
            return fail(gguf, ember_model_error(m));
        for (size_t i = 0; i < n_ids; i++) fprintf(out, i ? " %u" : "%u", ids[i]);
        fputc('\n', out);
        line = end + 1;
    }
    fclose(out);
    free(ids), free(text);
    ember_free(hex);
    ember_model_free(m);
    return 0;
}

static int list_tokens(const char *gguf, const char *out_path)
{
    ember_gguf *g = NULL;
    ember_tokenizer *t = NULL;
    ember_err err = {{0}};
    if (ember_gguf_open(gguf, &g, &err) != EMBER_OK || ember_tokenizer_load(g, &t, &err) != EMBER_OK)
        return fail(gguf, err.msg);
    FILE *out = fopen(out_path, "w");
    if (!out) return fail(out_path, "cannot write");
    char buf[4096];
    for (uint32_t id = 0; id < ember_tokenizer_n_vocab(t); id++) {
        size_t n = ember_tokenizer_decode(t, id, buf, sizeof buf);
        fprintf(out, "%d\t", ember_tokenizer_is_eog(t, id));
        for (size_t i = 0; i < n && i < sizeof buf; i++) fprintf(out, "%02x", (unsigned char)buf[i]);
        fputc('\n', out);
    }
    fclose(out);
    ember_tokenizer_free(t);
    ember_gguf_close(g);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "tokens")) return list_tokens(argv[2], argv[3]);
    if (argc == 5 && !strcmp(argv[1], "write")) return write_vocab(argv[2], argv[3], argv[4]);
    if (argc == 6 && !strcmp(argv[1], "encode"))
        return encode(argv[2], argv[3], strcmp(argv[4], "special") ? 0 : EMBER_TOKENIZE_PARSE_SPECIAL, argv[5]);
    fprintf(stderr, "usage: ember_tok write VOCAB.json ARCH OUT.gguf | encode VOCAB.gguf CASES.hex special|plain OUT.ids"
            " | tokens VOCAB.gguf OUT.txt\n");
    return 2;
}
