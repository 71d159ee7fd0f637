/* cmd_perplexity.c — `ember perplexity`: how well a model predicts a text file, by
 * Ember's method (non-overlapping windows, every token but a window's first scored) or
 * llama-perplexity's (windows of n_ctx tokens, each starting with BOS, the second half
 * scored), so that its figures compare with llama.cpp's; docs/cli.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "platform/os_thread.h"

typedef enum ppl_method { PPL_EMBER, PPL_LLAMA } ppl_method;
static const char *const method_names[] = {"ember", "llama"};

typedef struct ppl_args {
    cli_model_args model;
    const char *file;
    cli_habits habits;          /* -c/--ctx N; -t: a note */
    ppl_method method;
    bool json;
} ppl_args;

/* What the windows add up to, as they are scored. */
typedef struct ppl_sum {
    double nll;
    size_t scored;
    double *chunks;             /* the running perplexity after each window */
    size_t n_chunks;
} ppl_sum;

/* llama-perplexity's default context (its -c), used by --method llama without -c. */
#define LLAMA_PPL_CTX 512

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

/* The BOS id when the vocabulary puts one before a text (*bos), else false. */
static bool bos_of(ember_model *m, uint32_t *bos)
{
    size_t n = 0;
    return ember_tokenize(m, "", 0, EMBER_TOKENIZE_ADD_BOS, bos, 1, &n) == EMBER_OK && n == 1;
}

/* The -log-likelihood that llama-perplexity counts in one window of ctx tokens: its
 * first token made BOS (where the vocabulary has one), the tokens after position
 * first = ctx/2 scored, each from the whole window before it. ember_score scores every
 * position; attention is causal, so the second half's sum is the whole window's less
 * that of its first first+1 tokens. */
static ember_status llama_window(ember_model *m, uint32_t *w, uint32_t ctx, const uint32_t *bos, double *nll)
{
    double all, head;
    size_t n_all, n_head;
    if (bos) w[0] = *bos;
    uint32_t first = ctx / 2;
    ember_status s = ember_score(m, w, ctx, ctx, &all, &n_all);
    if (s == EMBER_OK) s = ember_score(m, w, first + 1, first + 1, &head, &n_head);
    *nll = all - head;
    return s;
}

/* Scores window c of the chosen method into sum; false on an error (the model's). */
static bool score_chunk(ember_model *m, const ppl_args *a, const uint32_t *ids, size_t n, uint32_t ctx, size_t c,
                        uint32_t *scratch, const uint32_t *bos, ppl_sum *sum)
{
    size_t at = c * ctx, len = n - at < ctx ? n - at : ctx;
    double nll = 0;
    size_t scored = 0;
    ember_status s;
    if (a->method == PPL_LLAMA) {
        memcpy(scratch, ids + at, ctx * sizeof *ids);
        s = llama_window(m, scratch, ctx, bos, &nll);
        scored = ctx - ctx / 2 - 1;
    } else {
        s = ember_score(m, ids + at, len, ctx, &nll, &scored);
    }
    if (s != EMBER_OK) return false;
    sum->nll += nll;
    sum->scored += scored;
    sum->chunks[sum->n_chunks++] = sum->scored ? exp(sum->nll / (double)sum->scored) : 0;
    return true;
}

/* The windows: Ember's cover the text (the last may be short); llama-perplexity's are
 * whole (n / ctx of them) and it needs two at least. 0 with a message when too few. */
static size_t chunk_count(const ppl_args *a, size_t n, uint32_t ctx)
{
    if (a->method == PPL_EMBER) return (n + ctx - 1) / ctx;
    if (n >= 2 * (size_t)ctx) return n / ctx;
    fprintf(stderr, "ember perplexity: %s gives %zu tokens: llama.cpp's method needs at least %u (two windows of "
                    "%u); a smaller -c, or --method ember\n", a->file, n, 2 * ctx, ctx);
    return 0;
}

/* Scores every window, printing the running perplexity after each as llama-perplexity
 * does ("[1]12.3456,[2]...": stdout, or stderr under --json) and, after the first, the
 * time a window takes and what is left. */
static bool score_all(ember_model *m, const ppl_args *a, const uint32_t *ids, size_t n, uint32_t ctx, ppl_sum *sum)
{
    size_t n_chunks = chunk_count(a, n, ctx);
    uint32_t bos, *scratch = malloc((size_t)ctx * sizeof *scratch);
    sum->chunks = malloc((n_chunks ? n_chunks : 1) * sizeof *sum->chunks);
    bool has_bos = bos_of(m, &bos), ok = n_chunks && scratch && sum->chunks;
    if (n_chunks && !ok) fprintf(stderr, "ember perplexity: out of memory\n");
    FILE *out = a->json ? stderr : stdout;
    if (ok) fprintf(stderr, "perplexity: %zu chunks of %u tokens, %s's method\n", n_chunks, ctx,
                    a->method == PPL_LLAMA ? "llama.cpp" : "Ember");
    double t0 = ember_now_ms();
    for (size_t c = 0; ok && c < n_chunks; c++) {
        if (!score_chunk(m, a, ids, n, ctx, c, scratch, has_bos ? &bos : NULL, sum)) {
            fprintf(stderr, "ember: %s\n", ember_model_error(m));
            ok = false;
            break;
        }
        if (c == 0 && n_chunks > 1) { /* llama-perplexity's line, before the first value */
            double per = (ember_now_ms() - t0) / 1000.0;
            fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", per,
                    per * (double)(n_chunks - 1) / 60.0);
        }
        if (sum->scored) fprintf(out, "[%zu]%.4f,", c + 1, sum->chunks[c]);
        fflush(out);
    }
    if (n_chunks && sum->n_chunks) fputc('\n', out);
    free(scratch);
    return ok;
}

