/* ember.h — the public C API of Ember, a portable LLM inference engine.
 *
 * Conventions (SQLite-like):
 *  - Opaque handles; every call returns an ember_status.
 *  - Options structs are zero-initialised for defaults: `ember_model_opts o = {0};`.
 *  - A failed ember_model_load / ember_engine_create still returns a handle in *out
 *    (unless memory ran out, then *out is NULL) so that the message can be read with
 *    ember_model_error / ember_engine_error; the caller frees it as usual.
 *  - The library never prints, aborts or exits.
 *  - No global state: handles may be used from different threads, one thread at a
 *    time per handle.
 */
#ifndef EMBER_H
#define EMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ember_status {
    EMBER_OK = 0,
    EMBER_ERR_INVALID_ARG,   /* a caller passed something the call cannot use */
    EMBER_ERR_IO,            /* a file could not be opened, read or written */
    EMBER_ERR_FORMAT,        /* a file is malformed (bad GGUF, bad shapes, ...) */
    EMBER_ERR_UNSUPPORTED,   /* valid input that Ember does not handle (yet) */
    EMBER_ERR_OUT_OF_MEMORY, /* host memory */
    EMBER_ERR_DEVICE_MEMORY, /* GPU memory */
    EMBER_ERR_NO_DEVICE,     /* no usable Vulkan device */
    EMBER_ERR_DEVICE_LOST,   /* the GPU was lost; the handle must be destroyed */
    EMBER_ERR_VULKAN,        /* any other Vulkan failure */
    EMBER_ERR_CONTEXT_FULL,  /* the sequence reached the context length / KV space */
    EMBER_ERR_BUSY,          /* nothing to do / request unknown */
} ember_status;

/* A short English name for a status ("EMBER_ERR_FORMAT"). Never NULL. */
const char *ember_status_name(ember_status s);

typedef enum ember_backend {
    EMBER_BACKEND_VULKAN = 0, /* default */
    EMBER_BACKEND_CPU = 1,    /* plain-C reference forward pass (slow; the test oracle) */
} ember_backend;

/* ---------------------------------------------------------------- model ---- */

typedef struct ember_model ember_model;

typedef struct ember_model_opts {
    ember_backend backend;
    int device_index;       /* 0 = automatic choice; N > 0 picks Vulkan device N-1 */
    int enable_validation;  /* 1 = enable VK_LAYER_KHRONOS_validation when installed */
} ember_model_opts;

/* Loads a GGUF model. On success *out owns the file mapping and the GPU weights.
 * On failure *out (if not NULL) holds the error message; free it with ember_model_free. */
ember_status ember_model_load(const char *gguf_path, const ember_model_opts *opts,
                              ember_model **out);
void ember_model_free(ember_model *model);
/* The message of the last failed call on this model; "" when none. Owned by the model. */
const char *ember_model_error(const ember_model *model);

typedef struct ember_model_info {
    const char *arch;       /* "llama" */
    uint32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, ffn_dim, ctx_len;
    const char *device_name; /* Vulkan device, or "cpu" */
} ember_model_info;
void ember_model_get_info(const ember_model *model, ember_model_info *info);

/* Vulkan validation-layer messages seen so far (0 unless enable_validation was set and
 * the layer is installed); the first message is copied into first (may be NULL). */
uint32_t ember_model_validation_messages(const ember_model *model, char *first, size_t cap);

/* Tokenizes UTF-8 text. Writes at most cap ids; *n_tokens receives the full count
 * (so a call with cap too small tells how much room is needed). */
ember_status ember_tokenize(ember_model *model, const char *text, size_t len, int add_bos,
                            uint32_t *tokens, size_t cap, size_t *n_tokens);
/* The bytes of one token as text (piece with the SentencePiece space marker undone).
 * Writes at most cap bytes; returns the full length. */
size_t ember_token_to_text(const ember_model *model, uint32_t token, char *buf, size_t cap);

/* --------------------------------------------------------------- engine ---- */

typedef struct ember_engine ember_engine;
typedef uint64_t ember_request_id;

typedef struct ember_engine_opts {
    uint32_t kv_block_size;     /* tokens per KV block; 0 = 16 */
    uint32_t kv_blocks;         /* blocks in the pool; 0 = enough for one full context */
    uint32_t max_batch_tokens;  /* tokens per forward pass; 0 = 256 */
} ember_engine_opts;

ember_status ember_engine_create(ember_model *model, const ember_engine_opts *opts,
                                 ember_engine **out);
void ember_engine_destroy(ember_engine *engine);
const char *ember_engine_error(const ember_engine *engine);

typedef struct ember_request_metrics {
    uint32_t n_prompt, n_gen;
    double ttft_ms;        /* submit -> first generated token */
    double prefill_ms;     /* time in forward passes over the prompt */
    double decode_ms;      /* time in forward passes after the first token */
} ember_request_metrics;

typedef enum ember_finish {
    EMBER_FINISH_LENGTH = 0, EMBER_FINISH_EOS, EMBER_FINISH_CANCELLED, EMBER_FINISH_ERROR
} ember_finish;

/* Called once per generated token, with its text piece (may be empty) and length.
 * Return 0 to continue, non-zero to stop the request. */
typedef int (*ember_token_cb)(void *user, ember_request_id id, uint32_t token,
                              const char *piece, size_t piece_len);
/* Called once when the request ends, with its metrics. */
typedef void (*ember_done_cb)(void *user, ember_request_id id, ember_finish why,
                              const ember_request_metrics *m);

typedef struct ember_request_desc {
    const char *prompt;          /* UTF-8 text, or NULL when tokens is given */
    const uint32_t *tokens;      /* prompt ids (used when prompt is NULL); copied */
    size_t n_tokens;
    int no_bos;                  /* 1 = do not prepend BOS to a text prompt */
    uint32_t max_tokens;         /* 0 = 128 */
    float temperature;           /* 0 = greedy (the only mode in this version) */
    int ignore_eos;              /* 1 = keep going past EOS */
    ember_token_cb on_token;
    ember_done_cb on_done;
    void *user;
} ember_request_desc;

ember_status ember_submit(ember_engine *engine, const ember_request_desc *desc,
                          ember_request_id *id);
/* One bounded scheduler iteration: at most one forward pass. EMBER_ERR_BUSY means
 * there was no work. */
ember_status ember_engine_step(ember_engine *engine);
ember_status ember_cancel(ember_engine *engine, ember_request_id id);
/* Number of requests not yet finished. */
uint32_t ember_engine_pending(const ember_engine *engine);

#ifdef __cplusplus
}
#endif
#endif /* EMBER_H */
