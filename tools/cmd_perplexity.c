/* cmd_perplexity.c — `ember perplexity`: how well a model predicts a text file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
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
    fclose(f);
    if (buf) buf[n] = 0;
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
    double ppl = scored ? exp(nll / (double)scored) : 0;
    if (json) {
        printf("{\"file\": ");
        cli_json_string(stdout, path, strlen(path));
        printf(", \"tokens\": %zu, \"scored\": %zu, \"nll\": %.6f, \"perplexity\": %.6f}\n", n, scored, nll, ppl);
    } else {
        printf("%s: %zu tokens, %zu scored, perplexity %.4f\n", path, n, scored, ppl);
    }
    return 0;
}

int ember_cmd_perplexity(int argc, char **argv)
{
    cli_model_args ma = {0};
    const char *file = NULL;
    long ctx = 0;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &ma);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *v;
        if (strcmp(argv[i], "--json") == 0) json = true;
        else if (strcmp(argv[i], "-f") == 0 && (v = cli_value(argc, argv, &i))) file = v;
        else if (strcmp(argv[i], "--ctx") == 0 && (v = cli_value(argc, argv, &i))) {
            if (!cli_int("--ctx", v, 2, 1 << 20, &ctx)) return 2;
        } else {
            fprintf(stderr, "usage: ember perplexity -m MODEL.gguf -f TEXTFILE [--ctx N] [--json]\n");
            return 2;
        }
    }
    size_t len = 0;
    char *text = file ? read_file(file, &len) : NULL;
    if (!text) {
        fprintf(stderr, "ember: cannot read %s\n", file ? file : "(no -f FILE given)");
        return file ? 1 : 2;
    }
    ember_model *m = cli_load_model(&ma);
    int code = m ? score_text(m, file, text, len, ctx, json) : 1;
    free(text);
    return m ? cli_free_model(m, code) : 1;
}
