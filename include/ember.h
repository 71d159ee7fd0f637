/* ember.h — the public C API of Ember, a portable LLM inference engine.
 *
 * Conventions (SQLite-like):
 *  - Opaque handles. Every call that can fail returns an ember_status: EMBER_OK, the
 *    non-error EMBER_IDLE (ember_engine_step only), or an error, which is negative.
 *    The calls that cannot fail return what they look up instead: the destructors
 *    (ember_model_free, ember_engine_destroy, ember_chat_free), ember_engine_stop and
 *    ember_engine_wait_idle, the getters (ember_version, ember_status_name, ember_finish_name,
 *    ember_model_error, ember_engine_error, ember_chat_error, ember_chat_template_name,
 *    ember_chat_get_info, ember_model_get_info, ember_engine_get_stats,
 *    ember_engine_pending, ember_model_validation_messages) and ember_token_to_text.
 *  - Options structs are zero-initialised for defaults: `ember_model_opts o = {0};`.
 *  - A failed ember_model_load / ember_engine_create still returns a handle in *out
 *    (unless memory ran out, then *out is NULL) so that the message can be read with
 *    ember_model_error / ember_engine_error; the caller frees it as usual.
 *  - Ownership: what a call returns through a pointer belongs to the handle it came
 *    from (messages, names, prompts) unless the call says otherwise; what the caller
 *    passes in is copied unless it says "borrowed".
 *  - The library never prints, aborts or exits.
 *  - No global state (one exception, ember_set_allocator, set once before anything else):
 *    handles may be used from different threads, one thread at a time per handle,
 *    except where a call says "thread-safe" (the engine's submit, cancel, pending,
 *    stats, copy_error and memory budget calls: they return in microseconds whatever
 *    the GPU is doing).
 *
 * Build against it with pkg-config (`cc app.c $(pkg-config --cflags --libs ember)`) or
 * CMake (`find_package(ember)`, target ember::ember or ember::ember_static). */
#ifndef EMBER_H
#define EMBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; ember_version() gives the library's. */
#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 8
#define EMBER_VERSION_PATCH 0
#define EMBER_VERSION_STRING "0.8.0"

/* Marks the functions libember exports; everything else in the library is hidden. On
 * Windows an application using ember.dll imports them (the default); one linking the
 * static library defines EMBER_STATIC (the CMake target ember::ember_static does). */
#if defined(_WIN32) && defined(EMBER_BUILD)
#define EMBER_API __declspec(dllexport)
#elif defined(_WIN32) && !defined(EMBER_STATIC)
#define EMBER_API __declspec(dllimport)
#elif defined(_WIN32)
#define EMBER_API
#elif defined(__GNUC__) || defined(__clang__)
#define EMBER_API __attribute__((visibility("default")))
#else
#define EMBER_API
#endif

typedef enum ember_status {
    EMBER_OK = 0,
    EMBER_IDLE = 1,               /* not an error: ember_engine_step had nothing it could
                                     run (no request pending, or all wait for KV blocks) */
    EMBER_NOT_READY = 2,          /* not an error: the step in flight is still running on
                                     the GPU (ember_engine_step_end, ember_engine_run_for) */
    EMBER_ERR_INVALID_ARG = -1,   /* a caller passed something the call cannot use */
    EMBER_ERR_IO = -2,            /* a file could not be opened, read or written */
    EMBER_ERR_FORMAT = -3,        /* a file is malformed (bad GGUF, bad shapes, ...) */
    EMBER_ERR_UNSUPPORTED = -4,   /* valid input that Ember does not handle (yet) */
    EMBER_ERR_OUT_OF_MEMORY = -5, /* host memory */
    EMBER_ERR_DEVICE_MEMORY = -6, /* GPU memory */
    EMBER_ERR_NO_DEVICE = -7,     /* no usable Vulkan device */
    EMBER_ERR_DEVICE_LOST = -8,   /* the GPU was lost; the handle must be destroyed */
    EMBER_ERR_VULKAN = -9,        /* any other Vulkan failure */
    EMBER_ERR_CONTEXT_FULL = -10, /* the sequence reached the context length / KV space */
    EMBER_ERR_NOT_FOUND = -11,    /* no such request (ember_cancel) */
    EMBER_ERR_SHUTTING_DOWN = -12, /* ember_submit once ember_engine_destroy has begun (from a
                                      done callback it runs, or another thread) */
} ember_status;

/* The library's version, "MAJOR.MINOR.PATCH" (EMBER_VERSION_STRING when the header and the
 * library match). Never NULL; static storage. */
EMBER_API const char *ember_version(void);

/* A short English name for a status ("EMBER_ERR_FORMAT"). Never NULL; static storage. */
EMBER_API const char *ember_status_name(ember_status s);

/* ---------------------------------------------------------- host memory ---- */

/* Where Ember's host memory comes from: every allocation of the library (model, tokenizer,
 * engine, requests, chats) goes through these three. realloc is never called with NULL
 * or size 0; free never with NULL. Games route it into their own allocators; tests fail
 * the Nth call to check every error path. */
typedef struct ember_allocator {
    void *(*malloc)(void *user, size_t size);
    void *(*realloc)(void *user, void *p, size_t size);
    void (*free)(void *user, void *p);
    void *user;
} ember_allocator;

/* Sets the allocator for the whole process (NULL = the C library's; the struct is
 * copied). Like sqlite3_config, it is not thread-safe: call it before any other Ember
 * call, or when no model, engine or chat exists, since memory must be freed by the
 * allocator that gave it. EMBER_ERR_INVALID_ARG when a function is missing. */
EMBER_API ember_status ember_set_allocator(const ember_allocator *allocator);

typedef enum ember_backend {
    EMBER_BACKEND_VULKAN = 0, /* default */
    EMBER_BACKEND_CPU = 1,    /* plain-C reference forward pass (slow; the test oracle) */
} ember_backend;

/* -------------------------------------------------------------- devices ---- */

typedef enum ember_device_type {
    EMBER_DEVICE_OTHER = 0,
    EMBER_DEVICE_DISCRETE,
    EMBER_DEVICE_INTEGRATED,
    EMBER_DEVICE_VIRTUAL,
    EMBER_DEVICE_CPU,        /* a software rasterizer: lavapipe, SwiftShader */
} ember_device_type;

/* One Vulkan device, with what decides Ember's shader variants and buffer sizes. Its two
 * texts, name and variants, are of any length: ember_list_devices allocates them and
 * ember_free_devices frees them (a copy of the struct shares them). */
typedef struct ember_device_info {
    const char *name;
    ember_device_type type;
    uint32_t vendor_id, device_id, driver_version;
    uint32_t api_major, api_minor, api_patch;   /* Vulkan version it supports */
    int fp16, int8, storage8, storage16;        /* shaderFloat16, shaderInt8, 8/16-bit storage */
    int int_dot, coop_matrix;                   /* integer dot product, cooperative matrix
                                                   (VK_KHR_cooperative_matrix's or NV's
                                                   16x16x16 fp16 product, which the matrix
                                                   family uses) */
    uint32_t subgroup_size;
    int subgroup_arith, subgroup_shuffle;
    int subgroup_size_control;                  /* Ember pins its pipelines to subgroup_size with
                                                   full subgroups (VK_EXT_subgroup_size_control) */
    uint64_t max_storage_range, max_alloc;      /* bytes: one binding, one allocation */
    uint32_t max_shared, max_push, max_workgroup_invocations;
    uint64_t device_local_bytes;                /* the largest device-local heap */
    int unified_memory;                         /* device-local memory is host-visible */
    int timestamps;                             /* GPU timestamps in compute queues */
    /* What Ember would run on this device and why, as text: one line per part, each
     * ending in '\n' ("linear: ...", "attention: ...", "rmsnorm/argmax: ...", "reads: ...",
     * "memory: ...", "context: ..."), each with the capability behind the choice
     * (docs/portability.md). */
    const char *variants;
} ember_device_info;

