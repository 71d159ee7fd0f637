/* make_test_model_args.h — `ember make-test-model`'s options (make_test_model_args.c):
 * the shape, the family, the types and the keys to write, parsed and checked against the
 * family before anything is made. */
#ifndef EMBER_TOOLS_MAKE_TEST_MODEL_ARGS_H
#define EMBER_TOOLS_MAKE_TEST_MODEL_ARGS_H

#include <stdbool.h>

#include "engine/model/arch.h"
#include "engine/model/quant.h"
#include "quant_rules.h"
#include "test_vocab.h"

typedef struct tm_args {
    const char *out;
    long dim, layers, heads, kv_heads, ffn, vocab, ctx, seed;
    float rope_base;
    ember_dtype type;     /* the matrices' type; a preset's default type when preset is set */
    const quant_preset *preset; /* q4_k_m and the like: llama-quantize's per-tensor mix */
    bool tied;
    const ember_arch *arch; /* the family: its key prefix, tensors and keys (arch.h) */
    bool rope_freqs;      /* write rope_freqs.weight (Llama 3.1-style frequency factors) */
    float rope_scale;     /* RoPE scaling factor (linear, or YaRN with yarn); 0 = none */
    bool yarn;            /* rope.scaling.type yarn */
    bool longrope;        /* rope_factors_long/short.weight and LongRoPE's attn_factor */
    long head_dim;        /* attention.key_length/value_length (0: dim / heads, not written) */
    long rope_dim;        /* rope.dimension_count (0: the head size) */
    long orig_ctx;        /* rope.scaling.original_context_length (0: not written) */
    char *chat_template;  /* --chat-template FILE: tokenizer.chat_template (malloc'd), or NULL */
    long pooling;         /* <arch>.pooling_type to write (0..4), or -1: none */
    long experts, experts_used, expert_ffn; /* a mixture of experts (0: dense; qwen3moe: 8, 2) */
    bool mixtral;         /* --arch mixtral: llama with experts (8 unless --experts says) */
    const char *keys[16]; /* --key SUFFIX=VALUE: the family's own keys (arch.c) */
    int n_keys;
} tm_args;

/* Fills *a from the command line (defaults first) and checks it against its family.
 * True when the model is to be made; else *code is the exit code (CLI_OK after --help,
 * CLI_USAGE after saying what is wrong). a->chat_template is malloc'd: free it. */
bool tm_parse(int argc, char **argv, tm_args *a, int *code);

/* An expert's FFN width: --expert-ffn, else --ffn (llama's Mixtral), else --ffn / k
 * (qwen3moe's default when the file has no expert_feed_forward_length). */
long tm_expert_ffn(const tm_args *a);
/* The head size the file declares or implies, and the rotary size. */
long tm_head_dim(const tm_args *a);
long tm_rope_dim(const tm_args *a);
/* The family's key of this suffix (arch.c), or NULL. */
const ember_arch_key *tm_family_key(const ember_arch *arch, const char *suffix, size_t n);

#endif
