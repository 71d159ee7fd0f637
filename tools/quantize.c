/* quantize.c — `ember quantize IN.gguf OUT.gguf q8_0`: converts a model's matrices to
 * Q8_0 with ggml's reference rule, so the result equals llama.cpp's byte for byte.
 *
 * Every 2-D F32/F16 tensor whose rows are whole Q8_0 blocks (a multiple of 32 values)
 * is converted; everything else (norms, rows of other lengths, tensors already
 * quantized) is copied unchanged, because Q8_0 blocks must not straddle rows. All
 * metadata is copied, with general.file_type set to 7 (llama.cpp's MOSTLY_Q8_0).
 *
 * The input must be a model Ember loads (its description and vocabulary are checked as
 * ember_model_load checks them) before anything is written: what quantize copies
 * unchanged, such as an old Q8_0 tensor whose blocks cross rows, would make the output
 * as unloadable as the input, and a user would learn it only from `generate`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "engine/model/gguf_write.h"
#include "engine/model/model.h"
#include "engine/model/quant.h"
#include "engine/model/quant_legacy.h"
#include "engine/tokenizer/tokenizer.h"

static bool wants_q8_0(const ember_gguf_tensor *t)
{
    return (t->type == EMBER_DTYPE_F32 || t->type == EMBER_DTYPE_F16) && t->n_dims == 2 &&
           t->ne[0] % EMBER_Q8_0_BLOCK == 0;
}

/* Quantizes t row by row (F16 rows go through f32 first) and adds it to w. */
static ember_status add_quantized(ember_gguf_writer *w, const ember_gguf_tensor *t)
{
    size_t cols = (size_t)t->ne[0], rows = (size_t)t->ne[1];
    uint64_t row_in = ember_dtype_size(t->type, cols), row_out = ember_dtype_size(EMBER_DTYPE_Q8_0, cols);
    float *row = malloc(cols * sizeof *row);
    uint8_t *q = malloc(row_out * rows);
    if (!row || !q) {
        free(row), free(q);
        return EMBER_ERR_OUT_OF_MEMORY;
    }
    for (size_t r = 0; r < rows; r++) {
        ember_dequantize_row(t->type, (const uint8_t *)t->data + r * row_in, row, cols);
        ember_quantize_row(EMBER_DTYPE_Q8_0, row, q + r * row_out, cols);
    }
    ember_status st = ember_gguf_add_tensor(w, t->name, EMBER_DTYPE_Q8_0, t->n_dims, t->ne, q,
                                            row_out * rows);
    free(row), free(q);
    return st;
}

static ember_status convert(const ember_gguf *in, ember_gguf_writer *w)
{
    static const char *const skip[] = { "general.file_type", "general.quantization_version", NULL };
    ember_status st;
    if ((st = ember_gguf_copy_kv(w, in, skip)) ||
        (st = ember_gguf_add_u32(w, "general.file_type", 7)) ||
        (st = ember_gguf_add_u32(w, "general.quantization_version", 2)))
        return st;
    for (uint64_t i = 0; i < in->n_tensors && !st; i++) {
        const ember_gguf_tensor *t = &in->tensors[i];
        st = wants_q8_0(t) ? add_quantized(w, t)
                           : ember_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data,
                                                   t->nbytes);
    }
    return st;
}

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember quantize IN.gguf OUT.gguf q8_0\n"
                 "  converts every 2-D F32/F16 matrix with rows of a multiple of 32\n"
                 "  values to Q8_0; other tensors and all metadata are copied.\n"
                 "  IN must be a model ember loads; q8_0 is the one type it writes\n");
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
        fprintf(stderr, "ember quantize: wants 3 arguments, IN.gguf OUT.gguf q8_0; got %d\n", argc - 1);
        return usage(stderr, CLI_USAGE);
    }
    if (strcmp(argv[3], "q8_0") != 0) {
        fprintf(stderr, "ember quantize: unknown type '%s': ember quantizes to q8_0 only\n", argv[3]);
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
        st = convert(in, w);
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
