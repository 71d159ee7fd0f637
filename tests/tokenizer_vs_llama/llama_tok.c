/* llama_tok.c — the llama.cpp side of tests/test_tokenizer_vs_llama.sh:
 *   llama_tok LIBDIR VOCAB.gguf CASES.hex special|plain OUT.ids
 * each string of CASES.hex (hex, one a line) tokenized by llama.cpp's libllama (the
 * prebuilt CPU build of npm node-llama-cpp; LIBDIR, where its backends are loaded from),
 * the vocabulary only, without BOS, special tokens parsed or not: the ids, one line a
 * string, as ember_tok writes them.
 *   llama_tok LIBDIR VOCAB.gguf tokens OUT.txt
 * one line a token id: llama_vocab_is_eog (1 or 0), a tab, and llama_token_to_piece with
 * special off (what output shows of it) in hex, as ember_tok tokens writes them. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static int list_tokens(const struct llama_vocab *vocab, const char *out_path)
{
    FILE *out = fopen(out_path, "w");
    if (!out) return 1;
    char buf[4096];
    for (llama_token id = 0; id < llama_vocab_n_tokens(vocab); id++) {
        int n = llama_token_to_piece(vocab, id, buf, sizeof buf, 0, false);
        fprintf(out, "%d\t", llama_vocab_is_eog(vocab, id) ? 1 : 0);
        for (int i = 0; i < n; i++) fprintf(out, "%02x", (unsigned char)buf[i]);
        fputc('\n', out);
    }
    fclose(out);
    return 0;
}

int main(int argc, char **argv)
{
    bool tokens = argc == 5 && strcmp(argv[3], "tokens") == 0;
    if (argc != 6 && !tokens) {
        fprintf(stderr, "usage: llama_tok LIBDIR VOCAB.gguf CASES.hex special|plain OUT.ids | LIBDIR VOCAB.gguf tokens OUT.txt\n");
        return 2;
    }
    int special = strcmp(argv[4], "special") == 0;
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(argv[1]);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[2], mp);
    if (tokens) {
        int r = !model || list_tokens(llama_model_get_vocab(model), argv[4]);
        if (r) fprintf(stderr, "llama_tok: cannot load %s or write %s\n", argv[2], argv[4]);
        llama_model_free(model);
        llama_backend_free();
        return r;
    }
    FILE *in = fopen(argv[3], "r"), *out = fopen(argv[5], "w");
    if (!model || !in || !out) {
        fprintf(stderr, "llama_tok: cannot load %s, read %s or write %s\n", argv[2], argv[3], argv[5]);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    size_t cap = 1 << 16;
    char *line = malloc(cap), *text = malloc(cap);
    llama_token *ids = malloc(cap * sizeof *ids);
    while (fgets(line, (int)cap, in)) {
        size_t n = 0, len = strcspn(line, "\n");
        for (size_t i = 0; i + 1 < len; i += 2) text[n++] = (char)(hexval(line[i]) * 16 + hexval(line[i + 1]));
        int k = llama_tokenize(vocab, text, (int32_t)n, ids, (int32_t)cap, false, special);
        if (k < 0) {
            fprintf(stderr, "llama_tok: llama_tokenize failed (%d)\n", k);
            return 1;
        }
        for (int i = 0; i < k; i++) fprintf(out, i ? " %d" : "%d", ids[i]);
        fputc('\n', out);
    }
    fclose(in);
    fclose(out);
    free(line), free(text), free(ids);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