/* Lists the Vulkan devices in the order ember_model_opts.device_index counts them (device
 * i is device_index i + 1). Writes at most cap entries to out; *n gets the count. No
 * device at all is EMBER_OK with *n = 0. The entries written (the smaller of *n and cap)
 * own their texts until ember_free_devices. On failure nothing is left to free, and a
 * message is written to msg (at most msg_cap bytes with its NUL; msg may be NULL). */
EMBER_API ember_status ember_list_devices(ember_device_info *out, size_t cap, size_t *n,
                                          char *msg, size_t msg_cap);
/* Frees the texts of n entries ember_list_devices wrote, and sets them to NULL (so a
 * second call does nothing). */
EMBER_API void ember_free_devices(ember_device_info *devs, size_t n);

/* ---------------------------------------------------------------- model ---- */

typedef struct ember_model ember_model;

/* The application's own Vulkan device, for Ember to run on (a game hands over the device
 * it renders with, so that there is one device and one pool of VRAM). The handles are
 * Vulkan's, passed as pointers so that this header needs no vulkan.h. Ember creates no
 * instance or device then and never destroys these: they must outlive the model.
 * The device must support Vulkan 1.2 and the queue family compute; Ember reads which
 * optional features the application enabled (16-bit and 8-bit storage, shaderFloat16,
 * shaderInt8, shaderIntegerDotProduct, NV cooperativeMatrix with vulkanMemoryModel) from
 * enabled_features and uses only those.
 * docs/embedding.md. */
typedef struct ember_vulkan_device {
    void *instance;               /* VkInstance */
    void *physical_device;        /* VkPhysicalDevice */
    void *device;                 /* VkDevice */
    uint32_t queue_family;        /* a family with VK_QUEUE_COMPUTE_BIT */
    uint32_t queue_index;         /* the queue of that family Ember submits to */
    uint32_t api_version;         /* the instance's VkApplicationInfo.apiVersion; 0 = 1.2 */
    /* The VkPhysicalDeviceFeatures2 chain the device was created with (read during
     * ember_model_load only); NULL = no optional feature. */
    const void *enabled_features;
    /* Called around each of Ember's vkQueueSubmit calls on that queue, from whichever
     * thread steps an engine: Vulkan requires submissions to one queue to be serialised,
     * so an application that submits to the same queue from its own thread locks the same
     * mutex around its own submissions. NULL = Ember serialises only its own. */
    void (*lock_queue)(void *user);
    void (*unlock_queue)(void *user);
    void *queue_user;
    /* The application's vkGetInstanceProcAddr (PFN_vkGetInstanceProcAddr), through which
     * Ember then finds every Vulkan function: the game's loader and its layers are
     * Ember's. NULL = Ember opens the system's Vulkan loader (libvulkan.so.1,
     * vulkan-1.dll) itself. */
    void *get_instance_proc_addr;
} ember_vulkan_device;

/* Faults, for tests of the error paths: the Nth event from now (1 = the next one; 0 =
 * none) fails as a real device would fail it. Counted per model (its Vulkan device, shared
 * by its engines); the Vulkan backend only. */
typedef struct ember_faults {
    uint32_t device_alloc; /* the Nth device-memory allocation: VK_ERROR_OUT_OF_DEVICE_MEMORY */
    uint32_t submit_lost;  /* the Nth queue submission: VK_ERROR_DEVICE_LOST (not submitted) */
    uint32_t wait_lost;    /* the Nth wait for submitted work: VK_ERROR_DEVICE_LOST (after
                              the work is done, so that nothing is freed while in use) */
} ember_faults;

typedef enum ember_memory_mode { EMBER_MEMORY_AUTO = 0, EMBER_MEMORY_DISCRETE = 1 } ember_memory_mode;

/* Kernel variants forced instead of the device's own choices, for benchmarks that compare
 * them on one device (`ember ... --kernels`); a zero field keeps the device's choice, and
 * what ran shows in the profile's pipeline names. Another lane count, integer dot
 * products, fp16 arithmetic, the fused RMSNorm or split-K attention each round differently (every one of
 * them batch invariant: docs/kernels.md), the matrix family too; staging x changes no
 * bit. */
enum { EMBER_KERNEL_AUTO = 0, EMBER_KERNEL_ON = 1, EMBER_KERNEL_OFF = 2 };
/* ember_kernel_opts.coop_matrix: AUTO takes VK_KHR_cooperative_matrix where the device has
 * it, else VK_NV_cooperative_matrix; KHR or NV only that one (else by FMA); OFF by FMA. */
enum { EMBER_COOP_AUTO = 0, EMBER_COOP_KHR = 1, EMBER_COOP_NV = 2, EMBER_COOP_OFF = 3 };
typedef struct ember_kernel_opts {
    uint32_t linear_lanes; /* lanes (partial sums) per linear tile: 8, 16, 32 or 64 */
    int int_dot;           /* Q8_0 and the block types but BF16 by integer dot products
                              (where the device has them) */
    int fp16_dot;          /* F16 and Q8_0 (where int_dot does not take it) in fp16
                              arithmetic inside a unit (where the device has shaderFloat16) */
    int stage_x;           /* the linear's workgroup stages x in shared memory */
    int norm_fusion;       /* RMSNorm fused into the product after it */
    int attn_split;        /* split-K attention for few decode rows */
    int matrix;            /* the matrix family: products on fp16 inputs with fp32 sums,
                              through cooperative matrices where the device has them */
    int coop_matrix;       /* ... which cooperative matrices (EMBER_COOP_*) */
} ember_kernel_opts;

typedef struct ember_model_opts {
    ember_backend backend;
    int device_index;       /* 0 = automatic choice; N > 0 picks Vulkan device N-1 */
    int enable_validation;  /* 1 = enable VK_LAYER_KHRONOS_validation when installed */
    /* Called now and then while weights are uploaded, with the fraction done (0..1). */
    void (*progress)(void *user, float fraction);
    void *progress_user;
    /* Run on the application's Vulkan device instead of creating one (device_index and
     * enable_validation are then unused). Borrowed: read during ember_model_load. */
    const ember_vulkan_device *vulkan;
    /* The most device memory Ember may allocate for this model and its engines, in MiB
     * (weights, KV caches, activations); 0 = no limit. A model whose weights do not fit
     * is refused with the numbers; engines size their KV pools to what is left.
     * ember_model_set_memory_budget changes it while the application runs. */
    uint32_t memory_budget_mib;
    /* EMBER_MEMORY_AUTO (0): use what the device offers; EMBER_MEMORY_DISCRETE: treat it
     * as a discrete GPU (device-local memory never mapped, weights/KV/activations through
     * staging copies), to test that path on any device. */
    ember_memory_mode memory;
    int no_pipeline_cache; /* 1 = neither read nor write the on-disk pipeline cache */
    /* Faults to inject from the start (tests only; see ember_model_inject_faults).
     * Borrowed: read during ember_model_load. */
    const ember_faults *faults;
    /* 1 = load only the vocabulary (the tokenizer.* keys), as llama.cpp's vocab_only: no
     * hyper-parameters, weights or device, so a vocabulary-only GGUF (no tensors) loads.
     * Such a model tokenizes, detokenizes and renders chats; ember_engine_create and
     * ember_score refuse it, and ember_model_get_info gives only n_vocab (arch ""). */
    int vocab_only;
    ember_kernel_opts kernels; /* zero: the device's choices (Vulkan backend only) */
} ember_model_opts;

/* Loads a GGUF model. On success *out owns the file mapping and the GPU weights.
 * On failure *out (if not NULL) holds the error message; free it with ember_model_free. */
EMBER_API ember_status ember_model_load(const char *gguf_path, const ember_model_opts *opts,
                                        ember_model **out);
EMBER_API void ember_model_free(ember_model *model);
/* The message of the last failed call on this model; "" when none. Owned by the model. */
EMBER_API const char *ember_model_error(const ember_model *model);

/* How an embedding request pools its prompt's hidden states (the final RMSNorm's output,
 * one vector of `dim` floats per token, as llama.cpp's embeddings take them) into one
 * vector, which is then L2-normalised. DEFAULT: what the GGUF declares in
 * `<arch>.pooling_type` (llama.cpp's numbering: 1 mean, 2 cls, 3 last), and LAST for a
 * file that declares none (or "none"): in a causal model only the last token has seen
 * the whole text, and it is vLLM's default for decoder models. */
