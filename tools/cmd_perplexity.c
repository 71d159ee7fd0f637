/* cmd_perplexity.c — `ember perplexity`: how well a model predicts a text file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

/* The whole file, NUL-terminated; NULL with a message when it cannot be read, is a
 * directory or is empty (nothing to score is an error, not a perplexity of 0). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = cli_open_input("perplexity", path, "rb", "a text file");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n + 65536 > cap) {
            char *b = realloc(buf, cap = cap * 2 + 65536);
            if (!b) break;
            buf = b;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    bool bad = ferror(f) || !buf;
    fclose(f);
    if (bad || n == 0) {
        fprintf(stderr, "ember perplexity: %s%s\n", path,
                !buf ? ": out of memory" : bad ? ": cannot be read" : " is empty: there is no text to score");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static int score_text(ember_model *m, const char *path, const char *text, size_t len, long ctx, bool json)
{
    size_t n = 0;
    ember_status s = ember_tokenize(m, text, len, 1, NULL, 0, &n);
    uint32_t *ids = s == EMBER_OK ? malloc((n + 1) * sizeof *ids) : NULL;
    if (ids) s = ember_tokenize(m, text, len, 1, ids, n, &n);
    double nll = 0;
    size_t scored = 0;
    if (ids && s == EMBER_OK) s = ember_score(m, ids, n, (uint32_t)ctx, &nll, &scored);
    free(ids);
    if (!ids || s != EMBER_OK) {
        fprintf(stderr, "ember: %s\n", ids ? ember_model_error(m) : "out of memory");
        return 1;
    }
    if (!scored) { /* one token (BOS) predicts nothing */
        fprintf(stderr, "ember perplexity: %s gives %zu token%s: at least 2 are needed to score one\n", path, n,
                n == 1 ? "" : "s");
        return 1;
    }
    double ppl = exp(nll / (double)scored);
    if (json) {
        printf("{\"file\": ");
        cli_json_string(stdout, path, strlen(path));
        printf(", \"tokens\": %zu, \"scored\": %zu, \"nll\": %.6f, \"perplexity\": %.6f}\n", n, scored, nll, ppl);
    } else {
        printf("%s: %zu tokens, %zu scored, perplexity %.4f\n", path, n, scored, ppl);
    }
    return 0;
}

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember perplexity -m MODEL.gguf -f TEXTFILE [--ctx N] [--json]\n"
                 "  the model's perplexity on the text, in windows of --ctx tokens (default: the model's context)\n"
                 "  [--backend vulkan|cpu] [--device N] [--memory auto|discrete] [--memory-budget MIB]\n"
                 "  [--kernels LIST]\n");
    return code;
}

int ember_cmd_perplexity(int argc, char **argv)
{
    cli_model_args ma = {0};
    const char *file = NULL;
    long ctx = 0;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &ma);
        if (r < 0) return usage(stderr, CLI_USAGE);
        if (r > 0) continue;
        const char *f = argv[i], *v;
        if (cli_is_help(f)) return usage(stdout, CLI_OK);
        if (strcmp(f, "--json") == 0) json = true;
        else if (strcmp(f, "-f") != 0 && strcmp(f, "--ctx") != 0) {
            cli_unknown("perplexity", f);
            return usage(stderr, CLI_USAGE);
        } else if (!(v = cli_value(argc, argv, &i))) {
            return usage(stderr, CLI_USAGE);
        } else if (strcmp(f, "-f") == 0) {
            file = v;
        } else if (!cli_int("--ctx", v, 2, 1 << 20, &ctx)) {
            return usage(stderr, CLI_USAGE);
        }
    }
    if (!ma.path || !file) {
        fprintf(stderr, "ember perplexity: %s\n", !ma.path ? "no model given (-m MODEL.gguf)" : "no text given (-f FILE)");
        return usage(stderr, CLI_USAGE);
    }
    size_t len = 0;
    char *text = read_file(file, &len);
    if (!text) return CLI_FAILED;
    ember_model *m = cli_load_model(&ma);
    int code = m ? score_text(m, file, text, len, ctx, json) : 1;
    free(text);
    return m ? cli_free_model(m, code) : 1;
}
