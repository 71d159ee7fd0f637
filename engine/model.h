/* model.h — the `llama` architecture as read from a GGUF file: hyper-parameters and
 * the tensors of each layer, with every shape checked against the hyper-parameters.
 *
 * Tensor names (llama.cpp's): token_embd.weight, output_norm.weight, output.weight
 * (absent = tied to token_embd), blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,
 * ffn_norm,ffn_gate,ffn_up,ffn_down}.weight. Matrices are row-major with ne[0] = input
 * length: attn_q is ne = {dim, n_heads*head_dim}.
 *
 * RoPE convention: adjacent pairs (x[2i], x[2i+1]) of each head are rotated by
 * theta = pos * rope_base^(-2i/rope_dim), for 2i < rope_dim (llama.cpp's "normal" mode,
 * which its converters arrange for llama weights). */
#ifndef EMBER_MODEL_H
#define EMBER_MODEL_H

#include "gguf.h"

typedef struct ember_hparams {
    uint32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, ctx_len, rope_dim;
    float rope_base, rms_eps;
} ember_hparams;

typedef struct ember_layer_tensors {
    const ember_gguf_tensor *attn_norm, *wq, *wk, *wv, *wo;
    const ember_gguf_tensor *ffn_norm, *w_gate, *w_up, *w_down;
} ember_layer_tensors;

typedef struct ember_llama {
    ember_hparams hp;
    const ember_gguf_tensor *tok_embd, *output_norm, *output; /* output == tok_embd if tied */
    ember_layer_tensors *layers;                               /* n_layers, owned */
} ember_llama;

/* Reads general.architecture (must be "llama"), the llama.* keys and the tensors.
 * Keys: llama.embedding_length, llama.block_count, llama.feed_forward_length,
 * llama.attention.head_count, llama.attention.head_count_kv (default = head_count),
 * llama.context_length, llama.rope.freq_base (default 10000), llama.rope.dimension_count
 * (default head_dim), llama.attention.layer_norm_rms_epsilon (default 1e-5),
 * llama.vocab_size (default: length of tokenizer.ggml.tokens, else token_embd rows).
 * Norm weights must be F32. Any disagreement is EMBER_ERR_FORMAT naming the tensor. */
ember_status ember_llama_load(const ember_gguf *g, ember_llama *out, ember_err *err);
void ember_llama_free(ember_llama *m);

#endif
