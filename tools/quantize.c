/* quantize.c — `ember quantize [--pure] IN.gguf OUT.gguf NAME`: writes a model's
 * matrices as `llama-quantize [--pure] IN OUT NAME` does, tensor for tensor and byte for
 * byte (docs/quantization.md). NAME is one of llama-quantize's names: a single type
 * (q8_0, q6_k, ...) or a preset (q4_k_m, q3_k_s, ...); which type each tensor gets,
 * by llama.cpp's per-tensor rules or (--pure) NAME's type for every matrix, is
 * quant_rules.c's business; this file converts and writes.
 *
 * A tensor is converted row by row with llama.cpp's own quantizers (the codecs of
 * engine/model/dtype.c); tensors already quantized are decoded and quantized again
 * (llama.cpp's --allow-requantize). Everything else (norms, biases, RoPE factors) is
 * copied unchanged, and all metadata, with general.file_type set to NAME's llama.cpp
 * file type (LLAMA_FTYPE_MOSTLY_Q4_K_M = 15, ...).
 *
 * The input must be a model Ember loads (its description and vocabulary are checked as
 * ember_model_load checks them) before anything is written: what quantize copies
 * unchanged would make the output as unloadable as the input, and a user would learn it
 * only from `generate`; and the rules need the model's layers and heads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "engine/model/gguf_write.h"
#include "engine/model/model.h"
#include "engine/model/quant.h"
#include "engine/tokenizer/tokenizer.h"
#include "platform/os_file.h"
#include "quant_rules.h"

/* Converts t row by row (through f32) to type `to` and adds it to w. */
static ember_status add_converted(ember_gguf_writer *w, const ember_gguf_tensor *t, ember_dtype to)
{
    size_t cols = (size_t)t->ne[0], rows = (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
    uint64_t row_in = ember_dtype_size(t->type, cols), row_out = ember_dtype_size(to, cols);
    float *row = malloc(cols * sizeof *row);
    uint8_t *q = malloc(row_out * rows);
    if (!row || !q) {
        free(row), free(q);
        return EMBER_ERR_OUT_OF_MEMORY;
    }
    for (size_t r = 0; r < rows; r++) {
        ember_dequantize_row(t->type, (const uint8_t *)t->data + r * row_in, row, cols);
        ember_quantize_row(to, row, q + r * row_out, cols);
    }
    ember_status st = ember_gguf_add_tensor(w, t->name, to, t->n_dims, t->ne, q, row_out * rows);
    free(row), free(q);
    return st;
}

/* What quantize wrote, for llama-quantize's summary: tensor bytes and values, before and
 * after. */
typedef struct quant_sums {
    uint64_t in_bytes, out_bytes, values;
    uint32_t converted;
} quant_sums;

static uint64_t values_of(const ember_gguf_tensor *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

/* One line per tensor as llama-quantize prints it (index, name, shape, types, sizes),
 * flushed: on a long run the lines are its progress. */
static void report_tensor(uint64_t i, uint64_t n, const ember_gguf_tensor *t, ember_dtype to, uint64_t out_bytes)
{
    char shape[96], a[32], b[32];
    int k = snprintf(shape, sizeof shape, "[%llu", (unsigned long long)t->ne[0]);
    for (uint32_t d = 1; d < t->n_dims && k > 0 && (size_t)k < sizeof shape; d++)
        k += snprintf(shape + k, sizeof shape - (size_t)k, ", %llu", (unsigned long long)t->ne[d]);
    int width = snprintf(NULL, 0, "%llu", (unsigned long long)n);
    printf("[%*llu/%llu] %s %s]: ", width, (unsigned long long)i + 1, (unsigned long long)n, t->name, shape);
    if (to != t->type)
        printf("%s -> %s, %s -> %s\n", ember_dtype_name(t->type), ember_dtype_name(to),
               cli_size((double)t->nbytes, a, sizeof a), cli_size((double)out_bytes, b, sizeof b));
    else
        printf("%s, %s (copied)\n", ember_dtype_name(t->type), cli_size((double)t->nbytes, a, sizeof a));
    fflush(stdout);
}

static ember_status convert(const ember_gguf *in, ember_gguf_writer *w, const quant_job *job, quant_sums *sum)
{
    static const char *const skip[] = { "general.file_type", "general.quantization_version", NULL };
    ember_status st;
    if ((st = ember_gguf_copy_kv(w, in, skip)) ||
        (st = ember_gguf_add_u32(w, "general.file_type", (uint32_t)job->preset->ftype)) ||
        (st = ember_gguf_add_u32(w, "general.quantization_version", 2)))
        return st;
    for (uint64_t i = 0; i < in->n_tensors && !st; i++) {
        const ember_gguf_tensor *t = &in->tensors[i];
        ember_dtype to = quant_tensor_type(job, i);
        uint64_t out_bytes = to != t->type ? ember_dtype_size(to, t->ne[0]) * (values_of(t) / t->ne[0]) : t->nbytes;
        st = to != t->type ? add_converted(w, t, to)
                           : ember_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
        if (st) break;
        report_tensor(i, in->n_tensors, t, to, out_bytes);
        sum->in_bytes += t->nbytes, sum->out_bytes += out_bytes, sum->values += values_of(t);
        sum->converted += to != t->type;
    }
    return st;
}

/* llama-quantize's closing lines: the sizes before and after, and bits per weight. */
static void report_sums(const char *out, uint64_t n_tensors, const quant_sums *s)
{
    double v = s->values ? (double)s->values : 1;
    printf("ember quantize: wrote %s: %llu tensors, %u converted\n", out, (unsigned long long)n_tensors, s->converted);
    printf("ember quantize: model size %.2f MiB (%.2f bits per weight) -> quantized %.2f MiB (%.2f bits per weight)\n",
           s->in_bytes / 1048576.0, 8.0 * (double)s->in_bytes / v, s->out_bytes / 1048576.0,
           8.0 * (double)s->out_bytes / v);
}

static int usage(FILE *out, int code)
{
    char names[512];
    fprintf(out, "usage: ember quantize [--pure] IN.gguf OUT.gguf NAME\n"
                 "  NAME: %s\n"
                 "  writes what llama-quantize [--pure] IN OUT NAME writes, byte for byte, with\n"
                 "  llama.cpp's own quantizers. NAME is llama-quantize's (any case) and means what it\n"
                 "  means there: llama.cpp's per-tensor rules give some tensors more bits (output\n"
                 "  q6_k; in q4_k_m the attn_v and ffn_down of some layers q6_k, ...); q3_k, q4_k and\n"
                 "  q5_k are llama-quantize's aliases of q3_k_m, q4_k_m and q5_k_m.\n"
                 "  --pure  every matrix (not the norms) becomes NAME's type, as llama-quantize --pure:\n"
                 "          rows that are not whole blocks get llama.cpp's fallback (q4_k -> q5_0, ...)\n"
                 "          or f16\n"
                 "  Other tensors and all metadata are copied; general.file_type is llama.cpp's for\n"
                 "  NAME. IN must be a model ember loads (docs/quantization.md)\n",
            quant_preset_names(names, sizeof names));
    return code;
}

/* Whether in describes a model ember_model_load would take (weights and vocabulary); the
 * rules' facts of it in *m. */
static ember_status check_input(const ember_gguf *in, quant_model *m, ember_err *err)
{
    ember_llama llama;
    ember_tokenizer *tok = NULL;
    ember_status st = ember_llama_load(in, &llama, err);
    if (st) return st;
    *m = quant_model_of(&llama);
    ember_llama_free(&llama);
    st = ember_tokenizer_load(in, &tok, err);
    ember_tokenizer_free(tok);
    return st;
}

/* Reads [--pure] IN OUT NAME into job and paths. Returns -1 to go on, else the exit code
 * (after --help, or after saying what is wrong). */
static int parse_args(int argc, char **argv, quant_job *job, const char *paths[2])
{
    const char *pos[3];
    int n = 0;
    for (int i = 1; i < argc; i++)
        if (cli_is_help(argv[i])) return usage(stdout, CLI_OK);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pure") == 0) {
            job->pure = true;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            cli_unknown("quantize", argv[i]);
            return usage(stderr, CLI_USAGE);
        } else if (n++ < 3) {
            pos[n - 1] = argv[i];
        }
    }
    if (n != 3) {
        fprintf(stderr, "ember quantize: wants 3 arguments, IN.gguf OUT.gguf NAME; got %d\n", n);
        return usage(stderr, CLI_USAGE);
    }
    if (!(job->preset = quant_preset_find(pos[2]))) {
        char names[512];
        fprintf(stderr, "ember quantize: unknown type '%s': ember writes %s\n", pos[2],
                quant_preset_names(names, sizeof names));
        return usage(stderr, CLI_USAGE);
    }
    paths[0] = pos[0], paths[1] = pos[1];
    return -1;
}

