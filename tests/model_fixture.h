/* model_fixture.h — what the model test programs (test_arch, test_reference, test_forward,
 * test_forward_arch) share: models (made with tu_make_model) loaded with or without the
 * CPU reference, and on the GPU a forward pass compared with the reference.
 * The helpers that say "checked" count a failure as a failed check (testutil.h). */
#ifndef EMBER_MODEL_FIXTURE_H
#define EMBER_MODEL_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/gpu/forward.h"
#include "engine/model/gguf_write.h"
#include "engine/model/model.h"
#include "engine/cpu/reference.h"
#include "testutil.h"

/* A model file and what was made from it; the members not asked for stay NULL. */
typedef struct mf_model {
    ember_gguf *g;
    ember_llama m;
    ember_ref *ref;         /* with_ref / mf_gpu_open */
    ember_gpu_model *gm;    /* mf_gpu_open */
    ember_forward *f;       /* mf_gpu_open */
} mf_model;

/* Opens path and loads its model, then a reference pass over it when with_ref. Whatever
 * the outcome M must be released with mf_unload. */
ember_status mf_load(const char *path, bool with_ref, mf_model *M, ember_err *err);
/* mf_load, checked; on a failure M is already released. */
bool mf_load_checked(const char *path, bool with_ref, mf_model *M);
/* Releases all of M and empties it, so a second call does nothing. */
void mf_unload(mf_model *M);

/* All n rows of logits of prompt from a fresh reference pass over m (so m may have been
 * edited since loading); malloc'ed, NULL on a failure (checked). */
float *mf_ref_logits(const ember_llama *m, const uint32_t *prompt, uint32_t n);

/* ---- on the GPU ------------------------------------------------------------------- */

/* The device, with the validation layer when the tests ask for it (tu_validation);
 * NULL with the reason in err when there is none. */
ember_vk *mf_vk_open(ember_err *err);
/* Checks the validation layer reported nothing, then destroys vk. */
void mf_vk_close(ember_vk *vk);

/* mf_load with the reference, the weights uploaded (bindings of at most max_part bytes,
 * 0 = the device's limit) and a forward pass made with o; checked. Release with
 * mf_unload whatever the outcome. */
bool mf_gpu_open(mf_model *M, ember_vk *vk, const char *path, uint64_t max_part, const ember_forward_opts *o);
/* The same with the GPU model's options (go->max_part_bytes bounds each binding). */
bool mf_gpu_open_opts(mf_model *M, ember_vk *vk, const char *path, const ember_gpu_model_opts *go,
                      const ember_forward_opts *o);

/* One GPU step of n tokens of sequence slot at positions pos0.. through the block tables
 * bt, logits of every row; checked. check_argmax also checks the argmax the GPU gives for
 * each row against the row's logits. */
bool mf_gpu_run(mf_model *M, const uint32_t *bt, uint32_t slot, const uint32_t *toks, uint32_t n,
                uint32_t pos0, float *logits, bool check_argmax);

/* A sequence in slot 0 of random tokens (ids 3 and up): n_prompt prefilled in steps of
 * at most chunk tokens, then n_decode steps of one token. */
typedef struct mf_chunked {
    uint64_t seed;
    uint32_t n_prompt, chunk, n_decode;
    const uint32_t *bt;     /* the block tables */
    bool check_argmax;      /* as in mf_gpu_run */
} mf_chunked;

/* The worst relative error of the GPU's logits against the reference's over every row of
 * c's sequence; -1 on a failure (checked). */
double mf_chunked_err(mf_model *M, const mf_chunked *c);

#endif
