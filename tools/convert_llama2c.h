/* convert_llama2c.h — Karpathy's llama2.c checkpoint + tokenizer.bin -> llama GGUF.
 * The `ember convert llama2c` command (ember_cmd_convert in commands.h) calls this;
 * tests call it directly. See docs/llama2c.md. */
#ifndef EMBER_CONVERT_LLAMA2C_H
#define EMBER_CONVERT_LLAMA2C_H

#include "common/error.h"

/* Reads the checkpoint ckpt (legacy version 0, or "ak42" version 1 fp32 / version 2
 * int8, which is dequantized) and the tokenizer tok, checks that every size agrees
 * with the file lengths, and writes out_path: a llama GGUF with all tensors F32 and
 * the vocabulary as tokenizer.ggml.* (model "llama"). A bad input is
 * EMBER_ERR_FORMAT / EMBER_ERR_UNSUPPORTED with a message naming the file; a failed
 * write leaves no file. */
ember_status ember_convert_llama2c(const char *ckpt, const char *tok, const char *out_path,
                                   ember_err *err);

#endif
