/* model_handle.h — what stands behind the public ember_model handle (library-internal). */
#ifndef EMBER_MODEL_HANDLE_H
#define EMBER_MODEL_HANDLE_H

#include "engine/gpu/gpu_model.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"

struct ember_model {
    ember_err err;
    ember_backend backend;
    ember_gguf *gguf;
    ember_llama llama;
    bool llama_loaded;
    ember_tokenizer *tok;
    ember_vk *vk;              /* NULL for the CPU backend */
    ember_gpu_model *gpu;
    uint64_t weight_bytes;     /* device memory of the weights (the budget's floor) */
    uint64_t fingerprint;      /* ember_gguf_fingerprint: which KV states are its */
};

#endif