typedef enum ember_pooling {
    EMBER_POOLING_DEFAULT = 0,
    EMBER_POOLING_MEAN = 1,   /* the mean over every token of the prompt */
    EMBER_POOLING_CLS = 2,    /* the first token's (BOS where the prompt has one) */
    EMBER_POOLING_LAST = 3,   /* the last token's */
    EMBER_POOLING_RANK = 4,   /* a reranker's (a file may declare it): not supported */
} ember_pooling;

typedef struct ember_model_info {
    const char *arch;       /* "llama" or "qwen2" */
    uint32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, ffn_dim, ctx_len;
    const char *device_name; /* Vulkan device, or "cpu" */
    int device_index;        /* the ember_model_opts.device_index that picks this device
                                again (its place in ember_list_devices + 1); 0 on the CPU
                                backend and on an application's device */
    uint64_t device_bytes;   /* device memory Ember holds now for the model and its engines */
    uint64_t budget_bytes;   /* the memory budget; 0 = none */
    ember_pooling pooling;   /* what embeddings use by default (never DEFAULT): the file's
                                <arch>.pooling_type, else LAST (RANK: none served) */
} ember_model_info;
EMBER_API void ember_model_get_info(const ember_model *model, ember_model_info *info);

/* Changes the device-memory budget (0 = no limit). Thread-safe. Engines apply it at their
 * next step: a lower budget shrinks their KV pools, preempting the newest requests when
 * the blocks in use do not fit (they are recomputed later; nothing is lost); a higher one
 * lets the pools grow back to the size they were created with. EMBER_ERR_DEVICE_MEMORY
 * when the weights alone exceed mib (the budget is then unchanged). */
EMBER_API ember_status ember_model_set_memory_budget(ember_model *model, uint32_t mib);

/* Arms faults (replacing those armed before). Once a loss is reported the device stays
 * lost: every later submission and wait fails, every engine on the model fails its
 * pending requests (done callbacks with EMBER_FINISH_ERROR) and returns
 * EMBER_ERR_DEVICE_LOST from its steps, and new engines are refused. The handles can
 * still be destroyed, and a new model loaded. Thread-safe. */
EMBER_API void ember_model_inject_faults(ember_model *model, const ember_faults *faults);

/* Vulkan validation-layer messages seen so far (0 unless enable_validation was set and
 * the layer is installed); the first message is copied into first (may be NULL). */
EMBER_API uint32_t ember_model_validation_messages(const ember_model *model, char *first,
                                                   size_t cap);

/* ember_tokenize's flags. */
enum {
    EMBER_TOKENIZE_ADD_BOS = 1,       /* prepend BOS (ember_tokenize: when the vocabulary
                                         asks for it, tokenizer.ggml.add_bos_token) */
    EMBER_TOKENIZE_PARSE_SPECIAL = 2, /* text like "<|im_start|>" becomes that control
                                         token: for chat templates, never for user text */
};

/* Tokenizes UTF-8 text. flags: EMBER_TOKENIZE_* (0: plain text, no BOS; control-token
 * text stays plain text unless PARSE_SPECIAL; 1 is ADD_BOS). Writes at most cap ids;
 * *n_tokens receives the full count (so a call with cap too small tells how much room is
 * needed). */
EMBER_API ember_status ember_tokenize(ember_model *model, const char *text, size_t len, int flags,
                                      uint32_t *tokens, size_t cap, size_t *n_tokens);
/* The bytes of one token (SentencePiece space marker and GPT-2 byte mapping undone; may
 * be part of a UTF-8 character; control tokens give "").
 * Writes at most cap bytes; returns the full length. */
EMBER_API size_t ember_token_to_text(const ember_model *model, uint32_t token, char *buf,
                                     size_t cap);
/* The same, except that a control token gives its text ("<|im_end|>", "</s>"), as
 * llama.cpp's token_to_piece with special on. */
EMBER_API size_t ember_token_to_piece(const ember_model *model, uint32_t token, char *buf,
                                      size_t cap);
/* The text of tokens[0..n): their bytes joined into valid UTF-8 (U+FFFD for each
 * ill-formed part, a character cut short at the end too); control tokens as their text
 * when special is 1, left out when 0; ids past the vocabulary left out. Writes at most
 * cap bytes (no terminating NUL); returns the full length (0 also when memory ran out). */
EMBER_API size_t ember_detokenize(const ember_model *model, const uint32_t *tokens, size_t n, int special,
                                  char *buf, size_t cap);

/* --------------------------------------------------------------- engine ---- */

typedef struct ember_engine ember_engine;
typedef uint64_t ember_request_id;

typedef enum ember_batching {
    EMBER_BATCHING_CONTINUOUS = 0, /* re-decide the batch every step (default) */
    EMBER_BATCHING_STATIC = 1,     /* baseline: fixed-shape batches, as Hugging Face generate
                                      runs them: every member prefills as many rows as the
                                      batch's longest prompt and computes a row per step
                                      until its longest member ends (docs/serving.md) */
    EMBER_BATCHING_STATIC_RAGGED = 2, /* a stricter baseline: the same, but prompts are not
                                         padded (prefill stays ragged and chunked) */
} ember_batching;

typedef enum ember_kv_layout {
    EMBER_KV_PAGED = 0,            /* blocks on demand (default) */
    EMBER_KV_CONTIGUOUS = 1,       /* baseline: reserve a whole context per sequence */
} ember_kv_layout;

/* How the KV cache stores K and V (docs/kernels.md, "KV cache layouts"). */
typedef enum ember_kv_type {
    EMBER_KV_F32 = 0,              /* 32-bit floats (default) */
    EMBER_KV_Q8_0 = 1,             /* int8 with one f16 scale per 32 values of a head
                                      (per 16, 8 or 4 when head_dim is not a multiple of
                                      32), as llama.cpp's q8_0: 1.0625 bytes a value, 0.53x
                                      F16, 0.27x F32. Vulkan backend only */
    EMBER_KV_F16 = 2,              /* IEEE half floats: 2 bytes a value, 0.5x F32, the
                                      llama.cpp default. Vulkan backend only */
} ember_kv_type;

/* Where a sampled request's next token is drawn from (docs/sampling.md, "On the GPU"). */
typedef enum ember_sample_from {
    EMBER_SAMPLE_AUTO = 0,         /* candidates on a GPU, whole rows on a CPU device (lavapipe:
                                      there the selection costs more than the host's sampler
                                      on a row it reads in place) */
    EMBER_SAMPLE_CANDIDATES = 1,   /* a sampler without logit bias reads its row's 256 best
                                      candidates, picked on the device, and the row only where
                                      they do not decide, on any Vulkan device (with
                                      top-k/top-p/min-p the same tokens as whole rows;
                                      temperature alone the same distribution, not the same
                                      tokens for a seed: docs/sampling.md) */
    EMBER_SAMPLE_ROWS = 2,         /* every sampled request reads its whole row of logits */
} ember_sample_from;

typedef struct ember_engine_opts {
    uint32_t max_seqs;          /* sequences served at once; 0 = 16 */
    uint32_t max_batch_tokens;  /* tokens per forward pass (the step's budget); 0 = 256 */
    uint32_t chunk_ctx;         /* chunked prefill by cost: a prompt row at position p takes
                                   1 + p / chunk_ctx of the budget (its attention reads p
                                   positions), so chunks deep in a long prompt get fewer
                                   rows and steps cost about the same; 0 = every row 1
                                   (docs/serving.md) */
    uint32_t kv_block_size;     /* tokens per KV block; 0 = 16 */
    uint32_t kv_blocks;         /* blocks in the pool; 0 = from kv_mem_mib, else enough for
                                   max_seqs sequences of 1024 tokens (capped at the context)
                                   and for one sequence of the whole context. A request that
                                   outgrows the pool alone ends with EMBER_FINISH_KV_FULL */
    uint32_t kv_mem_mib;        /* KV budget in MiB when kv_blocks is 0; 0 = unused */
    int no_prefix_cache;        /* 1 = do not share blocks between requests */
    ember_batching batching;
    ember_kv_layout kv_layout;
    ember_kv_type kv_type;      /* KV element type; kv_mem_mib buys more blocks when smaller */
    /* A draft model for speculative decoding (same vocabulary, same backend), used by
     * requests that ask for it; NULL = none. Borrowed: it must outlive the engine. */
    ember_model *draft;
    int profile;                /* 1 = time every dispatch of every step (ember_engine_get_profile);
                                   costs a GPU timestamp per dispatch */
    ember_sample_from sample_from; /* the CPU backend always reads whole rows */
} ember_engine_opts;

