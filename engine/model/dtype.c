/* dtype.c — the table of tensor element types (dtype.h). A type's block layout lives
 * here and in its decoder; adding a type is a row here, its C decode and encode
 * (quant_*.c), its GLSL decode for the Vulkan kernels, and its tests
 * (docs/quantization.md). */
#include "dtype.h"

#include <ctype.h>

#include "floats.h"
#include "quant_fp4.h"
#include "quant_iq.h"
#include "quant_k.h"
#include "quant_legacy.h"

/* Blocks: ggml-common.h's block_* structs. Fallbacks: llama-quant.cpp's
 * tensor_type_fallback. File types: llama.h's LLAMA_FTYPE_MOSTLY_* (a K type's is its
 * "_S" preset, as llama-quantize --pure writes). */
static const ember_dtype_info TYPES[] = {
    {EMBER_DTYPE_F32, "F32", 1, 4, true, EMBER_DTYPE_NONE, 0, ember_f32_to_float, ember_f32_from_float},
    {EMBER_DTYPE_F16, "F16", 1, 2, true, EMBER_DTYPE_NONE, 1, ember_f16_to_float, ember_f16_from_float},
    {EMBER_DTYPE_BF16, "BF16", 1, 2, true, EMBER_DTYPE_NONE, 32, ember_bf16_to_float, ember_bf16_from_float},
    {EMBER_DTYPE_Q4_0, "Q4_0", 32, 18, true, EMBER_DTYPE_NONE, 2, ember_q4_0_to_float, ember_q4_0_from_float},
    {EMBER_DTYPE_Q4_1, "Q4_1", 32, 20, true, EMBER_DTYPE_NONE, 3, ember_q4_1_to_float, ember_q4_1_from_float},
    {EMBER_DTYPE_Q5_0, "Q5_0", 32, 22, true, EMBER_DTYPE_NONE, 8, ember_q5_0_to_float, ember_q5_0_from_float},
    {EMBER_DTYPE_Q5_1, "Q5_1", 32, 24, true, EMBER_DTYPE_NONE, 9, ember_q5_1_to_float, ember_q5_1_from_float},
    {EMBER_DTYPE_Q8_0, "Q8_0", 32, 34, true, EMBER_DTYPE_NONE, 7, ember_q8_0_to_float, ember_q8_0_from_float},
    {EMBER_DTYPE_Q2_K, "Q2_K", 256, 84, true, EMBER_DTYPE_Q4_0, 10, ember_q2_k_to_float, ember_q2_k_from_float},
    {EMBER_DTYPE_Q3_K, "Q3_K", 256, 110, true, EMBER_DTYPE_Q4_0, 11, ember_q3_k_to_float, ember_q3_k_from_float},
    {EMBER_DTYPE_Q4_K, "Q4_K", 256, 144, true, EMBER_DTYPE_Q5_0, 14, ember_q4_k_to_float, ember_q4_k_from_float},
    {EMBER_DTYPE_Q5_K, "Q5_K", 256, 176, true, EMBER_DTYPE_Q5_1, 16, ember_q5_k_to_float, ember_q5_k_from_float},
    {EMBER_DTYPE_Q6_K, "Q6_K", 256, 210, true, EMBER_DTYPE_Q8_0, 18, ember_q6_k_to_float, ember_q6_k_from_float},
    {EMBER_DTYPE_IQ4_NL, "IQ4_NL", 32, 18, true, EMBER_DTYPE_NONE, 25, ember_iq4_nl_to_float, ember_iq4_nl_from_float},
    {EMBER_DTYPE_IQ4_XS, "IQ4_XS", 256, 136, true, EMBER_DTYPE_IQ4_NL, 30, ember_iq4_xs_to_float, ember_iq4_xs_from_float},
    {EMBER_DTYPE_MXFP4, "MXFP4", 32, 17, true, EMBER_DTYPE_NONE, 38, ember_mxfp4_to_float, ember_mxfp4_from_float},
};

#define N_TYPES (sizeof TYPES / sizeof *TYPES)

const ember_dtype_info *ember_dtype_find(uint64_t id)
{
    for (size_t i = 0; i < N_TYPES; i++)
        if ((uint64_t)TYPES[i].type == id) return &TYPES[i];
    return NULL;
}

const char *ember_dtype_ggml_name(uint64_t id)
{
    /* ggml.h's enum ggml_type, in order (4 and 5 were Q4_2 and Q4_3, long removed) */
    static const char *const names[] = {
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1",
        "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS",
        "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64",
        "IQ1_M", "BF16", "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4",
        "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4", "NVFP4", "Q1_0", "Q2_0",
    };
    return id < sizeof names / sizeof *names ? names[id] : "unknown";
}

uint64_t ember_dtype_size(ember_dtype t, uint64_t n)
{
    const ember_dtype_info *d = ember_dtype_find(t);
    return d ? n / d->block * d->bytes : 0;
}

const char *ember_dtype_name(ember_dtype t)
{
    const ember_dtype_info *d = ember_dtype_find(t);
    return d ? d->name : "unknown";
}

uint32_t ember_dtype_block(ember_dtype t)
{
    const ember_dtype_info *d = ember_dtype_find(t);
    return d ? d->block : 1;
}

const ember_dtype_info *ember_dtype_writable(const char *name)
{
    for (size_t i = 0; i < N_TYPES; i++) {
        const char *a = TYPES[i].name, *b = name;
        while (*a && *b && tolower((unsigned char)*a) == *b) a++, b++;
        if (!*a && !*b && TYPES[i].from_float) return &TYPES[i];
    }
    return NULL;
}

ember_dtype ember_dtype_for_rows(ember_dtype want, uint64_t cols)
{
    const ember_dtype_info *d = ember_dtype_find(want);
    if (cols % d->block == 0) return want;
    if (d->fallback != EMBER_DTYPE_NONE && cols % ember_dtype_block(d->fallback) == 0) return d->fallback;
    return EMBER_DTYPE_F16;
}

const char *ember_dtype_writable_names(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < N_TYPES && len + 10 < cap; i++) {
        if (!TYPES[i].from_float) continue;
        if (len) buf[len++] = ',', buf[len++] = ' ';
        for (const char *c = TYPES[i].name; *c; c++) buf[len++] = (char)tolower((unsigned char)*c);
        buf[len] = 0;
    }
    return buf;
}
