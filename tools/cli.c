/* cli.c — see cli.h. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os_file.h"

const char *cli_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "ember: %s needs a value\n", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

bool cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

bool cli_flag_in(const char *flag, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(flag, *list) == 0) return true;
    return false;
}

void cli_unknown(const char *cmd, const char *arg)
{
    if (arg[0] == '-' && arg[1]) fprintf(stderr, "ember %s: unknown option %s\n", cmd, arg);
    else fprintf(stderr, "ember %s: unexpected argument '%s'\n", cmd, arg);
}

const char *const cli_sampling_flags[] = {"--temp", "--top-p", "--min-p", "--repeat-penalty", "--frequency-penalty",
                                          "--presence-penalty", "--top-k", "--seed", "--logit-bias", NULL};
const char *const cli_spec_flags[] = {"--draft", "--draft-k", "--ngram", NULL};
const char *const cli_grammar_flags[] = {"--grammar", "--json-schema", NULL};

bool cli_int(const char *flag, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "ember: %s wants an integer in [%ld, %ld], got '%s'\n", flag, lo, hi, s);
        return false;
    }
    *out = v;
    return true;
}

bool cli_float(const char *flag, const char *s, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || *end || end == s) {
        fprintf(stderr, "ember: %s wants a number, got '%s'\n", flag, s);
        return false;
    }
    *out = v;
    return true;
}

/* --kernels "lanes=32,int-dot=on,fp16-dot=on,stage=on,norm-fusion=off,attn-split=auto,matrix=on,coop=nv":
 * variants forced (ember_kernel_opts). False with a message when malformed. */
static bool parse_kernels(const char *list, ember_kernel_opts *k)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *v = strchr(item, '=');
        if (v) *v++ = '\0';
        long n;
        if (v && strcmp(item, "lanes") == 0) {
            if (!cli_int("--kernels lanes", v, 8, 64, &n) || (n & (n - 1))) {
                fprintf(stderr, "ember: --kernels lanes is 8, 16, 32 or 64\n");
                return false;
            }
            k->linear_lanes = (uint32_t)n;
            continue;
        }
        if (v && strcmp(item, "coop") == 0) {
            static const char *coop[] = {"auto", "khr", "nv", "off"}; /* EMBER_COOP_* in order */
            k->coop_matrix = -1;
            for (int c = 0; c < 4; c++)
                if (strcmp(v, coop[c]) == 0) k->coop_matrix = c;
            if (k->coop_matrix >= 0) continue;
        }
        int *sw = !v                                ? NULL
                  : strcmp(item, "int-dot") == 0     ? &k->int_dot
                  : strcmp(item, "fp16-dot") == 0    ? &k->fp16_dot
                  : strcmp(item, "stage") == 0       ? &k->stage_x
                  : strcmp(item, "norm-fusion") == 0 ? &k->norm_fusion
                  : strcmp(item, "attn-split") == 0  ? &k->attn_split
                  : strcmp(item, "matrix") == 0      ? &k->matrix
                                                     : NULL;
        int val = !v ? -1 : strcmp(v, "auto") == 0 ? EMBER_KERNEL_AUTO : strcmp(v, "on") == 0 ? EMBER_KERNEL_ON
                          : strcmp(v, "off") == 0 ? EMBER_KERNEL_OFF : -1;
        if (!sw || val < 0) {
            fprintf(stderr, "ember: --kernels takes lanes=8|16|32|64, coop=auto|khr|nv|off and int-dot, fp16-dot, "
                            "stage, norm-fusion, attn-split, matrix =on|off|auto, comma-separated; got '%s%s%s'\n", item,
                    v ? "=" : "", v ? v : "");
            return false;
        }
        *sw = val;
    }
    return true;
}