EMBER_API ember_status ember_engine_create(ember_model *model, const ember_engine_opts *opts,
                                           ember_engine **out);

/* The device memory a model and one engine need, read from the file alone (its header
 * and tensor table: no device is opened and no weight is read), so that an application
 * can tell before loading whether a model fits its card or its memory budget. */
typedef struct ember_memory_estimate {
    uint64_t file_bytes;
    uint64_t weight_bytes;       /* the weights as the Vulkan backend stores them: what
                                    ember_model_get_info's device_bytes says once loaded */
    uint64_t expert_bytes;       /* of weight_bytes, a mixture's expert matrices (every
                                    expert stays on the device; 0 for a dense model) */
    uint64_t kv_bytes_per_token; /* K and V of one token, all layers, of opts' kv_type */
    uint64_t kv_bytes;           /* the KV cache of n_ctx tokens, in whole blocks (a
                                    sliding-window model's local layers: the engine's pool
                                    of window slots instead, docs/serving.md) */
    uint64_t activation_bytes;   /* the engine's step buffers (activations, logits), at
                                    most: for every step row's logits */
    uint64_t total_bytes;        /* weights + KV + activations: what the memory budget must
                                    hold for one sequence of n_ctx tokens */
    uint32_t n_ctx;              /* the context counted (0 asked: the model's) */
} ember_memory_estimate;
/* Estimates for an engine made with opts (NULL = defaults; max_batch_tokens, max_seqs,
 * kv_block_size and kv_type count, a draft model does not) serving one sequence of n_ctx
 * tokens (0 = the model's context length). The device allocates in chunks (64 to 256 MiB),
 * so what it holds may exceed the estimate by part of a chunk per pool. On failure a
 * message is written to msg (at most msg_cap bytes with its NUL; msg may be NULL). */
EMBER_API ember_status ember_estimate_memory(const char *gguf_path, uint32_t n_ctx, const ember_engine_opts *opts,
                                             ember_memory_estimate *out, char *msg, size_t msg_cap);
/* Stops the worker thread, cancels what is left (done callbacks run with
 * EMBER_FINISH_CANCELLED, on the calling thread) and frees. From its start ember_submit
 * on this engine returns EMBER_ERR_SHUTTING_DOWN, so every request accepted before has
 * had its done callback when it returns. */
EMBER_API void ember_engine_destroy(ember_engine *engine);
/* The message of the engine's last failure. Not thread-safe: a step failing on another
 * thread (a worker, a server's) may rewrite it while it is read; there, use
 * ember_engine_copy_error. */
EMBER_API const char *ember_engine_error(const ember_engine *engine);
/* The same message copied into buf (cap bytes, NUL-terminated, cut to fit) under the
 * engine's lock: thread-safe, for reading why ember_submit failed, or why the worker's
 * step failed, from any thread. The last failure's message, whichever thread's it was.
 * Returns buf ("out of memory" for a NULL engine). */
EMBER_API const char *ember_engine_copy_error(const ember_engine *engine, char *buf, size_t cap);

typedef struct ember_request_metrics {
    uint32_t n_prompt, n_gen;
    uint32_t n_cached;     /* prompt tokens taken from the prefix cache */
    uint32_t preemptions;  /* times the request was preempted and recomputed */
    double queue_ms;       /* submit -> first scheduled */
    double ttft_ms;        /* submit -> first generated token */
    double tpot_ms;        /* mean time per output token after the first */
    double e2e_ms;         /* submit -> finished */
    double prefill_ms;     /* time of the steps that computed its prompt */
    double decode_ms;      /* time of the steps that computed its later tokens */
    uint32_t n_drafted;    /* speculative decoding: tokens proposed */
    uint32_t n_accepted;   /* ... and accepted by the target */
    uint32_t n_decode_steps; /* target steps that produced tokens after the first */
    uint32_t n_restored;   /* prompt positions whose K/V came from desc.state */
    /* EMBER_FINISH_ERROR: why this request failed (the failed step's message), valid
     * during the done callback (copy it to keep it); NULL for every other finish. Unlike
     * ember_engine_copy_error, no other thread's failure can stand in its place. */
    const char *error;
} ember_request_metrics;

typedef enum ember_finish {
    EMBER_FINISH_LENGTH = 0,  /* max_tokens reached */
    EMBER_FINISH_EOS,         /* an end-of-generation token */
    EMBER_FINISH_STOP,        /* a stop string (not included in the text) */
    EMBER_FINISH_CANCELLED,
    EMBER_FINISH_ERROR,       /* the step failed: the metrics' error says why (and
                                 ember_engine_copy_error, from the done callback on) */
    EMBER_FINISH_KV_FULL,     /* the KV pool could not hold the sequence with nothing left
                                 to preempt (a pool smaller than one whole context: kv_blocks,
                                 kv_mem_mib or the memory budget); the others go on */
    EMBER_FINISH_CONTEXT,     /* the sequence filled the model's context (ctx_len tokens,
                                 prompt included) before max_tokens: the reply is cut. An
                                 ember_chat drops old turns at its next prompt */
    EMBER_FINISH_GRAMMAR,     /* the request's grammar is complete and allows no more text
                                 (ember_request_desc.grammar) */
} ember_finish;

/* A short name for a finish reason, as `ember generate --json` writes it ("length", "eos",
 * "stop", "cancelled", "error", "kv_full", "context"). Never NULL; static storage. */
EMBER_API const char *ember_finish_name(ember_finish why);

/* Called once per generated token, on the thread that steps the engine (the caller of
 * ember_engine_step, ember_engine_step_end or ember_engine_run_for, or the worker thread),
 * with the text
 * that became final with it (may be empty: incomplete UTF-8 characters and what might
 * start a stop string are held back). Return non-zero to stop the request. */
typedef int (*ember_token_cb)(void *user, ember_request_id id, uint32_t token,
                              const char *text, size_t text_len);
/* Callbacks may call ember_submit, ember_cancel, ember_engine_pending,
 * ember_engine_get_stats, ember_engine_copy_error and ember_model_set_memory_budget (on
 * any engine), and may wait
 * for other threads that call them; they must not step, stop or destroy the engine.
 * Called exactly once when the request ends, with its metrics. When it ends at a token
 * (length, end-of-generation, stop string) that token's callback carried all the
 * remaining text; text still held back when a request is cancelled is dropped. */
typedef void (*ember_done_cb)(void *user, ember_request_id id, ember_finish why,
                              const ember_request_metrics *m);

/* Log-probabilities of a generated token (ember_request_desc.on_logprobs), under the
 * model's own distribution: its raw logits at temperature 1, before the logit bias,
 * penalties, a grammar's mask and the filters (vLLM's default "raw" log-probabilities);
 * with speculation, the target model's. */
#define EMBER_MAX_TOP_LOGPROBS 20
typedef struct ember_token_logprob {
    uint32_t token;
    float logprob;            /* natural log; -INFINITY for a token the model rules out */
} ember_token_logprob;
typedef struct ember_logprobs {
    ember_token_logprob chosen;                    /* the generated token's */
    uint32_t n_top;                                /* desc.top_logprobs */
    ember_token_logprob top[EMBER_MAX_TOP_LOGPROBS]; /* the most likely tokens, most likely
                                                      first (ties: lower id first) */
} ember_logprobs;
/* Called once per generated token, just before its ember_token_cb, on the same thread;
 * lp is valid during the call. */
typedef void (*ember_logprobs_cb)(void *user, ember_request_id id, const ember_logprobs *lp);