/* OUT must not be IN (writing it would truncate the mapping being read): compared by
 * device and inode, so another spelling or a link of IN is caught too. */
static bool check_output(const char *in, const char *out)
{
    if (ember_same_file(in, out))
        fprintf(stderr, "ember quantize: %s is the input %s (the same file): writing it would destroy the model "
                        "being read; nothing written\n", out, in);
    else if (ember_path_is_dir(out))
        fprintf(stderr, "ember quantize: %s is a directory; nothing written\n", out);
    else
        return true;
    return false;
}

/* An existing OUT is overwritten, as llama-quantize does, but not silently
 * (docs/quantization.md). */
static void say_if_overwriting(const char *out)
{
    FILE *f = ember_fopen(out, "rb");
    if (!f) return;
    fclose(f);
    fprintf(stderr, "ember quantize: %s exists: overwriting it\n", out);
}

int ember_cmd_quantize(int argc, char **argv)
{
    quant_job job = {0};
    const char *path[2];
    int code = parse_args(argc, argv, &job, path);
    if (code >= 0) return code;
    if (!check_output(path[0], path[1])) return CLI_FAILED;
    ember_gguf *in = NULL;
    ember_gguf_writer *w = NULL;
    ember_err err = {{0}};
    quant_sums sums = {0};
    ember_status st = ember_gguf_open(path[0], &in, &err);
    if (!st && (st = check_input(in, &job.model, &err)))
        snprintf(err.msg + strlen(err.msg), sizeof err.msg - strlen(err.msg), " (nothing written)");
    if (!st)
        st = ember_gguf_writer_create(&w, &err);
    if (!st) {
        job.tensors = in->tensors, job.n_tensors = in->n_tensors;
        st = convert(in, w, &job, &sums);
        if (st == EMBER_ERR_OUT_OF_MEMORY)
            snprintf(err.msg, sizeof err.msg, "out of memory converting %s", path[0]);
        else { /* the writer keeps any add_* failure and reports it, with its message, here */
            say_if_overwriting(path[1]);
            st = ember_gguf_write(w, path[1], &err);
        }
    }
    if (!st) report_sums(path[1], in->n_tensors, &sums);
    ember_gguf_writer_free(w);
    ember_gguf_close(in);
    if (st) {
        fprintf(stderr, "ember quantize: %s\n", err.msg);
        return CLI_FAILED;
    }
    return CLI_OK;
}
