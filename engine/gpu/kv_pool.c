/* kv_pool.c — the K/V pools of a forward pass (kv_pool.h): allocated per layer group
 * (the global layers' in one arena, which a memory budget may remake at another size; the
 * local layers' in another), copied block by block for copy on write, and moved to and
 * from the host for KV state files. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "kv_pool.h"

#include "engine/kv_cache.h"
#include "engine/kv_layout.h"
#include "kernels_attention.h"

struct ember_kv_pool {
    ember_gpu_model *g;             /* borrowed */
    ember_kv_pool_opts o;
    bool *local;                    /* per layer: reads the local slots */
    ember_vk_arena *arena, *local_arena; /* the global layers' pools; the local layers' */
    ember_vk_span *k, *v;           /* per layer */
};

/* Bytes of one block (or local slot) of one layer's K or V pool: [kv_head][slot][dim]. */
static uint64_t block_bytes(const ember_kv_pool *p)
{
    const ember_hparams *hp = &p->g->hp;
    return (uint64_t)p->o.block_size * hp->n_kv_heads * ember_kv_row_bytes(hp->head_dim, p->o.kv_type);
}

static ember_status reserve(ember_vk_arena *arena, uint32_t n, VkDeviceSize bytes, ember_err *err)
{
    VkDeviceSize *sizes = ember_malloc((n ? n : 1) * sizeof *sizes);
    if (!sizes) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n; i++) sizes[i] = bytes;
    ember_status s = n ? ember_vk_arena_reserve(arena, sizes, n, EMBER_VK_MEM_DEVICE, err) : EMBER_OK;
    ember_free(sizes);
    return s;
}

/* The K and V pools of n blocks of the layers whose local flag is local, in a new arena
 * of their own (so that it can be remade without touching the rest). */
static ember_status alloc_group(ember_kv_pool *p, bool local, uint32_t n, bool over_budget_ok, ember_vk_arena **arena,
                                ember_vk_span *k, ember_vk_span *v, ember_err *err)
{
    const ember_hparams *hp = &p->g->hp;
    uint64_t bytes = n * block_bytes(p);
    uint32_t layers = 0;
    for (uint32_t l = 0; l < hp->n_layers; l++) layers += p->local[l] == local;
    if (layers && bytes > ember_vk_get_caps(p->g->vk)->max_storage_range)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                          "KV pool of %u blocks needs %llu bytes per layer, more than one storage binding", n,
                          (unsigned long long)bytes);
    ember_status s = ember_vk_arena_create(p->g->vk, arena, err);
    if (s == EMBER_OK && over_budget_ok) ember_vk_arena_allow_over_budget(*arena);
    if (s == EMBER_OK) s = reserve(*arena, 2 * layers, bytes, err);
    for (uint32_t l = 0; s == EMBER_OK && l < hp->n_layers; l++) {
        if (p->local[l] != local) continue;
        s = ember_vk_alloc(*arena, bytes, EMBER_VK_MEM_DEVICE, &k[l], err);
        if (s == EMBER_OK) s = ember_vk_alloc(*arena, bytes, EMBER_VK_MEM_DEVICE, &v[l], err);
        /* Attention reads K and V through texel views where the device allows. */
        if (s == EMBER_OK) s = ember_kernels_kv_view(p->g->kernels, *arena, p->o.kv_type, &k[l], err);
        if (s == EMBER_OK) s = ember_kernels_kv_view(p->g->kernels, *arena, p->o.kv_type, &v[l], err);
    }
    return s;
}

/* Layer l takes the local slots: a window of its own, within the one the slots are kept for. */
static bool takes_local(const ember_kv_pool_opts *o, const ember_hparams *hp, uint32_t l)
{
    ember_layer_attn at;
    ember_layer_attn_of(hp, l, &at);
    return o->n_local && at.window && at.window <= o->window;
}