/* Called once for a request with on_state, when its prompt has been computed, on the
 * engine's stepping thread: state (len bytes, valid during the call: copy it to keep it)
 * holds the prompt's tokens and the K/V of every one of them (a KV state,
 * docs/state.md), to be given back as ember_request_desc.state. */
typedef void (*ember_state_cb)(void *user, ember_request_id id, const void *state, size_t len);
/* Called once for an embedding request, before its done callback, on the same thread:
 * v holds dim floats of unit L2 norm, valid during the call. */
typedef void (*ember_embedding_cb)(void *user, ember_request_id id, const float *v, uint32_t dim);

/* One entry of a logit bias: added to the token's logit before anything else of the
 * chain (as llama.cpp); -INFINITY bans the token. */
typedef struct ember_logit_bias {
    uint32_t token;
    float bias;
} ember_logit_bias;

#define EMBER_MAX_LOGIT_BIAS 1024

typedef struct ember_sampling {
    float temperature;        /* 0 = greedy (default) */
    uint32_t top_k;           /* 0 = off */
    float top_p;              /* 0 or 1 = off */
    float min_p;              /* 0 = off */
    float repetition_penalty; /* 0 or 1 = off */
    float frequency_penalty, presence_penalty; /* 0 = off */
    uint32_t penalty_last_n;  /* 0 = 64 */
    uint64_t seed;            /* same seed, same tokens */
    /* Biases (at most EMBER_MAX_LOGIT_BIAS, tokens < n_vocab, finite or -INFINITY);
     * copied at submit. A greedy request with a bias takes the arg-max of the biased
     * logits. */
    const ember_logit_bias *logit_bias;
    uint32_t n_logit_bias;
} ember_sampling;

#define EMBER_MAX_STOP 8
#define EMBER_MAX_DRAFT 16

/* Speculative decoding for one request: a draft proposes up to draft_k tokens, the
 * target checks them in the same batched step and keeps what its own distribution
 * allows (greedy: what it would have chosen; sampling: the rejection rule), so the output
 * is distributed exactly as without speculation, only faster. */
typedef struct ember_speculation {
    uint32_t draft_k;   /* tokens proposed per step (1..EMBER_MAX_DRAFT); 0 = off */
    uint32_t ngram;     /* > 0: propose by n-gram lookup in the context with this n;
                           0: use the engine's draft model */
    int adaptive;       /* 1 = shrink/grow the draft length with the acceptance rate */
} ember_speculation;

typedef struct ember_request_desc {
    const char *prompt;          /* UTF-8 text, or NULL when tokens is given */
    const uint32_t *tokens;      /* prompt ids (used when prompt is NULL); copied */
    size_t n_tokens;
    int no_bos;                  /* 1 = do not prepend BOS to a text prompt */
    int parse_special;           /* 1 = control-token text in the prompt becomes tokens */
    uint32_t max_tokens;         /* 0 = 128 */
    ember_sampling sampling;
    const char *stop[EMBER_MAX_STOP]; /* stop strings (NULL-terminated list; copied) */
    ember_speculation spec;
    int ignore_eos;              /* 1 = keep going past end-of-generation tokens */
    /* > 0: keep only the last N tokens of the prompt (after tokenizing, BOS included:
     * a cut prompt loses its BOS, as vLLM's truncate_prompt_tokens does); 0 = all.
     * ember_request_metrics.n_prompt counts what was kept. */
    uint32_t truncate_prompt_tokens;
    /* Constrained output (docs/grammar.md): a grammar in GBNF, llama.cpp's format, that the
     * generated text must follow; NULL = free text. Every token is drawn from those the
     * grammar allows next (after the logit bias, before penalties and filters), an
     * end-of-generation token only where the text is a whole sentence of it; the request
     * ends with EMBER_FINISH_GRAMMAR once the grammar allows nothing more. A grammar with
     * an error is refused by ember_submit (EMBER_ERR_INVALID_ARG; the message names the
     * line, the column and the reason). Copied. */
    const char *grammar;
    const char *grammar_root;    /* its start rule; NULL = "root" */
    /* Or a JSON Schema (its text) that the generated text must be an instance of: it is
     * turned into a grammar (the same rules then apply). Every keyword is enforced or
     * refused by name at submit (EMBER_ERR_INVALID_ARG, "json schema: at /POINTER: ...");
     * docs/grammar.md lists them. Not with grammar. Copied. */
    const char *json_schema;
    /* A lazy grammar (tool calls): with a trigger here, the text is free until one of
     * them appears in it (control tokens count with their text, e.g. "[TOOL_CALLS]"),
     * and from the trigger's first byte on it must follow the grammar (or json_schema),
     * whose sentences therefore begin with a trigger. NULL-terminated; copied. */
    const char *grammar_triggers[EMBER_MAX_STOP];
    ember_token_cb on_token;
    ember_done_cb on_done;
    /* Log-probabilities of each generated token and of the top_logprobs (0..20) most likely
     * ones (NULL: none are computed, at no cost). On the GPU backend they come from the
     * row's best candidates and normaliser the step computes anyway (no whole row is read
     * for them); a speculating request reads its verified rows whole. */
    ember_logprobs_cb on_logprobs;
    uint32_t top_logprobs;
    /* The prompt's log-probabilities (OpenAI's echo, scoring): called for each prompt token
     * in order, before anything of the reply: the first has logprob NAN and no
     * alternatives (nothing predicts it), each other its log-probability after the tokens
     * before it and top_logprobs alternatives. Such a request reads a whole row of logits
     * per prompt token and does not reuse cached prefix blocks. */
    ember_logprobs_cb on_prompt_logprobs;
    int prompt_only;             /* 1 = end once the prompt is computed, generating nothing
                                    (EMBER_FINISH_LENGTH, n_gen 0): score a text */
    /* Several samples of one prompt (OpenAI's n, best_of): requests submitted with the
     * same non-zero group and the same prompt share its KV blocks. The first admitted
     * computes the prompt; the others wait in the queue until it has, then take its
     * blocks (copy on write) and compute only the prompt's last token, whose logits are
     * their own first draw. Give each its own sampling.seed. Needs the prefix cache
     * (ember_engine_opts.no_prefix_cache 0); otherwise, or with different prompts, the
     * requests simply run as separate ones. The caller picks the number (a counter). */
    uint64_t prompt_group;
    /* An embedding (retrieval, similarity) instead of a reply: the prompt is computed and
     * its hidden states pooled (ember_pooling; DEFAULT = the model's), L2-normalised and
     * handed to on_embedding; nothing is generated (the request ends EMBER_FINISH_LENGTH,
     * n_gen 0; max_tokens and sampling are not used). Such a request reads every prompt
     * row's hidden state and does not reuse cached prefix blocks. A model whose file
     * declares rank pooling (a reranker) refuses it (EMBER_ERR_UNSUPPORTED). */
    ember_embedding_cb on_embedding;
    ember_pooling pooling;
    /* Save: on_state gets the prompt's KV state once the prompt is computed (the K/V are
     * read back from the device: one wait). With prompt_only it saves a conversation, or
     * prefills for another engine, and generates nothing. */
    ember_state_cb on_state;
    /* Restore: a KV state (on_state's bytes; state_len of them, copied at submit) of the
     * same model, on any device or backend (another KV type is converted). The prompt
     * must begin with the state's tokens (NULL prompt and tokens: it is the state's
     * tokens); their K/V are written into the request's blocks instead of computed, but
     * for the prompt's last token, which is always computed (its logits are the first
     * draw). Blocks of the prompt already in the prefix cache are shared, not written.
     * A bad or mismatched state is refused at submit (EMBER_ERR_FORMAT or
     * EMBER_ERR_INVALID_ARG naming what is wrong), leaving nothing behind. Not with a
     * draft model's speculation, prompt log-probabilities or embeddings. */
    const void *state;
    size_t state_len;
    void *user;
} ember_request_desc;

