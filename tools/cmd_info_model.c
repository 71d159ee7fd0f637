/* cmd_info_model.c — `ember info -m FILE`: what a model file holds (its shape, its tensors
 * by type) and the device memory it needs for a context (ember_estimate_memory), against a
 * memory budget: whether an 8 GB card takes it, before anything is loaded. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "engine/model/model.h"

#define TYPE_IDS 64 /* ggml's type ids are below this (BF16 is 30) */

typedef struct model_args {
    const char *path;
    long ctx, budget_mib, batch;
    ember_kv_type kv_type;
    bool json;
} model_args;

/* Tensors and bytes of each type in the file. */
typedef struct type_count {
    uint64_t tensors[TYPE_IDS], bytes[TYPE_IDS];
} type_count;

static void count_types(const ember_gguf *g, type_count *c)
{
    memset(c, 0, sizeof *c);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ember_gguf_tensor *t = &g->tensors[i];
        if ((unsigned)t->type >= TYPE_IDS) continue;
        c->tensors[t->type]++;
        c->bytes[t->type] += t->nbytes;
    }
}

/* Layers that attend through a window (docs/models.md). */
static uint32_t local_layers(const ember_llama *m)
{
    uint32_t n = 0;
    for (uint32_t l = 0; l < m->hp.n_layers; l++) {
        ember_layer_attn at;
        ember_layer_attn_of(&m->hp, l, &at);
        n += at.window != 0;
    }
    return n;
}

/* The family and what the file uses of its recipe. */
static void print_family(const ember_llama *m)
{
    const ember_hparams *hp = &m->hp;
    char what[512];
    ember_llama_features_str(ember_llama_features(m), what, sizeof what);
    printf("family:      %s (%s); head size %u, RoPE on %u of %u dims, base %g\n", m->desc->name, m->desc->models,
           hp->head_dim, hp->rope_dim, hp->head_dim, hp->rope_base);
    printf("uses:        %s\n", what);
    if (local_layers(m))
        printf("window:      %u positions on %u of %u layers (local base %g)\n", hp->swa_window, local_layers(m),
               hp->n_layers, hp->rope_base_swa > 0 ? hp->rope_base_swa : hp->rope_base);
    if (hp->attn_softcap > 0 || hp->final_softcap > 0)
        printf("soft-caps:   attention %g, final %g (0: none)\n", hp->attn_softcap, hp->final_softcap);
    if (m->desc->note) printf("note:        %s\n", m->desc->note);
}

static void print_text(const model_args *a, const ember_llama *m, const type_count *c, const ember_memory_estimate *e)
{
    const ember_hparams *hp = &m->hp;
    char b[6][32];
    printf("model:       %s: %s, %u layers, dim %u, %u/%u heads, FFN %u, vocab %u, context %u\n", a->path,
           ember_arch_name(m->arch), hp->n_layers, hp->dim, hp->n_heads, hp->n_kv_heads, hp->ffn_dim, hp->n_vocab,
           hp->ctx_len);
    print_family(m);
    printf("file:        %s:", cli_size((double)e->file_bytes, b[0], sizeof b[0]));
    for (int t = 0, first = 1; t < TYPE_IDS; t++)
        if (c->tensors[t]) {
            printf("%s %s %llu tensors %s", first ? "" : ",", ember_dtype_name((ember_dtype)t),
                   (unsigned long long)c->tensors[t], cli_size((double)c->bytes[t], b[0], sizeof b[0]));
            first = 0;
        }
    printf("\nweights:     %s on the device", cli_size((double)e->weight_bytes, b[0], sizeof b[0]));
    if (e->expert_bytes) printf(", experts %s of it", cli_size((double)e->expert_bytes, b[1], sizeof b[1]));
    printf("\n");
    uint64_t every_layer = (uint64_t)e->n_ctx * e->kv_bytes_per_token;
    if (e->kv_bytes < every_layer) /* a sliding-window model: its local layers keep a window */
        printf("KV cache:    %u tokens x %s (%s) = %s on every layer; %s with the local layers keeping a window\n",
               e->n_ctx, cli_size((double)e->kv_bytes_per_token, b[1], sizeof b[1]), cli_kv_type_name(a->kv_type),
               cli_size((double)every_layer, b[5], sizeof b[5]), cli_size((double)e->kv_bytes, b[2], sizeof b[2]));
    else
        printf("KV cache:    %u tokens x %s (%s) = %s\n", e->n_ctx, cli_size((double)e->kv_bytes_per_token, b[1], sizeof b[1]),
               cli_kv_type_name(a->kv_type), cli_size((double)e->kv_bytes, b[2], sizeof b[2]));
    printf("activations: %s (%ld tokens a step)\n", cli_size((double)e->activation_bytes, b[3], sizeof b[3]),
           a->batch ? a->batch : 256);
    printf("total:       %s", cli_size((double)e->total_bytes, b[4], sizeof b[4]));
    if (a->budget_mib) {
        uint64_t budget = (uint64_t)a->budget_mib << 20;
        bool fits = e->total_bytes <= budget;
        printf(": %s a budget of %ld MiB (%s %s)", fits ? "fits" : "does not fit", a->budget_mib,
               cli_size((double)(fits ? budget - e->total_bytes : e->total_bytes - budget), b[0], sizeof b[0]),
               fits ? "to spare" : "short");
    }
    printf("\n");
}

