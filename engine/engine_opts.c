/* engine_opts.c — the engine's option defaults (engine_opts.h). */
#include "engine_opts.h"

void ember_engine_opts_defaults(ember_engine_opts *o)
{
    if (!o->max_seqs) o->max_seqs = 16;
    if (!o->max_batch_tokens) o->max_batch_tokens = 256;
    if (o->max_batch_tokens < o->max_seqs) o->max_batch_tokens = o->max_seqs;
    if (!o->kv_block_size) o->kv_block_size = 16;
}