/* Queues a request. Thread-safe: the prompt is tokenized on the calling thread and the
 * engine's lock is held only to add the request to the queue. A request it accepts
 * (EMBER_OK) gets exactly one done callback, whatever happens later. Once
 * ember_engine_destroy has begun it refuses every request with EMBER_ERR_SHUTTING_DOWN
 * (a done callback that submits a follow-up while destroy cancels the rest learns it
 * here); during ember_engine_stop a request is accepted and stays queued. An engine whose
 * ember_engine_create failed refuses every request with EMBER_ERR_INVALID_ARG. */
EMBER_API ember_status ember_submit(ember_engine *engine, const ember_request_desc *desc,
                                    ember_request_id *id);
/* One bounded scheduler iteration: at most one forward pass over at most
 * max_batch_tokens tokens, waited for. EMBER_OK: it ran a step; EMBER_IDLE: nothing could
 * run (no request pending, or every pending one waits); an error: the step failed and its
 * requests finished with EMBER_FINISH_ERROR. The same as ember_engine_step_begin followed
 * by ember_engine_step_end(engine, UINT64_MAX). Not to be mixed with ember_engine_start. */
EMBER_API ember_status ember_engine_step(ember_engine *engine);

/* Non-blocking steps, for a loop that must not stall (a game's frame):
 * ember_engine_step_begin plans a step, records and submits it to the GPU and returns
 * without waiting: EMBER_OK (a step is in flight), EMBER_IDLE (nothing to run), or an
 * error; when a step is already in flight it returns EMBER_NOT_READY and starts nothing
 * (the next step is planned only after the previous one finished).
 * ember_engine_step_end finishes the step in flight once the GPU is done, running the
 * token and done callbacks on the calling thread; it waits at most timeout_us
 * microseconds (0 = poll): EMBER_OK (finished), EMBER_NOT_READY (still running; call
 * again), EMBER_IDLE (no step in flight) or an error (the step's requests ended with
 * EMBER_FINISH_ERROR). What begin cannot hand to the GPU runs inside it: the CPU backend's
 * whole pass, a draft model's proposals, copies of shared KV blocks. */
EMBER_API ember_status ember_engine_step_begin(ember_engine *engine);
EMBER_API ember_status ember_engine_step_end(ember_engine *engine, uint64_t timeout_us);
/* The frame-budget helper: call it once per frame with what the frame can spare. It
 * finishes the step in flight if the GPU is done, starts the next one, and repeats while
 * time is left, never waiting for the GPU beyond budget_ms (0 = only poll, finish and
 * start). EMBER_OK: it finished or started a step; EMBER_NOT_READY: a step is still
 * running; EMBER_IDLE: nothing pending; or an error as ember_engine_step_end. */
EMBER_API ember_status ember_engine_run_for(ember_engine *engine, double budget_ms);
/* Orders the next step's GPU work against the application's: it starts once the timeline
 * semaphore (a VkSemaphore of VK_SEMAPHORE_TYPE_TIMELINE on the model's device) reaches
 * wait_value and sets it to signal_value when it is done (0 = no wait / no signal).
 * Applies to the next step submitted only (not to KV-block copies or a draft model's
 * passes, which touch only Ember's own buffers). The device needs timelineSemaphore
 * enabled (Ember enables it on devices it creates); EMBER_ERR_UNSUPPORTED otherwise and on
 * the CPU backend. */
EMBER_API ember_status ember_engine_sync_next_step(ember_engine *engine, void *timeline, uint64_t wait_value,
                                                   uint64_t signal_value);

/* Ends a request at the next step (its done callback says EMBER_FINISH_CANCELLED).
 * Thread-safe. EMBER_ERR_NOT_FOUND when no such request is pending. */
EMBER_API ember_status ember_cancel(ember_engine *engine, ember_request_id id);
/* Requests not yet finished (their done callback has not returned). Thread-safe. */
EMBER_API uint32_t ember_engine_pending(ember_engine *engine);

/* Worker-thread mode: the engine steps on its own thread while work is pending;
 * callbacks run on that thread. ember_engine_stop waits for the thread to end (work
 * left stays queued). */
EMBER_API ember_status ember_engine_start(ember_engine *engine);
EMBER_API void ember_engine_stop(ember_engine *engine);
/* Blocks until no request is pending or the worker thread stops (worker-thread mode;
 * returns at once without a worker). Thread-safe. */
EMBER_API void ember_engine_wait_idle(ember_engine *engine);

typedef struct ember_engine_stats {
    uint32_t kv_block_size, kv_blocks_total, kv_blocks_used, kv_peak_blocks_used;
    uint64_t kv_peak_tokens;      /* tokens stored at the moment of peak block use */
    uint64_t prefix_hit_tokens;   /* prompt tokens served from the cache, all requests */
    uint64_t preemptions;
    uint64_t steps, tokens_computed;
    ember_kv_type kv_type;
    uint64_t kv_bytes_per_token;  /* K and V of one token, all layers */
    uint64_t padding_tokens;      /* static batching: rows computed only for the fixed shape
                                     (prompt padding, members that had already finished;
                                     outputs discarded); included in tokens_computed.
                                     0 when continuous */
    uint64_t cow_copies;          /* KV blocks shared through the prefix cache that were
                                     copied before a request wrote into them */
    uint32_t requests_running, requests_waiting; /* scheduled, and queued behind them */
    uint32_t kv_blocks_max;       /* the pool's size without a memory budget */
    uint32_t device_lost;         /* 1 once the device was lost: every step fails; destroy the
                                     engine and the model and load again (a server's /health
                                     says 503) */
    uint64_t sampled_from_candidates; /* tokens sampled (not greedy) from the best candidates of
                                     their row that the GPU picked, reading 2 KiB (docs/sampling.md) */
    uint64_t sampled_from_rows;   /* ... from a whole row of logits read back */
    /* KV states (docs/state.md): handed over by on_state, and restored from desc.state;
     * their bytes (the states' own size) and the device transfer's time */
    uint64_t kv_states_saved, kv_states_restored;
    uint64_t kv_state_bytes_saved, kv_state_bytes_restored;
    uint64_t kv_state_positions_restored; /* prompt positions written instead of computed */
    double kv_state_transfer_s;
    /* A sliding-window model's local layers (docs/serving.md): they keep each sequence's
     * last kv_window positions in a pool of kv_local_slots slots of kv_block_size
     * positions (in use now, and at most after a step); all 0 when they keep whole
     * sequences in the pool of blocks, as every other layer does. */
    uint32_t kv_window, kv_local_slots, kv_local_slots_used, kv_local_peak_used;
} ember_engine_stats;
/* A snapshot taken at the end of the last step (and at submit, and as each request
 * finishes, so that it agrees with ember_engine_pending). Thread-safe. */
EMBER_API void ember_engine_get_stats(ember_engine *engine, ember_engine_stats *stats);

/* ---- Profiling (docs/profiling.md) ----------------------------------------------------
 * Where a step's time goes, for an engine made with ember_engine_opts.profile = 1: the GPU
 * time of every kernel (timestamp queries around each dispatch), dispatches and barriers
 * per step, the host's time per step, and the model weights read (bytes per token and the
 * bandwidth that implies). Steps of the speculative draft model are not included. */
#define EMBER_PROFILE_MAX_KERNELS 64

typedef struct ember_profile_kernel {
    const char *name;       /* the pipeline: its shader and variant, e.g. "linear_q8_0_m1";
                               "(other)" gathers kernels past EMBER_PROFILE_MAX_KERNELS.
                               Owned by the model: valid while the model lives */
    uint64_t dispatches;    /* in the phase's steps, all together */
    double gpu_ms;          /* their GPU time */
    uint64_t weight_bytes;  /* model weights they read */
} ember_profile_kernel;

typedef struct ember_profile_phase {
    uint64_t steps, tokens;      /* steps profiled, and the batch rows they computed */
    uint64_t dispatches, barriers;
    uint64_t submissions;        /* command buffers submitted for the steps: the step's own and
                                    a copy-on-write of shared KV blocks before it, if any */
    double gpu_ms;               /* GPU time of the steps, first dispatch to last */
    double host_ms;              /* host time of the steps outside the wait for the GPU
                                    (planning, recording, submitting, sampling, callbacks):
                                    steps run back to back leave the GPU idle this long */
    uint64_t weight_bytes;       /* model weights the steps read */
    uint64_t readback_bytes;     /* outputs the steps read back to the host: argmax ids, each
                                    sampled row's candidates or its whole row of logits */
    uint32_t n_kernels;          /* kernels[0 .. n_kernels-1], most GPU time first */
    ember_profile_kernel kernels[EMBER_PROFILE_MAX_KERNELS];
} ember_profile_phase;

