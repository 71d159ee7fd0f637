/* cmd_tokenize.c — `ember tokenize`: the token ids of a text. Only the vocabulary is
 * loaded (ember_model_opts.vocab_only), so a vocabulary-only GGUF (llama.cpp's
 * ggml-vocab-*.gguf: tokenizer keys, no tensors) works as well as a whole model. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember tokenize -m MODEL.gguf -p TEXT [--no-bos] [--json]\n"
                 "  the token ids of TEXT (with the vocabulary's BOS unless --no-bos); MODEL.gguf may be\n"
                 "  a whole model or a vocabulary-only GGUF\n");
    return code;
}

int ember_cmd_tokenize(int argc, char **argv)
{
    cli_model_args ma = {.backend = EMBER_BACKEND_CPU, .vocab_only = true}; /* tokenizing needs no GPU */
    const char *prompt = NULL;
    bool json = false, no_bos = false;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &ma);
        if (r < 0) return usage(stderr, CLI_USAGE);
        if (r > 0) continue;
        if (cli_is_help(argv[i])) return usage(stdout, CLI_OK);
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (strcmp(argv[i], "--no-bos") == 0) no_bos = true;
        else if (strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--prompt") == 0) {
            if (!(prompt = cli_value(argc, argv, &i))) return usage(stderr, CLI_USAGE);
        } else {
            cli_unknown("tokenize", argv[i]);
            return usage(stderr, CLI_USAGE);
        }
    }
    if (!ma.path) {
        fprintf(stderr, "ember tokenize: no model given (-m MODEL.gguf)\n");
        return usage(stderr, CLI_USAGE);
    }
    if (!prompt) prompt = "";
    ember_model *m = cli_load_model(&ma);
    if (!m) return 1;
    size_t n = 0, len = strlen(prompt);
    ember_status s = ember_tokenize(m, prompt, len, !no_bos, NULL, 0, &n);
    uint32_t *ids = malloc((n + 1) * sizeof *ids);
    if (s == EMBER_OK && ids) s = ember_tokenize(m, prompt, len, !no_bos, ids, n, &n);
    if (s != EMBER_OK || !ids) {
        fprintf(stderr, "ember: %s\n", ids ? ember_model_error(m) : "out of memory");
        free(ids);
        return cli_free_model(m, 1);
    }
    if (json) printf("{\"tokens\": [");
    for (size_t i = 0; i < n; i++) {
        if (json) {
            printf("%s%u", i ? ", " : "", ids[i]);
        } else {
            char piece[256];
            size_t k = ember_token_to_text(m, ids[i], piece, sizeof piece);
            printf("%6u  '%.*s'\n", ids[i], (int)(k < sizeof piece ? k : sizeof piece), piece);
        }
    }
    if (json) printf("]}\n");
    free(ids);
    return cli_free_model(m, 0);
}
