/* quantize.c — `ember quantize IN.gguf OUT.gguf TYPE`: converts a model's matrices to
 * TYPE with llama.cpp's own quantizers (the codecs of engine/model/dtype.c), so the
 * result equals `llama-quantize --pure` byte for byte (docs/quantization.md).
 *
 * Which tensors, as llama.cpp decides for a pure quantization: every tensor of two or
 * more dimensions whose name ends in "weight" and is not a norm; its rows must be whole
 * blocks of TYPE, else it gets TYPE's fallback (Q4_K -> Q5_0, ...) or F16. Tensors
 * already quantized are decoded and quantized again (llama.cpp's --allow-requantize).
 * Everything else (norms, biases, RoPE factors) is copied unchanged, and all metadata,
 * with general.file_type set to llama.cpp's file type for TYPE.
 *
 * The input must be a model Ember loads (its description and vocabulary are checked as
 * ember_model_load checks them) before anything is written: what quantize copies
 * unchanged would make the output as unloadable as the input, and a user would learn it
 * only from `generate`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "engine/model/gguf_write.h"
#include "engine/model/model.h"
#include "engine/model/quant.h"
#include "engine/tokenizer/tokenizer.h"

static bool ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), k = strlen(end);
    return n >= k && strcmp(s + n - k, end) == 0;
}

/* The type t is written as for target: NONE when t is copied as it is. */
static ember_dtype new_type(const ember_gguf_tensor *t, ember_dtype target)
{
    if (t->n_dims < 2 || !ends_with(t->name, "weight") || ends_with(t->name, "_norm.weight")) return EMBER_DTYPE_NONE;
    ember_dtype to = ember_dtype_for_rows(target, t->ne[0]);
    return to == t->type ? EMBER_DTYPE_NONE : to;
}

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

static ember_status convert(const ember_gguf *in, ember_gguf_writer *w, const ember_dtype_info *target)
{
    static const char *const skip[] = { "general.file_type", "general.quantization_version", NULL };
    ember_status st;
    if ((st = ember_gguf_copy_kv(w, in, skip)) ||
        (st = ember_gguf_add_u32(w, "general.file_type", target->ftype)) ||
        (st = ember_gguf_add_u32(w, "general.quantization_version", 2)))
        return st;
    for (uint64_t i = 0; i < in->n_tensors && !st; i++) {
        const ember_gguf_tensor *t = &in->tensors[i];
        ember_dtype to = new_type(t, target->type);
        st = to != EMBER_DTYPE_NONE ? add_converted(w, t, to)
                                    : ember_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    return st;
}

static int usage(FILE *out, int code)
{
    char types[256];
    fprintf(out, "usage: ember quantize IN.gguf OUT.gguf TYPE\n"
                 "  TYPE: %s\n"
                 "  converts every matrix (not the norms) to TYPE as llama-quantize --pure does, with\n"
                 "  llama.cpp's own quantizers (the same bytes); rows that are not whole blocks of TYPE\n"
                 "  get llama.cpp's fallback type (q4_k -> q5_0, ...) or f16. Other tensors and all\n"
                 "  metadata are copied. IN must be a model ember loads (docs/quantization.md)\n",
            ember_dtype_writable_names(types, sizeof types));
    return code;
}

/* Whether in describes a model ember_model_load would take (weights and vocabulary). */
static ember_status check_input(const ember_gguf *in, ember_err *err)
{
    ember_llama llama;
    ember_tokenizer *tok = NULL;
    ember_status st = ember_llama_load(in, &llama, err);
    if (st) return st;
    ember_llama_free(&llama);
    st = ember_tokenizer_load(in, &tok, err);
    ember_tokenizer_free(tok);
    return st;
}

int ember_cmd_quantize(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (cli_is_help(argv[i])) return usage(stdout, CLI_OK);
    for (int i = 1; i < argc; i++)
        if (argv[i][0] == '-' && argv[i][1]) {
            cli_unknown("quantize", argv[i]);
            return usage(stderr, CLI_USAGE);
        }
    if (argc != 4) {
        fprintf(stderr, "ember quantize: wants 3 arguments, IN.gguf OUT.gguf TYPE; got %d\n", argc - 1);
        return usage(stderr, CLI_USAGE);
    }
    const ember_dtype_info *target = ember_dtype_writable(argv[3]);
    if (!target) {
        char types[256];
        fprintf(stderr, "ember quantize: unknown type '%s': ember writes %s\n", argv[3],
                ember_dtype_writable_names(types, sizeof types));
        return usage(stderr, CLI_USAGE);
    }
    ember_gguf *in = NULL;
    ember_gguf_writer *w = NULL;
    ember_err err = {{0}};
    ember_status st = ember_gguf_open(argv[1], &in, &err);
    if (!st && (st = check_input(in, &err)))
        snprintf(err.msg + strlen(err.msg), sizeof err.msg - strlen(err.msg), " (nothing written)");
    if (!st)
        st = ember_gguf_writer_create(&w, &err);
    if (!st) {
        st = convert(in, w, target);
        if (st == EMBER_ERR_OUT_OF_MEMORY)
            snprintf(err.msg, sizeof err.msg, "out of memory converting %s", argv[1]);
        else /* the writer keeps any add_* failure and reports it, with its message, here */
            st = ember_gguf_write(w, argv[2], &err);
    }
    ember_gguf_writer_free(w);
    ember_gguf_close(in);
    if (st) {
        fprintf(stderr, "ember quantize: %s\n", err.msg);
        return CLI_FAILED;
    }
    return CLI_OK;
}
