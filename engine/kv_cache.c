/* kv_cache.c — a free list of KV block indices. Lowest indices are handed out first so
 * that a fresh engine fills the pool from the start (easier to read in a debugger). */
#include <stdlib.h>

#include "kv_cache.h"

struct ember_kv_pool {
    uint32_t n_blocks;
    uint32_t n_free;
    uint32_t *free; /* stack; top = free[n_free-1] */
};

ember_status ember_kv_pool_create(uint32_t n_blocks, ember_kv_pool **out, ember_err *err)
{
    ember_kv_pool *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p || !(p->free = malloc((size_t)n_blocks * sizeof *p->free))) {
        free(p);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    p->n_blocks = n_blocks;
    for (uint32_t i = 0; i < n_blocks; i++) p->free[i] = n_blocks - 1 - i;
    p->n_free = n_blocks;
    *out = p;
    return EMBER_OK;
}

void ember_kv_pool_free(ember_kv_pool *p)
{
    if (!p) return;
    free(p->free);
    free(p);
}

uint32_t ember_kv_take(ember_kv_pool *p)
{
    return p->n_free ? p->free[--p->n_free] : EMBER_NO_BLOCK;
}

void ember_kv_give(ember_kv_pool *p, uint32_t block)
{
    if (block < p->n_blocks && p->n_free < p->n_blocks) p->free[p->n_free++] = block;
}

uint32_t ember_kv_n_free(const ember_kv_pool *p) { return p->n_free; }
