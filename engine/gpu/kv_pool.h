/* kv_pool.h — the K and V pools of a forward pass on the device (kv_pool.c): per layer
 * a K and a V span of blocks in the layout kernels_attention.h gives. The global layers'
 * pools hold n_blocks blocks, addressed by the engine's block ids; with local slots
 * (kv_cache.h) a sliding-window model's local layers hold n_local, addressed by the
 * blocks' local slots, so that a long sequence's local layers take a window of memory.
 * Library-internal. */
#ifndef EMBER_KV_POOL_H
#define EMBER_KV_POOL_H

#include "gpu_model.h"

typedef struct ember_kv_pool_opts {
    uint32_t n_blocks, block_size;
    uint32_t n_local;      /* local slots (0: every layer in the n_blocks pools) */
    uint32_t window;       /* the window local slots are kept for: layers of that window
                              or less use them, a layer with a larger one the block ids */
    ember_kv_type kv_type;
} ember_kv_pool_opts;

typedef struct ember_kv_pool ember_kv_pool;

ember_status ember_kv_pool_create(ember_gpu_model *g, const ember_kv_pool_opts *o, ember_kv_pool **out,
                                  ember_err *err);
void ember_kv_pool_free(ember_kv_pool *p);

/* Whether layer l reads its blocks through the local slots. */
bool ember_kv_pool_is_local(const ember_kv_pool *p, uint32_t l);
/* Layer l's K and V pools. */
ember_vk_span ember_kv_pool_k(const ember_kv_pool *p, uint32_t l);
ember_vk_span ember_kv_pool_v(const ember_kv_pool *p, uint32_t l);
/* Blocks of the global pools, and local slots (n_blocks without local slots). */
uint32_t ember_kv_pool_n_blocks(const ember_kv_pool *p);
uint32_t ember_kv_pool_n_local(const ember_kv_pool *p);
/* Device bytes of all the pools. */
uint64_t ember_kv_pool_bytes(const ember_kv_pool *p);

/* Records into c the copies of blocks src[i] -> dst[i] (global layers) and of local
 * slots lsrc[i] -> ldst[i] (local layers; lsrc NULL: none, as when a resize renames the
 * blocks but not their slots; an entry EMBER_NO_BLOCK: nothing to copy). Checks every id
 * first. */
ember_status ember_kv_pool_copies(ember_kv_pool *p, ember_vk_cmd *c, const uint32_t *src, const uint32_t *dst,
                                  const uint32_t *lsrc, const uint32_t *ldst, uint32_t n, ember_err *err);

/* ember_forward_transfer_kv's contract through command buffer c (submitted and waited
 * for): blocks the sequence's block table, local its local slots (NULL: blocks; an entry
 * EMBER_NO_BLOCK: that block's local positions were dropped, saved as zeros and not
 * restored). */
ember_status ember_kv_pool_transfer(ember_kv_pool *p, ember_vk_cmd *c, const uint32_t *blocks, const uint32_t *local,
                                    uint32_t p0, uint32_t p1, uint8_t *rows, uint32_t rows_pos, bool write,
                                    ember_err *err);

/* Makes the global pools n blocks, the first min(old, n, keep) keeping their K/V (copied
 * through c); the local ones stay as they are. */
ember_status ember_kv_pool_resize(ember_kv_pool *p, ember_vk_cmd *c, uint32_t n, uint32_t keep, ember_err *err);

#endif
