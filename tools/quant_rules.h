/* quant_rules.h — what `ember quantize` writes each tensor as: llama-quantize's names
 * (the single types and the presets q4_k_m, q3_k_s, ...) and llama.cpp's per-tensor rules
 * (src/llama-quant.cpp), so that `ember quantize IN OUT NAME` chooses the same type for
 * every tensor as `llama-quantize IN OUT NAME`, and with --pure as `llama-quantize --pure`
 * (docs/quantization.md). quantize.c does the writing. */
#ifndef EMBER_TOOLS_QUANT_RULES_H
#define EMBER_TOOLS_QUANT_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/gguf.h"
#include "engine/model/model.h"

/* llama.h's enum llama_ftype: the general.file_type a name writes, and what the rules
 * switch on. Only those of the names Ember takes. */
typedef enum quant_ftype {
    QUANT_FTYPE_ALL_F32 = 0,
    QUANT_FTYPE_F16 = 1,
    QUANT_FTYPE_Q4_0 = 2,
    QUANT_FTYPE_Q4_1 = 3,
    QUANT_FTYPE_Q8_0 = 7,
    QUANT_FTYPE_Q5_0 = 8,
    QUANT_FTYPE_Q5_1 = 9,
    QUANT_FTYPE_Q2_K = 10,
    QUANT_FTYPE_Q3_K_S = 11,
    QUANT_FTYPE_Q3_K_M = 12,
    QUANT_FTYPE_Q3_K_L = 13,
    QUANT_FTYPE_Q4_K_S = 14,
    QUANT_FTYPE_Q4_K_M = 15,
    QUANT_FTYPE_Q5_K_S = 16,
    QUANT_FTYPE_Q5_K_M = 17,
    QUANT_FTYPE_Q6_K = 18,
    QUANT_FTYPE_IQ4_NL = 25,
    QUANT_FTYPE_IQ4_XS = 30,
    QUANT_FTYPE_BF16 = 32,
    QUANT_FTYPE_MXFP4_MOE = 38,
} quant_ftype;

/* One name llama-quantize takes (tools/quantize/quantize.cpp, QUANT_OPTIONS) that Ember
 * writes. */
typedef struct quant_preset {
    const char *name;      /* lower case: "q4_k_m" */
    quant_ftype ftype;     /* the file type llama-quantize writes for the name */
    ember_dtype type;      /* llama_ftype_get_default_type: a matrix's type unless a rule
                              or a fallback says otherwise */
} quant_preset;

/* The preset called name, in any case ("Q4_K_M", "q4_k_m"); NULL for a name Ember does
 * not write. */
const quant_preset *quant_preset_find(const char *name);
/* The i-th preset (0, 1, ...), in the order --help lists them; NULL past the last. */
const quant_preset *quant_preset_at(size_t i);
/* All names, comma-separated, in buf (cap bytes); returns buf. */
const char *quant_preset_names(char *buf, size_t cap);

/* What the rules ask of the model (llama.cpp's hparams and model type). */
typedef struct quant_model {
    uint32_t n_layers;     /* <arch>.block_count: llama.cpp's n_layer_all */
    uint32_t n_gqa;        /* query heads per KV head: llama.cpp's n_gqa() */
    bool is_70b;           /* llama.cpp's LLM_TYPE_70B, whose attn_v gets more bits */
    uint32_t n_expert;     /* <arch>.expert_count (0: dense); 8 changes attention's rules */
} quant_model;

/* The facts of a model Ember loaded. */
quant_model quant_model_of(const ember_llama *m);

/* One quantization: which name, pure or not, of which model and tensors (borrowed). */
typedef struct quant_job {
    const quant_preset *preset;
    bool pure;                          /* llama-quantize --pure: no per-tensor rules */
    quant_model model;
    const ember_gguf_tensor *tensors;   /* all the input's tensors */
    uint64_t n_tensors;
} quant_job;

/* The type tensor i is written as: its own type when it is copied unchanged (not a
 * matrix to quantize, or already of the chosen type), else the type llama.cpp chooses
 * for it, its fallback or F16 (llama_tensor_get_type). */
ember_dtype quant_tensor_type(const quant_job *job, uint64_t i);

#endif