ember_status ember_kv_pool_create(ember_gpu_model *g, const ember_kv_pool_opts *o, ember_kv_pool **out,
                                  ember_err *err)
{
    *out = NULL;
    uint32_t L = g->hp.n_layers;
    ember_kv_pool *p = ember_calloc(1, sizeof *p);
    if (p) {
        p->local = ember_calloc(L, sizeof *p->local);
        p->k = ember_calloc(L, sizeof *p->k);
        p->v = ember_calloc(L, sizeof *p->v);
    }
    if (!p || !p->local || !p->k || !p->v) {
        ember_kv_pool_free(p);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    p->g = g;
    p->o = *o;
    for (uint32_t l = 0; l < L; l++) p->local[l] = takes_local(o, &g->hp, l);
    ember_status s = alloc_group(p, false, o->n_blocks, false, &p->arena, p->k, p->v, err);
    if (s == EMBER_OK && o->n_local) s = alloc_group(p, true, o->n_local, false, &p->local_arena, p->k, p->v, err);
    if (s != EMBER_OK) {
        ember_kv_pool_free(p);
        return s;
    }
    *out = p;
    return EMBER_OK;
}

void ember_kv_pool_free(ember_kv_pool *p)
{
    if (!p) return;
    ember_vk_arena_destroy(p->arena);
    ember_vk_arena_destroy(p->local_arena);
    ember_free(p->local), ember_free(p->k), ember_free(p->v);
    ember_free(p);
}

bool ember_kv_pool_is_local(const ember_kv_pool *p, uint32_t l) { return p->local[l]; }
ember_vk_span ember_kv_pool_k(const ember_kv_pool *p, uint32_t l) { return p->k[l]; }
ember_vk_span ember_kv_pool_v(const ember_kv_pool *p, uint32_t l) { return p->v[l]; }
uint32_t ember_kv_pool_n_blocks(const ember_kv_pool *p) { return p->o.n_blocks; }
uint32_t ember_kv_pool_n_local(const ember_kv_pool *p) { return p->o.n_local ? p->o.n_local : p->o.n_blocks; }

uint64_t ember_kv_pool_bytes(const ember_kv_pool *p)
{
    return ember_vk_arena_bytes(p->arena) + (p->local_arena ? ember_vk_arena_bytes(p->local_arena) : 0);
}

/* Layer l's id of block table entry j: the block, or its local slot. */
static uint32_t id_of(const ember_kv_pool *p, uint32_t l, const uint32_t *blocks, const uint32_t *local, uint32_t j)
{
    return p->local[l] && local ? local[j] : blocks[j];
}

/* ---- copy on write ---------------------------------------------------------------- */

ember_status ember_kv_pool_copies(ember_kv_pool *p, ember_vk_cmd *c, const uint32_t *src, const uint32_t *dst,
                                  const uint32_t *lsrc, const uint32_t *ldst, uint32_t n, ember_err *err)
{
    for (uint32_t i = 0; i < n; i++) {
        bool bad = src[i] >= p->o.n_blocks || dst[i] >= p->o.n_blocks || src[i] == dst[i];
        if (p->o.n_local && lsrc && lsrc[i] != EMBER_NO_BLOCK)
            bad |= lsrc[i] >= p->o.n_local || ldst[i] >= p->o.n_local || lsrc[i] == ldst[i];
        if (bad) return ember_fail(err, EMBER_ERR_INVALID_ARG, "bad KV block copy %u -> %u", src[i], dst[i]);
    }
    /* A block is contiguous in each layer's K and V pool ([block][kv_head][slot][dim]). */
    uint64_t bb = block_bytes(p);
    for (uint32_t l = 0; l < p->g->hp.n_layers; l++)
        for (uint32_t i = 0; i < n && !(p->local[l] && !lsrc); i++) {
            uint32_t a = id_of(p, l, src, lsrc, i), b = id_of(p, l, dst, ldst, i);
            if (a == EMBER_NO_BLOCK) continue; /* a local part no holder needs */
            const ember_vk_span *pools[2] = {&p->k[l], &p->v[l]};
            for (int k = 0; k < 2; k++) {
                ember_vk_span from = ember_vk_span_sub(*pools[k], a * bb, bb), to = ember_vk_span_sub(*pools[k], b * bb, bb);
                ember_vk_cmd_copy(c, &from, &to, bb);
            }
        }
    return EMBER_OK;
}

/* ---- K/V to and from the host ------------------------------------------------------ */

/* One run of a transfer: slots [s0, s1) of KV head h in block table entry j of layer l's
 * K (v 0) or V pool, at staging offset off. */
typedef struct kv_run {
    uint32_t l, v, j, h, s0, s1;
    uint64_t off;
} kv_run;

typedef struct kv_xfer {
    ember_vk_cmd *c;
    const uint32_t *blocks, *local;
    uint8_t *rows, *staging;
    uint32_t rows_pos;
    bool write, to_host;     /* to_host: the host side of the copy (rows <-> staging) */
    ember_vk_span stage;
} kv_xfer;

typedef void (*kv_visit)(ember_kv_pool *p, const kv_run *r, kv_xfer *x);

/* Walks positions [p0, p1) run by run in the pool's order (a run: one head's slots of one
 * block, contiguous in the pool), giving each its offset in a staging buffer that holds
 * them in this order; returns the staging bytes. */
static uint64_t walk_kv(ember_kv_pool *p, uint32_t p0, uint32_t p1, kv_visit visit, kv_xfer *x)
{
    uint32_t bs = p->o.block_size, H = p->g->hp.n_kv_heads;
    uint64_t rb = ember_kv_row_bytes(p->g->hp.head_dim, p->o.kv_type), off = 0;
    for (uint32_t l = 0; l < p->g->hp.n_layers; l++)
        for (uint32_t v = 0; v < 2; v++)
            for (uint32_t pos = p0; pos < p1;) {
                uint32_t j = pos / bs, s0 = pos % bs, s1 = p1 - j * bs < bs ? p1 - j * bs : bs;
                for (uint32_t h = 0; h < H; h++, off += (s1 - s0) * rb)
                    if (visit) visit(p, &(kv_run){l, v, j, h, s0, s1, off}, x);
                pos = j * bs + s1;
            }
    return off;
}

/* A run's device copy, or its rows to or from staging on the host. A run of a local part
 * that was dropped is not copied: its staging stays zero (a save), its rows unread (a
 * restore). */
static void visit_run(ember_kv_pool *p, const kv_run *r, kv_xfer *x)
{
    uint32_t H = p->g->hp.n_kv_heads, bs = p->o.block_size, id = id_of(p, r->l, x->blocks, x->local, r->j);
    uint64_t rb = ember_kv_row_bytes(p->g->hp.head_dim, p->o.kv_type), n = (uint64_t)(r->s1 - r->s0) * rb;
    if (id == EMBER_NO_BLOCK) return;
    if (!x->to_host) {
        ember_vk_span pool = r->v ? p->v[r->l] : p->k[r->l];
        ember_vk_span dev = ember_vk_span_sub(pool, ((uint64_t)id * H * bs + r->h * bs + r->s0) * rb, n);
        ember_vk_span st = ember_vk_span_sub(x->stage, r->off, n);
        if (x->write) ember_vk_cmd_copy(x->c, &st, &dev, n);
        else ember_vk_cmd_copy(x->c, &dev, &st, n);
        return;
    }
    for (uint32_t s = r->s0; s < r->s1; s++) {
        uint64_t pos = (uint64_t)r->j * bs + s, row = ((r->l * 2ull + r->v) * x->rows_pos + pos) * H + r->h;
        uint8_t *st = x->staging + r->off + (s - r->s0) * rb;
        if (x->write) memcpy(st, x->rows + row * rb, rb);
        else memcpy(x->rows + row * rb, st, rb);
    }
}

/* Every entry of the table that positions [p0, p1) reach names a block (or slot) of its
 * pool. */
static ember_status check_table(const ember_kv_pool *p, const uint32_t *blocks, const uint32_t *local, uint32_t p0,
                                uint32_t p1, ember_err *err)
{
    for (uint32_t j = p0 / p->o.block_size; j <= (p1 - 1) / p->o.block_size; j++) {
        if (blocks[j] >= p->o.n_blocks)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "KV block %u of %u", blocks[j], p->o.n_blocks);
        if (p->o.n_local && local && local[j] != EMBER_NO_BLOCK && local[j] >= p->o.n_local)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "KV local slot %u of %u", local[j], p->o.n_local);
    }
    return EMBER_OK;
}