int cli_model_flag(int argc, char **argv, int *i, cli_model_args *a)
{
    const char *f = argv[*i], *v;
    long n;
    if (strcmp(f, "-m") == 0 || strcmp(f, "--model") == 0) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        a->path = v;
        return 1;
    }
    if (strcmp(f, "--backend") == 0) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (strcmp(v, "vulkan") == 0) a->backend = EMBER_BACKEND_VULKAN;
        else if (strcmp(v, "cpu") == 0) a->backend = EMBER_BACKEND_CPU;
        else {
            fprintf(stderr, "ember: --backend is vulkan or cpu, got '%s'\n", v);
            return -1;
        }
        return 1;
    }
    if (strcmp(f, "--device") == 0) {
        /* No upper bound here: the library names how many devices there are. */
        if (!(v = cli_value(argc, argv, i)) || !cli_int(f, v, 0, 1 << 20, &n)) return -1;
        a->device = (int)n + 1;
        return 1;
    }
    if (strcmp(f, "--kernels") == 0) return (v = cli_value(argc, argv, i)) && parse_kernels(v, &a->kernels) ? 1 : -1;
    if (strcmp(f, "--memory-budget") == 0)
        return (v = cli_value(argc, argv, i)) && cli_int(f, v, 1, 1 << 30, &a->budget_mib) ? 1 : -1;
    if (strcmp(f, "--memory") == 0) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (strcmp(v, "auto") == 0) a->memory = EMBER_MEMORY_AUTO;
        else if (strcmp(v, "discrete") == 0) a->memory = EMBER_MEMORY_DISCRETE;
        else {
            fprintf(stderr, "ember: --memory is auto or discrete, got '%s'\n", v);
            return -1;
        }
        return 1;
    }
    return 0;
}

void cli_progress(const char *what, double fraction, const char *tail)
{
    if (!ember_is_terminal(stderr)) return;
    int width = 40, filled = (int)(fraction * width + 0.5);
    filled = filled < 0 ? 0 : filled > width ? width : filled;
    fprintf(stderr, "\r%s [%.*s%*s] %3d%%%s%s\033[K", what, filled, "########################################",
            width - filled, "", (int)(fraction * 100 + 0.5), tail ? " " : "", tail ? tail : "");
    if (fraction >= 1.0) fputs("\r\033[K", stderr);
    fflush(stderr);
}

/* The bar while weights upload, redrawn when it grows. */
static void show_progress(void *user, float fraction)
{
    int *last = user, filled = (int)(fraction * 40 + 0.5f);
    if (filled == *last) return;
    *last = filled;
    cli_progress("loading", fraction, NULL);
}

/* The device to use: --device, else EMBER_DEVICE (read here, where --device is, so that
 * both are checked and reported alike), else 0 (automatic). -1 when EMBER_DEVICE is bad. */
static int pick_device(const cli_model_args *a, const char **source)
{
    const char *env = getenv("EMBER_DEVICE");
    long n;
    *source = a->device_flag ? a->device_flag : "--device";
    if (a->device || !env || !*env || a->backend == EMBER_BACKEND_CPU || a->vocab_only) return a->device;
    *source = "EMBER_DEVICE";
    return cli_int("EMBER_DEVICE", env, 0, 1 << 20, &n) ? (int)n + 1 : -1;
}

/* EMBER_FAULTS="submit_lost=N,wait_lost=N,device_alloc=N": faults injected into the
 * model's device (ember_model_inject_faults), so that tests can see what a command does
 * when the GPU is lost or full. Unset: none. False (with a message) when malformed. */
static bool faults_from_env(ember_faults *f)
{
    const char *env = getenv("EMBER_FAULTS");
    memset(f, 0, sizeof *f);
    if (!env || !*env) return true;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", env);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        long n;
        if (eq) *eq = 0;
        uint32_t *slot = !strcmp(item, "submit_lost") ? &f->submit_lost : !strcmp(item, "wait_lost") ? &f->wait_lost
                       : !strcmp(item, "device_alloc") ? &f->device_alloc : NULL;
        if (!slot || !eq || !cli_int("EMBER_FAULTS", eq + 1, 0, 1L << 30, &n)) {
            fprintf(stderr, "ember: EMBER_FAULTS takes submit_lost=N, wait_lost=N, device_alloc=N separated by "
                            "commas, not '%s'\n", env);
            return false;
        }
        *slot = (uint32_t)n;
    }
    return true;
}

