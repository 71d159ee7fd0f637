/* reference.h — the plain-C forward pass: the oracle the GPU path is tested against.
 * Clear rather than fast. One sequence, contiguous KV cache of ctx_len positions. */
#ifndef EMBER_REFERENCE_H
#define EMBER_REFERENCE_H

#include "engine/model/model.h"

typedef struct ember_ref ember_ref;

/* m must outlive the returned object (it points into the GGUF mapping). */
ember_status ember_ref_create(const ember_llama *m, ember_ref **out, ember_err *err);
void ember_ref_free(ember_ref *r);

/* Runs n tokens at positions pos0..pos0+n-1 (the cache must hold pos0 earlier positions).
 * If logits is not NULL it receives n rows of n_vocab floats (all_logits = 1) or only the
 * last row (all_logits = 0). Fails with EMBER_ERR_CONTEXT_FULL past ctx_len. */
ember_status ember_ref_forward(ember_ref *r, const uint32_t *tokens, uint32_t n, uint32_t pos0,
                               float *logits, int all_logits, ember_err *err);

#endif
