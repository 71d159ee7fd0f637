/* cmd_embed.c — `ember embed`: the embedding of one or more texts, submitted together to
 * one engine (they are computed in the same steps), each printed as a JSON array on its
 * own line, in the order given. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

#define MAX_TEXTS 64

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember embed -m MODEL.gguf -p TEXT [-p TEXT ...] [options]\n"
                 "  one line per TEXT: its embedding, a JSON array of the model's dim floats of unit L2\n"
                 "  norm: the final norm's hidden states, pooled\n"
                 "  -p TEXT               a text to embed; up to %d\n"
                 "  --pooling mean|cls|last  (default: as the model declares in <arch>.pooling_type;\n"
                 "                        last when it declares none)\n"
                 "  --no-bos              no BOS before each text (default: the vocabulary's, if any)\n"
                 "  --backend vulkan|cpu  (default vulkan)   --device N (default: the best; ember info)\n",
            MAX_TEXTS);
    return code;
}

typedef struct embed_out {
    float *v;        /* dim floats, once given */
    uint32_t dim;
    bool done, failed;
    const char *error;
} embed_out;

static void on_embedding(void *user, ember_request_id id, const float *v, uint32_t dim)
{
    embed_out *o = user;
    if ((o->v = malloc(dim * sizeof *o->v))) memcpy(o->v, v, dim * sizeof *v), o->dim = dim;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    embed_out *o = user;
    o->done = true;
    o->failed = why == EMBER_FINISH_ERROR || !o->v;
    o->error = why == EMBER_FINISH_ERROR && m->error ? m->error : "no embedding (out of memory?)";
}

static bool parse_pooling(const char *v, ember_pooling *p)
{
    static const char *const names[] = {"mean", "cls", "last"};
    for (int i = 0; i < 3; i++)
        if (strcmp(v, names[i]) == 0) return *p = (ember_pooling)(EMBER_POOLING_MEAN + i), true;
    fprintf(stderr, "ember embed: --pooling must be mean, cls or last, not '%s'\n", v);
    return false;
}

static void print_vector(const embed_out *o)
{
    putchar('[');
    for (uint32_t i = 0; i < o->dim; i++) printf("%s%.9g", i ? ", " : "", o->v[i]);
    puts("]");
}

/* Submits every text, steps until all are done and prints them; the exit status. */
static int embed_all(ember_engine *e, const char **texts, int n, ember_pooling pooling, bool no_bos)
{
    embed_out out[MAX_TEXTS] = {0};
    ember_status s = EMBER_OK;
    int submitted = 0, code = 0;
    for (; s == EMBER_OK && submitted < n; submitted++) {
        ember_request_desc d = {.prompt = texts[submitted], .no_bos = no_bos, .on_embedding = on_embedding,
                                .pooling = pooling, .on_done = on_done, .user = &out[submitted]};
        s = ember_submit(e, &d, NULL);
    }
    if (s != EMBER_OK) submitted--;
    while (s == EMBER_OK && (s = ember_engine_step(e)) == EMBER_OK) {}
    for (int i = 0; i < n; i++) {
        if (i < submitted && out[i].done && !out[i].failed) {
            print_vector(&out[i]);
            continue;
        }
        if (!code) fprintf(stderr, "ember: %s\n", i >= submitted || !out[i].done ? ember_engine_error(e) : out[i].error);
        code = 1;
    }
    for (int i = 0; i < n; i++) free(out[i].v);
    return code;
}

int ember_cmd_embed(int argc, char **argv)
{
    cli_model_args ma = {0};
    const char *texts[MAX_TEXTS];
    int n = 0;
    ember_pooling pooling = EMBER_POOLING_DEFAULT;
    bool no_bos = false;
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &ma);
        if (r < 0) return usage(stderr, CLI_USAGE);
        if (r > 0) continue;
        const char *v;
        if (cli_is_help(argv[i])) return usage(stdout, CLI_OK);
        if (strcmp(argv[i], "--no-bos") == 0) {
            no_bos = true;
        } else if (strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--prompt") == 0) {
            if (!(v = cli_value(argc, argv, &i))) return usage(stderr, CLI_USAGE);
            if (n == MAX_TEXTS) {
                fprintf(stderr, "ember embed: at most %d texts\n", MAX_TEXTS);
                return CLI_USAGE;
            }
            texts[n++] = v;
        } else if (strcmp(argv[i], "--pooling") == 0) {
            if (!(v = cli_value(argc, argv, &i)) || !parse_pooling(v, &pooling)) return usage(stderr, CLI_USAGE);
        } else {
            cli_unknown("embed", argv[i]);
            return usage(stderr, CLI_USAGE);
        }
    }
    if (!ma.path || !n) {
        fprintf(stderr, "ember embed: %s\n", !ma.path ? "no model given (-m MODEL.gguf)" : "no text given (-p TEXT)");
        return usage(stderr, CLI_USAGE);
    }
    ember_model *m = cli_load_model(&ma);
    if (!m) return 1;
    ember_engine *e = NULL;
    ember_engine_opts eo = {0};
    int code = 1;
    if (ember_engine_create(m, &eo, &e) == EMBER_OK) code = embed_all(e, texts, n, pooling, no_bos);
    else fprintf(stderr, "ember: %s\n", ember_engine_error(e));
    ember_engine_destroy(e);
    return cli_free_model(m, code);
}
