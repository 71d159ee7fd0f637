/* engine_opts.h — the values an engine gives the options left zero (engine.c), which the
 * memory estimate (memory_estimate.c) must count with too. Library-internal. */
#ifndef EMBER_ENGINE_OPTS_H
#define EMBER_ENGINE_OPTS_H

#include "ember.h"

/* Fills max_seqs, max_batch_tokens and kv_block_size where zero (docs at
 * ember_engine_opts). */
void ember_engine_opts_defaults(ember_engine_opts *o);

#endif
