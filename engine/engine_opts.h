/* engine_opts.h — the values an engine gives the options left zero (engine.c), which the
 * memory estimate (memory_estimate.c) must count with too. Library-internal. */
#ifndef EMBER_ENGINE_OPTS_H
#define EMBER_ENGINE_OPTS_H

#include "ember.h"
#include "engine/model/model.h"

/* Fills max_seqs, max_batch_tokens and kv_block_size where zero (docs at
 * ember_engine_opts). */
void ember_engine_opts_defaults(ember_engine_opts *o);

/* The window of a model's local (sliding-window) layers, 0 without any. */
uint32_t ember_model_window(const ember_hparams *hp);
/* The local slots (kv_cache.h) an engine of options o (defaults filled) with a pool of
 * kv_blocks gives a model of hp: enough for every sequence's window and a step's new
 * blocks; 0 when that would not be fewer than kv_blocks, without local layers, and under
 * static batching, a contiguous layout or a draft model (docs/serving.md). */
uint32_t ember_engine_local_slots(const ember_hparams *hp, const ember_engine_opts *o, uint32_t kv_blocks);

#endif