static void report(const ppl_args *a, size_t n, uint32_t ctx, const ppl_sum *sum)
{
    double ppl = exp(sum->nll / (double)sum->scored);
    if (!a->json) {
        printf("%s: %zu tokens, %zu scored, perplexity %.4f (%s method, windows of %u)\n", a->file, n, sum->scored,
               ppl, method_names[a->method], ctx);
        return;
    }
    printf("{\"file\": ");
    cli_json_string(stdout, a->file, strlen(a->file));
    printf(", \"tokens\": %zu, \"scored\": %zu, \"nll\": %.6f, \"perplexity\": %.6f, \"method\": \"%s\", "
           "\"ctx\": %u, \"chunks\": [", n, sum->scored, sum->nll, ppl, method_names[a->method], ctx);
    for (size_t i = 0; i < sum->n_chunks; i++) printf("%s%.6f", i ? ", " : "", sum->chunks[i]);
    printf("]}\n");
}

static int score_text(ember_model *m, const ppl_args *a, const char *text, size_t len)
{
    size_t n = 0;
    ember_status s = ember_tokenize(m, text, len, EMBER_TOKENIZE_ADD_BOS, NULL, 0, &n);
    uint32_t *ids = s == EMBER_OK ? malloc((n + 1) * sizeof *ids) : NULL;
    if (ids) s = ember_tokenize(m, text, len, EMBER_TOKENIZE_ADD_BOS, ids, n, &n);
    if (!ids || s != EMBER_OK) {
        fprintf(stderr, "ember: %s\n", ids ? ember_model_error(m) : "out of memory");
        free(ids);
        return 1;
    }
    ember_model_info info;
    ember_model_get_info(m, &info);
    long asked = a->habits.ctx ? a->habits.ctx : a->method == PPL_LLAMA ? LLAMA_PPL_CTX : 0;
    uint32_t ctx = cli_context("perplexity", asked, info.ctx_len);
    ppl_sum sum = {0};
    bool ok = ctx >= (a->method == PPL_LLAMA ? 4u : 2u);
    if (!ok) fprintf(stderr, "ember perplexity: a window of %u tokens scores nothing\n", ctx);
    ok = ok && score_all(m, a, ids, n, ctx, &sum);
    if (ok && !sum.scored) /* one token (BOS) predicts nothing */
        fprintf(stderr, "ember perplexity: %s gives %zu token%s: at least 2 are needed to score one\n", a->file, n,
                n == 1 ? "" : "s");
    int code = ok && sum.scored ? 0 : 1;
    if (code == 0) report(a, n, ctx, &sum);
    free(sum.chunks);
    free(ids);
    return code;
}

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember perplexity -m MODEL.gguf -f TEXTFILE [options]\n"
                 "  the model's perplexity on the text; the running value after each window is printed\n"
                 "  as llama-perplexity prints it ([1]12.3456,[2]...; on stderr with --json)\n"
                 "  --method ember|llama  ember (default): non-overlapping windows of -c tokens, every token\n"
                 "                        but a window's first scored; llama: llama-perplexity's, whole windows\n"
                 "                        of -c tokens, each starting with BOS, only their second half scored\n"
                 "  -c, --ctx-size, --ctx N  the window (default: ember, the model's context; llama, 512,\n"
                 "                        as llama-perplexity; at most the model's context)\n"
                 "  -t, --threads N       accepted and ignored: Vulkan needs no thread count\n"
                 "  --json                one JSON object: tokens, scored, nll, perplexity, method, ctx, chunks\n"
                 "  --backend vulkan|cpu (default vulkan) --device N (default: the best) --memory auto|discrete\n"
                 "  (default auto) --memory-budget MIB (default none) --kernels LIST\n");
    return code;
}

static bool parse_method(const char *v, ppl_method *m)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(v, method_names[i]) == 0) return *m = (ppl_method)i, true;
    fprintf(stderr, "ember perplexity: --method is ember or llama, got '%s'\n", v);
    return false;
}

static bool parse(int argc, char **argv, ppl_args *a, bool *help)
{
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &a->model);
        if (r == 0) r = cli_habit_flag("perplexity", argc, argv, &i, &a->habits);
        if (r < 0) return false;
        if (r > 0) continue;
        const char *f = argv[i], *v;
        if (cli_is_help(f)) return *help = true;
        if (strcmp(f, "--json") == 0) a->json = true;
        else if (strcmp(f, "-f") != 0 && strcmp(f, "--method") != 0) {
            cli_unknown("perplexity", f);
            return false;
        } else if (!(v = cli_value(argc, argv, &i))) return false;
        else if (strcmp(f, "-f") == 0) a->file = v;
        else if (!parse_method(v, &a->method)) return false;
    }
    if (!a->model.path || !a->file)
        fprintf(stderr, "ember perplexity: %s\n", !a->model.path ? "no model given (-m MODEL.gguf)" : "no text given (-f FILE)");
    return a->model.path && a->file;
}

int ember_cmd_perplexity(int argc, char **argv)
{
    ppl_args a = {0};
    bool help = false;
    if (!parse(argc, argv, &a, &help)) return usage(stderr, CLI_USAGE);
    if (help) return usage(stdout, CLI_OK);
    size_t len = 0;
    char *text = read_file(a.file, &len);
    if (!text) return CLI_FAILED;
    ember_model *m = cli_load_model(&a.model);
    int code = m ? score_text(m, &a, text, len) : 1;
    free(text);
    return m ? cli_free_model(m, code) : 1;
}