ember_status ember_kv_pool_transfer(ember_kv_pool *p, ember_vk_cmd *c, const uint32_t *blocks, const uint32_t *local,
                                    uint32_t p0, uint32_t p1, uint8_t *rows, uint32_t rows_pos, bool write,
                                    ember_err *err)
{
    if (p1 <= p0) return EMBER_OK;
    if (p1 > rows_pos) return ember_fail(err, EMBER_ERR_INVALID_ARG, "K/V positions %u..%u of %u", p0, p1, rows_pos);
    ember_status s = check_table(p, blocks, local, p0, p1, err);
    if (s != EMBER_OK) return s;
    kv_xfer x = {c, blocks, local, rows, NULL, rows_pos, write, write, {0}};
    ember_vk_arena *a = NULL;
    uint64_t bytes = walk_kv(p, p0, p1, NULL, NULL);
    s = ember_vk_arena_create(p->g->vk, &a, err);
    if (s == EMBER_OK) s = ember_vk_alloc(a, bytes, EMBER_VK_MEM_HOST, &x.stage, err);
    x.staging = x.stage.host;
    if (s == EMBER_OK && !write) memset(x.staging, 0, bytes); /* dropped local runs read as zeros */
    if (s == EMBER_OK && write) walk_kv(p, p0, p1, visit_run, &x), s = ember_vk_flush(p->g->vk, &x.stage, 1, err);
    if (s == EMBER_OK) s = ember_vk_cmd_begin(c, err);
    x.to_host = false;
    if (s == EMBER_OK) walk_kv(p, p0, p1, visit_run, &x), s = ember_vk_cmd_submit(c, err);
    if (s == EMBER_OK && !write) s = ember_vk_invalidate(p->g->vk, &x.stage, 1, err);
    x.to_host = true;
    if (s == EMBER_OK && !write) walk_kv(p, p0, p1, visit_run, &x);
    ember_vk_arena_destroy(a);
    return s;
}

