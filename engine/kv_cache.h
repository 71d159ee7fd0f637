/* kv_cache.h — the pool of fixed-size KV blocks, host-side bookkeeping only: which
 * blocks are free. The GPU memory behind the blocks belongs to ember_forward. */
#ifndef EMBER_KV_CACHE_H
#define EMBER_KV_CACHE_H

#include <stdint.h>

#include "error.h"

#define EMBER_NO_BLOCK UINT32_MAX

typedef struct ember_kv_pool ember_kv_pool;

ember_status ember_kv_pool_create(uint32_t n_blocks, ember_kv_pool **out, ember_err *err);
void ember_kv_pool_free(ember_kv_pool *p);
/* A free block, or EMBER_NO_BLOCK when none is left. */
uint32_t ember_kv_take(ember_kv_pool *p);
void ember_kv_give(ember_kv_pool *p, uint32_t block);
uint32_t ember_kv_n_free(const ember_kv_pool *p);

#endif