typedef struct ember_profile {
    int gpu_timed;               /* 0: the CPU backend, or a device without timestamps: steps,
                                    tokens and host time only */
    ember_profile_phase decode;  /* steps whose every row gives logits: decoding, verifying drafts */
    ember_profile_phase prefill; /* steps with a prompt chunk */
} ember_profile;

/* Copies the profile gathered since the engine was made or last reset. EMBER_ERR_INVALID_ARG
 * when the engine was made without ember_engine_opts.profile. Thread-safe. */
EMBER_API ember_status ember_engine_get_profile(ember_engine *engine, ember_profile *out);
/* Starts the profile afresh (after a warm-up, say). Thread-safe. */
EMBER_API void ember_engine_reset_profile(ember_engine *engine);

/* Scores a token sequence for perplexity: the sequence is cut into consecutive windows
 * of ctx tokens (0 = the model's context length); in each window every token after the
 * first is predicted from the tokens before it in that window. *nll receives the sum of
 * -log p over the predicted tokens, *n_scored their count. */
EMBER_API ember_status ember_score(ember_model *model, const uint32_t *tokens, size_t n, uint32_t ctx,
                                   double *nll, size_t *n_scored);

/* ------------------------------------------------------------- grammars ---- */

/* Requests follow a grammar with ember_request_desc.grammar or .json_schema
 * (docs/grammar.md). These two calls need no model: they show what a JSON Schema becomes
 * and check a text against a grammar, for tools and tests. Thread-safe. */

/* Writes the GBNF grammar (start rule "root") that JSON Schema `schema` becomes into buf
 * (cap bytes, NUL-terminated when cap > 0; buf may be NULL when cap is 0); *len receives
 * its full length without the NUL (a call with cap too small says how much room is
 * needed). EMBER_ERR_INVALID_ARG: the schema is not JSON or uses a keyword Ember cannot
 * enforce; the message ("json schema: at /POINTER: ...") goes into err (err_cap bytes,
 * may be 0). */
EMBER_API ember_status ember_json_schema_to_grammar(const char *schema, char *buf, size_t cap, size_t *len,
                                                    char *err, size_t err_cap);

typedef struct ember_grammar_match {
    int complete;    /* 1: the text is a whole sentence of the grammar */
    size_t taken;    /* bytes the grammar takes before it refuses one (len when none) */
} ember_grammar_match;

/* Follows text[0..len) through GBNF `grammar` (start rule root; NULL = "root") into
 * *match. EMBER_OK whether or not the grammar takes the text; EMBER_ERR_INVALID_ARG when
 * the grammar has an error (its line, column and reason into err). */
EMBER_API ember_status ember_grammar_check(const char *grammar, const char *root, const char *text, size_t len,
                                           ember_grammar_match *match, char *err, size_t err_cap);

/* Tool calls. A model learns from its chat template how to write a call; Ember knows four
 * ways. ember_tool_calls_grammar gives the GBNF that keeps a reply's calls to the tools'
 * JSON Schemas (its sentences begin with ember_tool_syntax_trigger: give that as a
 * grammar_trigger when the model may also just answer); ember_tool_calls_parse reads
 * the calls back out of the reply. ember serve uses them for OpenAI's tools. */
typedef enum ember_tool_syntax {
    EMBER_TOOLS_JSON = 0, /* {"tool_calls": [{"name", "arguments"}]}: a template without its own */
    EMBER_TOOLS_HERMES,   /* <tool_call>{"name", "arguments"}</tool_call>: Hermes 2 Pro, Qwen 2.5 and 3 */
    EMBER_TOOLS_MISTRAL,  /* [TOOL_CALLS][{"name", "arguments"}]: Mistral */
    EMBER_TOOLS_LLAMA3,   /* {"name", "parameters"}: Llama 3.1 and 3.2 */
} ember_tool_syntax;

/* The syntax the model's chat template (tokenizer.chat_template) teaches. */
EMBER_API ember_tool_syntax ember_model_tool_syntax(const ember_model *model);
/* What a call begins with in syntax s ("<tool_call>", "[TOOL_CALLS]", ...). */
EMBER_API const char *ember_tool_syntax_trigger(ember_tool_syntax s);
/* The grammar of a reply's calls to the tools of tools_json (OpenAI's "tools" array);
 * only: the one function allowed (NULL = any); parallel: several calls. Writes the GBNF
 * into buf as ember_json_schema_to_grammar does (*len its full length).
 * EMBER_ERR_INVALID_ARG with the reason in err: tools that are not an array of named
 * functions, a parameters schema Ember cannot enforce, no function named `only`. */
EMBER_API ember_status ember_tool_calls_grammar(ember_tool_syntax s, const char *tools_json, const char *only,
                                                int parallel, char *buf, size_t cap, size_t *len, char *err,
                                                size_t err_cap);
/* Reads the calls out of a reply text[0..len): *content_len gets the length of the text
 * before them (len when it makes none) and calls (cap bytes) a JSON array
 * [{"name", "arguments"}], "arguments" holding the arguments' JSON as the model wrote
 * them; *calls_len its full length, 0 when the reply makes no call. EMBER_ERR_INVALID_ARG:
 * calls that do not parse. */
EMBER_API ember_status ember_tool_calls_parse(ember_tool_syntax s, const char *text, size_t len,
                                              size_t *content_len, char *calls, size_t cap, size_t *calls_len,
                                              char *err, size_t err_cap);

/* ----------------------------------------------------------------- chat ---- */
/* One message of a conversation. role: "system", "user" or "assistant". */
typedef struct ember_chat_message {
    const char *role;
    const char *content;
} ember_chat_message;

/* Renders a conversation with a chat template into the prompt text (docs/chat.md).
 * template_name: NULL = the model's tokenizer.chat_template (ChatML when the model has
 * none), else a name ("chatml", "llama2", "llama3", "llama3.1", "mistral", "zephyr",
 * "gemma", "phi3") or Jinja source to detect the family from.
 * add_generation_prompt: 1 = end with the opening of the assistant's turn.
 * The text leaves out a leading BOS: submit it with parse_special = 1 and no_bos = 0.
 * Writes at most cap bytes plus a NUL when there is room; *len gets the full length.
 * An unknown template is EMBER_ERR_UNSUPPORTED; the message (ember_model_error) names it
 * and lists the known names. */
EMBER_API ember_status ember_chat_apply(ember_model *model, const char *template_name,
                                        const ember_chat_message *msgs, size_t n, int add_generation_prompt,
                                        char *buf, size_t cap, size_t *len);

/* An OpenAI-style conversation as a prompt: messages_json is an array of {"role",
 * "content", "tool_calls", "tool_call_id", "name"} (roles system or developer, user,
 * assistant, tool; content a string, an array of text parts, or null), tools_json
 * OpenAI's "tools" array (NULL or "": none). The model's own Jinja template renders it
 * where Ember can run that template (docs/chat.md); otherwise the built-in family does,
 * with the tools described in a system message and the calls written as
 * {"tool_calls": [...]}. *syntax (may be NULL) gets the tool-call syntax the prompt
 * teaches, for ember_tool_calls_grammar and ember_tool_calls_parse. Output and
 * template_name as ember_chat_apply; a message that is not of that shape is
 * EMBER_ERR_INVALID_ARG (ember_model_error says which). */
EMBER_API ember_status ember_chat_apply_json(ember_model *model, const char *template_name, const char *messages_json,
                                             const char *tools_json, int add_generation_prompt, char *buf, size_t cap,
                                             size_t *len, ember_tool_syntax *syntax);