ember_model *cli_load_model(const cli_model_args *a)
{
    if (!a->path) {
        fprintf(stderr, "ember: no model given (-m FILE.gguf)\n");
        return NULL;
    }
    const char *source;
    ember_model_opts o = {.backend = a->backend, .device_index = pick_device(a, &source), .memory = a->memory,
                          .vocab_only = a->vocab_only, .memory_budget_mib = (uint32_t)a->budget_mib,
                          .kernels = a->kernels};
    if (o.device_index < 0) return NULL;
    ember_faults faults;
    if (!faults_from_env(&faults)) return NULL;
    o.faults = &faults;
    const char *env = getenv("EMBER_VALIDATION");
    o.enable_validation = env && strcmp(env, "1") == 0;
    int last = -1;
    if (ember_is_terminal(stderr)) {
        o.progress = show_progress;
        o.progress_user = &last;
    }
    ember_model *m = NULL;
    ember_status s = ember_model_load(a->path, &o, &m);
    if (s != EMBER_OK) {
        fprintf(stderr, "ember: %s%s", a->role ? a->role : "", a->role ? ": " : "");
        if (s == EMBER_ERR_NO_DEVICE && o.device_index) /* say where the number came from */
            fprintf(stderr, "%s%s%d: %s; `ember info` lists the devices\n", source, source[0] == '-' ? " " : "=",
                    o.device_index - 1, ember_model_error(m));
        else
            fprintf(stderr, "%s\n", ember_model_error(m));
        ember_model_free(m);
        return NULL;
    }
    return m;
}

int cli_free_model(ember_model *m, int code)
{
    char first[1024];
    uint32_t n = m ? ember_model_validation_messages(m, first, sizeof first) : 0;
    ember_model_free(m);
    if (n) {
        fprintf(stderr, "ember: %u Vulkan validation message(s); first: %s\n", n, first);
        return 1;
    }
    return code;
}

ember_model *cli_load_with_draft(const cli_model_args *a, const char *draft_path, ember_model **draft)
{
    *draft = NULL;
    ember_model *m = cli_load_model(a);
    if (!m || !draft_path) return m;
    cli_model_args da = *a;
    da.path = draft_path;
    da.role = "draft model";
    if (!(*draft = cli_load_model(&da))) {
        cli_free_model(m, 1);
        return NULL;
    }
    return m;
}

int cli_free_with_draft(ember_model *m, ember_model *draft, int code)
{
    if (draft) code = cli_free_model(draft, code);
    return cli_free_model(m, code);
}

FILE *cli_open_input(const char *cmd, const char *path, const char *mode, const char *wants)
{
    if (ember_path_is_dir(path)) {
        fprintf(stderr, "ember %s: %s is a directory; -f wants %s\n", cmd, path, wants);
        return NULL;
    }
    FILE *f = ember_fopen(path, mode);
    if (!f) fprintf(stderr, "ember %s: cannot open %s: %s\n", cmd, path, strerror(errno));
    return f;
}

/* The whole of f as a NUL-terminated string (malloc'd), or NULL. */
static char *read_all(FILE *f, size_t *len)
{
    size_t n = 0, cap = 0;
    char *s = NULL;
    for (;;) {
        if (!cli_grow((void **)&s, &cap, n + 4096 + 1, 1)) break;
        size_t got = fread(s + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) break;
            s[n] = 0;
            if (len) *len = n;
            return s;
        }
    }
    free(s);
    return NULL;
}

char *cli_read_bytes(const char *cmd, const char *path, size_t *len)
{
    bool dir = ember_path_is_dir(path);
    FILE *f = dir ? NULL : ember_fopen(path, "rb");
    char *text = f ? read_all(f, len) : NULL;
    if (!text) fprintf(stderr, "ember %s: cannot read %s: %s\n", cmd, path,
                       dir ? "it is a directory" : strerror(errno ? errno : EIO));
    if (f) fclose(f);
    return text;
}

char *cli_read_file(const char *cmd, const char *path) { return cli_read_bytes(cmd, path, NULL); }

int cli_grammar_flag(const char *cmd, const char *flag, const char *path, cli_grammar *g)
{
    bool schema = strcmp(flag, "--json-schema") == 0;
    if (!schema && strcmp(flag, "--grammar") != 0) return 0;
    char *text = cli_read_file(cmd, path);
    if (!text) return -1;
    char **to = schema ? &g->json_schema : &g->gbnf;
    free(*to);
    *to = text;
    return 1;
}