static void print_json(const model_args *a, const ember_llama *m, const type_count *c, const ember_memory_estimate *e)
{
    const ember_hparams *hp = &m->hp;
    printf("{\"model\": ");
    cli_json_string(stdout, a->path, strlen(a->path));
    printf(", \"arch\": \"%s\", \"n_layers\": %u, \"dim\": %u, \"n_heads\": %u, \"n_kv_heads\": %u, \"ffn_dim\": %u, "
           "\"n_vocab\": %u, \"ctx_len\": %u, ", ember_arch_name(m->arch), hp->n_layers, hp->dim,
           hp->n_heads, hp->n_kv_heads, hp->ffn_dim, hp->n_vocab, hp->ctx_len);
    uint32_t f = ember_llama_features(m);
    printf("\"head_dim\": %u, \"rope_dim\": %u, \"features\": [", hp->head_dim, hp->rope_dim);
    for (uint32_t i = 0, first = 1; ember_llama_feature_name(i); i++)
        if (f & (1u << i)) printf("%s\"%s\"", first ? "" : ", ", ember_llama_feature_name(i)), first = 0;
    printf("], \"sliding_window\": %u, \"local_layers\": %u, \"attn_softcap\": %g, \"final_softcap\": %g, "
           "\"types\": {", local_layers(m) ? hp->swa_window : 0, local_layers(m), hp->attn_softcap, hp->final_softcap);
    for (int t = 0, first = 1; t < TYPE_IDS; t++)
        if (c->tensors[t]) {
            printf("%s\"%s\": {\"tensors\": %llu, \"bytes\": %llu}", first ? "" : ", ",
                   ember_dtype_name((ember_dtype)t), (unsigned long long)c->tensors[t],
                   (unsigned long long)c->bytes[t]);
            first = 0;
        }
    printf("}, \"n_ctx\": %u, \"kv_type\": \"%s\", \"file_bytes\": %llu, \"weight_bytes\": %llu, "
           "\"expert_bytes\": %llu, \"kv_bytes_per_token\": %llu, \"kv_bytes\": %llu, \"activation_bytes\": %llu, "
           "\"total_bytes\": %llu",
           e->n_ctx, cli_kv_type_name(a->kv_type), (unsigned long long)e->file_bytes,
           (unsigned long long)e->weight_bytes, (unsigned long long)e->expert_bytes,
           (unsigned long long)e->kv_bytes_per_token,
           (unsigned long long)e->kv_bytes, (unsigned long long)e->activation_bytes,
           (unsigned long long)e->total_bytes);
    if (a->budget_mib)
        printf(", \"budget_bytes\": %llu, \"fits\": %s", (unsigned long long)a->budget_mib << 20,
               e->total_bytes <= (uint64_t)a->budget_mib << 20 ? "true" : "false");
    printf("}\n");
}

/* The shape and the tensor table, read again for the text (the estimate reads the file on
 * its own). */
static int describe(const model_args *a, const ember_memory_estimate *e)
{
    ember_gguf *g = NULL;
    ember_llama m = {0};
    ember_err err = {{0}};
    ember_status s = ember_gguf_open(a->path, &g, &err);
    if (s == EMBER_OK) s = ember_llama_load(g, &m, &err);
    if (s == EMBER_OK) {
        type_count c;
        count_types(g, &c);
        a->json ? print_json(a, &m, &c, e) : print_text(a, &m, &c, e);
        ember_llama_free(&m);
    } else {
        fprintf(stderr, "ember: %s\n", err.msg);
    }
    ember_gguf_close(g);
    return s == EMBER_OK ? CLI_OK : CLI_FAILED;
}

/* Returns 1 when argv[*i] was one of info -m's flags, 0 when not, -1 on a bad value. */
static int parse_flag(int argc, char **argv, int *i, model_args *a)
{
    const char *f = argv[*i], *v;
    if (strcmp(f, "--json") == 0) {
        a->json = true;
        return 1;
    }
    long *ints[] = {&a->ctx, &a->budget_mib, &a->batch};
    const char *names[] = {"--ctx", "--budget", "--max-batch-tokens"};
    const long hi[] = {1 << 24, 1 << 30, 1 << 20};
    for (int k = 0; k < 3; k++)
        if (strcmp(f, names[k]) == 0)
            return (v = cli_value(argc, argv, i)) && cli_int(f, v, 1, hi[k], ints[k]) ? 1 : -1;
    if (strcmp(f, "--kv-type") == 0) return (v = cli_value(argc, argv, i)) && cli_kv_type(f, v, &a->kv_type) ? 1 : -1;
    if (strcmp(f, "-m") == 0 || strcmp(f, "--model") == 0) return (a->path = cli_value(argc, argv, i)) ? 1 : -1;
    return 0;
}

int ember_cmd_info_model(int argc, char **argv)
{
    model_args a = {0};
    for (int i = 1; i < argc; i++) {
        int r = parse_flag(argc, argv, &i, &a);
        if (r < 0) return ember_cmd_info_usage(stderr, CLI_USAGE);
        if (r == 0) {
            cli_unknown("info", argv[i]);
            return ember_cmd_info_usage(stderr, CLI_USAGE);
        }
    }
    ember_engine_opts eo = {.max_seqs = 1, .max_batch_tokens = (uint32_t)a.batch, .kv_type = a.kv_type};
    ember_memory_estimate e;
    char msg[512];
    if (ember_estimate_memory(a.path, (uint32_t)a.ctx, &eo, &e, msg, sizeof msg) != EMBER_OK) {
        fprintf(stderr, "ember: %s\n", msg);
        return CLI_FAILED;
    }
    return describe(&a, &e);
}
