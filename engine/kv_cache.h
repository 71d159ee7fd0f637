/* kv_cache.h — the pool of fixed-size KV blocks (host-side bookkeeping; the GPU memory
 * behind the blocks belongs to ember_forward).
 *
 * Blocks are reference-counted. A block that a sequence has filled completely can be
 * published under the chained hash of its tokens (hash of the previous block + its own
 * tokens): a later sequence with the same prefix takes the same block instead of
 * recomputing it (prefix caching). A sequence that ends publishes its last, partly
 * filled block too, under the hash of the tokens it holds. A published block whose count
 * drops to zero is not freed but kept as "cached", least recently used first in line to
 * be reused when the free list is empty.
 *
 * Shared blocks are never written: a published block, or one held by more than one
 * sequence (ember_kv_is_shared), is copied before a sequence writes into it (copy on
 * write: the scheduler allocates a fresh block, the step copies the K/V rows over). */
#ifndef EMBER_KV_CACHE_H
#define EMBER_KV_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

#define EMBER_NO_BLOCK UINT32_MAX

typedef struct ember_kv_cache ember_kv_cache;

ember_status ember_kv_create(uint32_t n_blocks, uint32_t block_size, ember_kv_cache **out, ember_err *err);
void ember_kv_free(ember_kv_cache *kv);

/* Sliding-window layers (docs/serving.md): a pool made with n_local local slots (0: none)
 * gives each block it hands out a slot of a second, smaller pool as well, where a
 * model's local layers keep their K/V. A holder that no longer needs a block's local
 * part (every position of the block lies behind the window of its next query) drops
 * it; a slot no holder needs goes back to its pool, but a block that becomes cached keeps
 * its slot while slots last, so that a request continuing the same tokens finds the
 * window it needs there. A block is handed out only with a slot: ember_kv_alloc takes a
 * free one, else one a cached block holds (least recently used first), else fails. */
ember_status ember_kv_create_local(uint32_t n_blocks, uint32_t block_size, uint32_t n_local, ember_kv_cache **out,
                                   ember_err *err);
/* The block's local slot; EMBER_NO_BLOCK when it has none (dropped by every holder).
 * Without local slots: the block itself (the local layers share the block's id). */
uint32_t ember_kv_local(const ember_kv_cache *kv, uint32_t block);
/* One holder (who took the block, or a reference to it, while it had a slot) no longer
 * needs its local part. Once no holder does, the slot is freed. */
void ember_kv_drop_local(ember_kv_cache *kv, uint32_t block);
/* out[j] = the local slot of blocks[j], j < n, 0 where it has none: the block table of a
 * step's local layers (a dropped entry is never read: it lies behind the window). */
void ember_kv_local_row(const ember_kv_cache *kv, const uint32_t *blocks, uint32_t n, uint32_t *out);
/* ember_kv_release for a holder that dropped the block's local part already. */
void ember_kv_release_dropped(ember_kv_cache *kv, uint32_t block);
uint32_t ember_kv_n_local(const ember_kv_cache *kv);      /* local slots (0: none) */
uint32_t ember_kv_n_local_used(const ember_kv_cache *kv); /* ... held by a block */

/* A block with reference count 1: a free one, else the least recently used cached one
 * (which is then forgotten). EMBER_NO_BLOCK when every block is in use. */
uint32_t ember_kv_alloc(ember_kv_cache *kv);
void ember_kv_retain(ember_kv_cache *kv, uint32_t block);
/* Drops one reference; at zero the block becomes cached (if published) or free. */
void ember_kv_release(ember_kv_cache *kv, uint32_t block);

/* The chained hash of a block holding tokens[0..block_size) after a block with hash
 * parent (0 for the first block of a sequence). */
uint64_t ember_kv_hash(uint64_t parent, const uint32_t *tokens, uint32_t block_size);
/* The block published for (parent, tokens), with a reference taken, or EMBER_NO_BLOCK. */
uint32_t ember_kv_lookup(ember_kv_cache *kv, uint64_t parent, const uint32_t *tokens);
/* Publishes a full block (no-op when an equal block is already published). */
void ember_kv_publish(ember_kv_cache *kv, uint32_t block, uint64_t parent, const uint32_t *tokens);
/* The same for a block holding only tokens[0..n) (1 <= n <= block_size); the hash is
 * ember_kv_hash(parent, tokens, n), so blocks of different fill never match. */
void ember_kv_publish_n(ember_kv_cache *kv, uint32_t block, uint64_t parent, const uint32_t *tokens, uint32_t n);
uint32_t ember_kv_lookup_n(ember_kv_cache *kv, uint64_t parent, const uint32_t *tokens, uint32_t n);
/* Whether writing into the block would change what another holder or a later lookup
 * sees: published, or referenced more than once. */
bool ember_kv_is_shared(const ember_kv_cache *kv, uint32_t block);

/* Makes the pool n blocks (the memory budget changed). Blocks in use stay (n must hold
 * them), cached ones while room is left; blocks at or above n move below it. map (one
 * entry per block of the old pool) receives each old block's new id, EMBER_NO_BLOCK for
 * those dropped: the caller copies the K/V of every moved block and renames the blocks
 * in its block tables. */
ember_status ember_kv_resize(ember_kv_cache *kv, uint32_t n, uint32_t *map, ember_err *err);

uint32_t ember_kv_block_size(const ember_kv_cache *kv);
uint32_t ember_kv_n_blocks(const ember_kv_cache *kv);
/* Blocks that ember_kv_alloc can still hand out (free + cached-unused; with local slots,
 * at most the slots it can still find). */
uint32_t ember_kv_n_available(const ember_kv_cache *kv);
/* Blocks with a reference count above zero. */
uint32_t ember_kv_n_used(const ember_kv_cache *kv);
uint32_t ember_kv_refcount(const ember_kv_cache *kv, uint32_t block);
/* Adds to *filled the positions of blocks[0..n_blocks) that hold the first n_tokens
 * tokens of a sequence, and to *slots their positions, each block weighted 1/k when k
 * sequences hold it (for the fill of the blocks in use). */
void ember_kv_count_fill(const ember_kv_cache *kv, const uint32_t *blocks, uint32_t n_blocks, uint32_t n_tokens,
                         double *filled, double *slots);

#endif