void cli_grammar_free(cli_grammar *g)
{
    free(g->gbnf);
    free(g->json_schema);
    *g = (cli_grammar){0};
}

long cli_get_line(char **line, size_t *cap, FILE *f)
{
    size_t n = 0;
    for (;;) {
        if (*cap - n < 2 && !cli_grow((void **)line, cap, *cap + 256, 1)) return n ? (long)n : -1;
        if (!fgets(*line + n, (int)(*cap - n < 0x7FFFFFFF ? *cap - n : 0x7FFFFFFF), f)) return n ? (long)n : -1;
        n += strlen(*line + n);
        if (n > 0 && (*line)[n - 1] == '\n') return (long)n;
    }
}

bool cli_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

bool cli_output_add(cli_output *o, uint32_t token, const char *text, size_t len)
{
    if (!cli_grow((void **)&o->tokens, &o->cap, o->n + 1, sizeof *o->tokens) ||
        !cli_grow((void **)&o->text, &o->text_cap, o->len + len + 1, 1))
        return false;
    o->tokens[o->n++] = token;
    memcpy(o->text + o->len, text, len);
    o->len += len;
    o->text[o->len] = 0;
    return true;
}

void cli_output_free(cli_output *o)
{
    free(o->tokens);
    free(o->text);
    *o = (cli_output){0};
}

void cli_json_string(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* "ID=BIAS", or llama.cpp's "ID+BIAS" / "ID-BIAS"; BIAS a number or -inf. */
static bool parse_bias(const char *v, uint32_t *id, float *bias)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (end == v || errno || n > UINT32_MAX || (*end != '=' && *end != '+' && *end != '-')) return false;
    const char *b = *end == '=' ? end + 1 : end; /* the sign belongs to the number */
    *id = (uint32_t)n;
    *bias = strtof(b, &end);
    return end != b && !*end && !isnan(*bias) && *bias != INFINITY;
}

/* One --logit-bias value, appended to s's biases. */
static bool logit_bias_flag(const char *f, const char *v, ember_sampling *s, ember_logit_bias *bias)
{
    uint32_t id;
    float x;
    if (!parse_bias(v, &id, &x)) {
        fprintf(stderr, "ember: %s wants TOKEN_ID=BIAS (or ID+BIAS, ID-BIAS; BIAS a number or -inf), got '%s'\n", f, v);
        return false;
    }
    if (s->n_logit_bias == CLI_MAX_BIAS) {
        fprintf(stderr, "ember: at most %d %s\n", CLI_MAX_BIAS, f);
        return false;
    }
    bias[s->n_logit_bias++] = (ember_logit_bias){id, x};
    s->logit_bias = bias;
    return true;
}

bool cli_sampling_flag(const char *f, const char *v, ember_sampling *s, ember_logit_bias *bias, int *matched)
{
    long n;
    *matched = 1;
    if (strcmp(f, "--logit-bias") == 0) return logit_bias_flag(f, v, s, bias);
    if (strcmp(f, "--temp") == 0) return cli_float(f, v, &s->temperature);
    if (strcmp(f, "--top-p") == 0) return cli_float(f, v, &s->top_p);
    if (strcmp(f, "--min-p") == 0) return cli_float(f, v, &s->min_p);
    if (strcmp(f, "--repeat-penalty") == 0) return cli_float(f, v, &s->repetition_penalty);
    if (strcmp(f, "--frequency-penalty") == 0) return cli_float(f, v, &s->frequency_penalty);
    if (strcmp(f, "--presence-penalty") == 0) return cli_float(f, v, &s->presence_penalty);
    if (strcmp(f, "--top-k") == 0) {
        if (!cli_int(f, v, 0, 1 << 30, &n)) return false;
        s->top_k = (uint32_t)n;
        return true;
    }
    if (strcmp(f, "--seed") == 0) {
        if (!cli_int(f, v, 0, 0x7fffffffL, &n)) return false;
        s->seed = (uint64_t)n;
        return true;
    }
    *matched = 0;
    return true;
}