/* ---- a pool of another size ---------------------------------------------------------- */

/* The global pools are made anew at n blocks and the first keep blocks of every global
 * layer copied over; for that moment both exist. */
ember_status ember_kv_pool_resize(ember_kv_pool *p, ember_vk_cmd *c, uint32_t n, uint32_t keep, ember_err *err)
{
    if (n == p->o.n_blocks) return EMBER_OK;
    uint32_t L = p->g->hp.n_layers;
    ember_vk_span *k = ember_calloc(L, sizeof *k), *v = ember_calloc(L, sizeof *v);
    ember_vk_arena *arena = NULL;
    ember_status s = k && v ? EMBER_OK : ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (s == EMBER_OK) s = alloc_group(p, false, n, true, &arena, k, v, err);
    if (s == EMBER_OK) s = ember_vk_cmd_begin(c, err);
    uint64_t bb = block_bytes(p);
    if (keep > n) keep = n;
    if (keep > p->o.n_blocks) keep = p->o.n_blocks;
    for (uint32_t l = 0; s == EMBER_OK && keep && l < L; l++) {
        if (p->local[l]) continue;
        ember_vk_cmd_copy(c, &p->k[l], &k[l], bb * keep);
        ember_vk_cmd_copy(c, &p->v[l], &v[l], bb * keep);
    }
    if (s == EMBER_OK) s = ember_vk_cmd_submit(c, err);
    if (s != EMBER_OK) {
        ember_vk_arena_destroy(arena);
        ember_free(k), ember_free(v);
        return s;
    }
    ember_vk_arena_destroy(p->arena);
    for (uint32_t l = 0; l < L; l++)
        if (!p->local[l]) p->k[l] = k[l], p->v[l] = v[l];
    ember_free(k), ember_free(v);
    p->arena = arena;
    p->o.n_blocks = n;
    return EMBER_OK;
}