/* A conversation kept as token ids, so that each turn's prompt extends the previous one
 * and the engine's prefix cache serves the earlier turns:
 *     ember_chat_create(model, NULL, &c);  ember_chat_add(c, "system", "...");
 *     per turn: ember_chat_add(c, "user", line);
 *               ember_chat_prompt(c, &ids, &n);   submit ids (desc.tokens), collect the
 *               generated ids from the token callback;
 *               ember_chat_add_reply(c, gen, n_gen);
 * Only the part added since the last reply is rendered and tokenized (with special-token
 * parsing); the reply stays exactly as generated.
 * A conversation longer than the context goes on: when the next prompt and the room kept
 * for its reply do not fit, ember_chat_prompt drops the oldest whole turns after the
 * leading system messages (ember_chat_set_fit; ember_chat_get_info says what went), and
 * the prefix cache still serves the system prompt. docs/chat.md, "Long conversations". */
typedef struct ember_chat ember_chat;

/* What ember_chat_prompt does when the conversation does not fit. */
typedef enum ember_chat_overflow {
    EMBER_CHAT_DROP_OLDEST = 0, /* drop the oldest whole turns (a user message and what
                                   follows it up to the next one) after the leading system
                                   messages, as few as make it fit (default) */
    EMBER_CHAT_REFUSE = 1,      /* refuse: EMBER_ERR_CONTEXT_FULL, the chat unchanged */
} ember_chat_overflow;

/* How a conversation is fitted into the context; the zero value is the default. */
typedef struct ember_chat_fit {
    ember_chat_overflow overflow;
    /* The max_tokens the replies are submitted with (0 = 128, ember_request_desc's
     * default): the prompt leaves room for min(max_tokens, n_ctx / 2) tokens of reply. */
    uint32_t max_tokens;
    /* > 0: leave exactly this many tokens for the reply instead (below n_ctx). */
    uint32_t reply_room;
    /* The context to fit (0 = the model's ctx_len); smaller when the engine's KV pool
     * holds less than one context (kv_blocks * kv_block_size). */
    uint32_t n_ctx;
} ember_chat_fit;

/* template_name as for ember_chat_apply. On failure *out (if not NULL) holds the message;
 * free it with ember_chat_free. The model must outlive the chat. */
EMBER_API ember_status ember_chat_create(ember_model *model, const char *template_name,
                                         ember_chat **out);
EMBER_API void ember_chat_free(ember_chat *chat);
/* The message of the last failed call; "" when none. */
EMBER_API const char *ember_chat_error(const ember_chat *chat);
/* The template family in use ("chatml", "llama3", ...). */
EMBER_API const char *ember_chat_template_name(const ember_chat *chat);
/* Appends a message (copied). "assistant" messages added here are text (for history
 * given in advance); replies generated by the engine go through ember_chat_add_reply. */
EMBER_API ember_status ember_chat_add(ember_chat *chat, const char *role, const char *content);
/* The whole conversation as token ids, ending with the generation prompt: what to submit.
 * Valid until the next call on chat. */
EMBER_API ember_status ember_chat_prompt(ember_chat *chat, const uint32_t **tokens,
                                         size_t *n_tokens);
/* Appends the assistant's reply to the last prompt: the ids the engine generated,
 * including an end-of-generation token that ended it. */
EMBER_API ember_status ember_chat_add_reply(ember_chat *chat, const uint32_t *tokens, size_t n);

/* Takes back the last message ember_chat_add added, when no reply came after it (a user
 * message whose request was refused or failed): the conversation goes on as if it had
 * never been added; turns a prompt dropped meanwhile stay dropped. EMBER_ERR_INVALID_ARG
 * when the last message is a reply (or there is none). */
EMBER_API ember_status ember_chat_take_back(ember_chat *chat);

/* Sets how ember_chat_prompt fits the conversation into the context (copied; a new chat
 * has the zero value). EMBER_ERR_INVALID_ARG for an unknown overflow or a reply_room
 * that leaves no room for a prompt.
 * When the prompt plus the reply's room exceed n_ctx, ember_chat_prompt (DROP_OLDEST)
 * drops as few of the oldest turns as make it fit, renders what is kept afresh (the
 * kept replies as text), and returns that prompt; the turns dropped are in
 * ember_chat_get_info. Never dropped: the leading system messages and the last turn (the
 * one being asked). When dropping every older turn still leaves less room than asked,
 * they all go and the prompt leaves the room there is (the reply may end with
 * EMBER_FINISH_CONTEXT). When even the system messages and the last turn fill n_ctx, or
 * under REFUSE whenever the room is short, it returns EMBER_ERR_CONTEXT_FULL with the
 * numbers in ember_chat_error, and the chat is unchanged (the messages added since the
 * last reply stay: start a new chat to go on). */
EMBER_API ember_status ember_chat_set_fit(ember_chat *chat, const ember_chat_fit *fit);

/* Saving a conversation to continue it later, in this process or another (docs/chat.md,
 * "Saving a conversation"):
 *     ember_chat_tokens(c, &ids, &n);    after a reply: the conversation's ids
 *     submit {.tokens = ids, .n_tokens = n, .prompt_only = 1, .on_state = keep}: the
 *         prefix cache holds all but the last id, so only that one is computed
 *     ember_chat_save(c, state, state_len, buf, cap, &len);  buf: write it anywhere
 * and later:
 *     ember_chat_load(model, NULL, buf, len, &c);   the same messages and ids
 *     ember_chat_kv_state(c, &state, &state_len);   give it as desc.state with the next
 *         prompt's request: its blocks are restored instead of the conversation computed.
 * The conversation's ids through the last reply (n 0 after old turns were dropped: the
 * next prompt is rendered afresh). EMBER_ERR_INVALID_ARG between ember_chat_prompt and
 * its reply. Valid until the next call on chat. */
EMBER_API ember_status ember_chat_tokens(ember_chat *chat, const uint32_t **ids, size_t *n);
/* The chat's messages, ids and fitting, with kv_state (kv_len bytes; NULL, 0: none) —
 * the KV state of ember_chat_tokens' ids — as one checksummed block of bytes: *len is
 * its size, and it is written to buf when cap holds it all (call with NULL, 0 first to
 * learn the size). Not between ember_chat_prompt and its reply. */
EMBER_API ember_status ember_chat_save(ember_chat *chat, const void *kv_state, size_t kv_len, void *buf, size_t cap,
                                       size_t *len);
/* A chat from ember_chat_save's bytes (untrusted: every field is checked) for model, with
 * template_name as ember_chat_create: the template family must be the one it was saved
 * with, and its KV state of this model (fingerprint) and of its ids. On failure *out
 * holds the message (free it). */
EMBER_API ember_status ember_chat_load(ember_model *model, const char *template_name, const void *buf, size_t len,
                                       ember_chat **out);
/* A loaded chat's KV state (NULL, 0: none), owned by the chat: desc.state for the next
 * prompt's request. */
EMBER_API void ember_chat_kv_state(const ember_chat *chat, const void **state, size_t *len);

typedef struct ember_chat_info {
    size_t n_messages;          /* in the conversation now (dropped ones are gone) */
    /* Those messages, oldest first, with a user message still waiting for its reply: what
     * an application shows of a loaded chat (ember_chat_load). Roles as given to
     * ember_chat_add; a reply's content is its text. Valid until the next call on the chat
     * that changes it. NULL when there are none. */
    const ember_chat_message *messages;
    size_t n_tokens;            /* the last prompt, and the reply added to it */
    uint32_t n_ctx;             /* the context it is fitted to */
    uint32_t reply_room;        /* tokens each prompt leaves for the reply */
    /* What the last ember_chat_prompt dropped (0 and NULL when it fitted): whole turns,
     * their messages oldest first, for an application to show or to summarise. The
     * messages stay valid until the next call on the chat that changes it. */
    uint32_t dropped_turns;
    size_t n_dropped;
    const ember_chat_message *dropped;
    uint64_t dropped_turns_total; /* turns dropped since the chat was created */
} ember_chat_info;
/* Where the conversation stands. Cannot fail (a NULL chat gives zeros). */
EMBER_API void ember_chat_get_info(const ember_chat *chat, ember_chat_info *info);

#ifdef __cplusplus
}
#endif
#endif /* EMBER_H */