int cli_habit_flag(const char *cmd, int argc, char **argv, int *i, cli_habits *h)
{
    static const char *const ctx_flags[] = {"-c", "--ctx-size", "--ctx", NULL};
    static const char *const thread_flags[] = {"-t", "--threads", NULL};
    const char *f = argv[*i], *v;
    long n;
    bool ctx = cli_flag_in(f, ctx_flags);
    if (!ctx && !cli_flag_in(f, thread_flags)) return 0;
    if (!(v = cli_value(argc, argv, i))) return -1;
    if (ctx) {
        if (!cli_int(f, v, 0, 1 << 24, &h->ctx)) return -1;
        h->ctx_given = true;
        return 1;
    }
    if (!cli_int(f, v, -1, 1 << 16, &n)) return -1; /* llama.cpp's -1: every core */
    fprintf(stderr, "ember %s: %s %s ignored: the model runs on the Vulkan device, which needs no thread count "
                    "(on lavapipe, Mesa's CPU driver, LP_NUM_THREADS=N sets its threads)\n", cmd, f, v);
    return 1;
}

uint32_t cli_context(const char *cmd, long asked, uint32_t model_ctx)
{
    if (asked <= 0) return model_ctx;
    if ((unsigned long)asked <= model_ctx) return (uint32_t)asked;
    fprintf(stderr, "ember %s: a context of %ld tokens is past the model's %u: using %u\n", cmd, asked, model_ctx,
            model_ctx);
    return model_ctx;
}

const char cli_sampling_help[] =
    "sampling (default: greedy, the most likely token each step; --temp above 0 samples):\n"
    "          --temp T (0) --top-k K (0 = off) --top-p P (1 = off) --min-p P (0 = off)\n"
    "          --repeat-penalty R (1 = off) --frequency-penalty F (0) --presence-penalty P (0)\n"
    "          --seed S (0; the same seed gives the same tokens)\n"
    "          --logit-bias ID=BIAS (repeatable; -inf bans the token)\n";

int cli_spec_flag(const char *f, const char *v, ember_speculation *spec, const char **draft_path)
{
    long n;
    if (strcmp(f, "--draft") == 0) *draft_path = v;
    else if (strcmp(f, "--draft-k") == 0 && cli_int(f, v, 1, EMBER_MAX_DRAFT, &n)) spec->draft_k = (uint32_t)n;
    else if (strcmp(f, "--ngram") == 0 && cli_int(f, v, 1, 64, &n)) spec->ngram = (uint32_t)n;
    else if (strcmp(f, "--draft-k") == 0 || strcmp(f, "--ngram") == 0) return -1;
    else return 0;
    if (!spec->draft_k && (spec->ngram || *draft_path)) spec->draft_k = 4;
    return 1;
}

/* The KV cache types by their --kv-type names (llama.cpp's --cache-type-k names). */
static const struct {
    const char *name;
    ember_kv_type type;
} KV_TYPES[] = {{"f32", EMBER_KV_F32}, {"f16", EMBER_KV_F16}, {"q8_0", EMBER_KV_Q8_0}};

bool cli_kv_type(const char *flag, const char *s, ember_kv_type *out)
{
    for (size_t i = 0; i < sizeof KV_TYPES / sizeof KV_TYPES[0]; i++)
        if (strcmp(s, KV_TYPES[i].name) == 0) return *out = KV_TYPES[i].type, true;
    fprintf(stderr, "ember: %s is f32, f16 or q8_0, got '%s'\n", flag, s);
    return false;
}

bool cli_sample_from(const char *flag, const char *s, ember_sample_from *out)
{
    static const char *const names[] = {"auto", "candidates", "rows"}; /* by ember_sample_from */
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) return *out = (ember_sample_from)i, true;
    fprintf(stderr, "ember: %s is auto, candidates or rows, got '%s'\n", flag, s);
    return false;
}

const char *cli_kv_type_name(ember_kv_type t)
{
    for (size_t i = 0; i < sizeof KV_TYPES / sizeof KV_TYPES[0]; i++)
        if (KV_TYPES[i].type == t) return KV_TYPES[i].name;
    return "unknown";
}

const char *cli_size(double bytes, char *buf, size_t cap)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) bytes /= 1024, u++;
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}
