/* step.c — the step interface (step.h) over its two backends. */
#include <stdlib.h>

#include "common/alloc.h"
#include "step.h"

#include "engine/cpu/reference.h"
#include "engine/gpu/forward.h"
#include "kv_layout.h"

typedef struct step_ops {
    ember_status (*submit)(void *impl, const ember_batch *b, const ember_step_out *out, ember_err *err);
    ember_status (*wait)(void *impl, uint64_t timeout_ns, ember_err *err);
    ember_status (*copy_blocks)(void *impl, const uint32_t *src, const uint32_t *dst, const uint32_t *lsrc,
                                const uint32_t *ldst, uint32_t n, ember_err *err);
    ember_status (*transfer_kv)(void *impl, const uint32_t *blocks, const uint32_t *local, uint32_t p0, uint32_t p1,
                                uint8_t *rows, uint32_t rows_pos, bool write, ember_err *err);
    void (*free)(void *impl);
} step_ops;

struct ember_step {
    const step_ops *ops;
    void *impl;
};

/* ---- the GPU forward pass ------------------------------------------------------------- */

static ember_status gpu_submit(void *f, const ember_batch *b, const ember_step_out *out, ember_err *err)
{
    return ember_forward_submit(f, b, out, err);
}

static ember_status gpu_wait(void *f, uint64_t timeout_ns, ember_err *err)
{
    return ember_forward_collect(f, timeout_ns, err);
}

static ember_status gpu_copy(void *f, const uint32_t *src, const uint32_t *dst, const uint32_t *lsrc,
                             const uint32_t *ldst, uint32_t n, ember_err *err)
{
    return ember_forward_copy_blocks(f, src, dst, lsrc, ldst, n, err);
}

static ember_status gpu_transfer(void *f, const uint32_t *blocks, const uint32_t *local, uint32_t p0, uint32_t p1,
                                 uint8_t *rows, uint32_t rows_pos, bool write, ember_err *err)
{
    return ember_forward_transfer_kv(f, blocks, local, p0, p1, rows, rows_pos, write, err);
}

static void gpu_free(void *f) { ember_forward_free(f); }

static const step_ops GPU = {gpu_submit, gpu_wait, gpu_copy, gpu_transfer, gpu_free};

static ember_status gpu_create(const ember_model *m, const ember_step_opts *o, void **out, ember_err *err)
{
    ember_forward_opts fo = {.max_tokens = o->max_tokens, .max_seqs = o->max_seqs, .n_blocks = o->n_blocks,
                             .block_size = o->block_size, .max_blocks_per_seq = o->max_blocks_per_seq,
                             .kv_type = o->kv_type, .n_local = o->n_local, .window = o->window};
    return ember_forward_create(m->gpu, &fo, (ember_forward **)out, err);
}

/* ---- the CPU reference ---------------------------------------------------------------- */

/* The CPU computes the whole step when it is submitted: there is nothing to wait for. Its
 * logits are in host memory already: every row is written, whatever out->want says. It
 * keeps every layer's K/V under the block ids (host memory): local slots need no copy
 * of their own, and a saved state holds the positions behind a window too. */
static ember_status cpu_submit(void *r, const ember_batch *b, const ember_step_out *out, ember_err *err)
{
    if (out->cands) return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the CPU backend reads whole rows of logits");
    return ember_ref_run(r, b, out->logits, out->argmax, out->hidden, err);
}

static ember_status cpu_wait(void *r, uint64_t timeout_ns, ember_err *err) { return EMBER_OK; }

static ember_status cpu_copy(void *r, const uint32_t *src, const uint32_t *dst, const uint32_t *lsrc,
                             const uint32_t *ldst, uint32_t n, ember_err *err)
{
    (void)lsrc, (void)ldst;
    return ember_ref_copy_blocks(r, src, dst, n, err);
}

static ember_status cpu_transfer(void *r, const uint32_t *blocks, const uint32_t *local, uint32_t p0, uint32_t p1,
                                 uint8_t *rows, uint32_t rows_pos, bool write, ember_err *err)
{
    (void)local;
    return ember_ref_transfer_kv(r, blocks, p0, p1, rows, rows_pos, write, err);
}

static void cpu_free(void *r) { ember_ref_free(r); }

static const step_ops CPU = {cpu_submit, cpu_wait, cpu_copy, cpu_transfer, cpu_free};

static ember_status cpu_create(const ember_model *m, const ember_step_opts *o, void **out, ember_err *err)
{
    if (o->kv_type != EMBER_KV_F32)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                          "a %s KV cache needs the Vulkan backend (the CPU reference keeps K and V in F32)",
                          o->kv_type == EMBER_KV_F16 ? "F16" : "Q8_0");
    return ember_ref_create_paged(&m->llama, o->n_blocks, o->block_size, o->max_blocks_per_seq,
                                  (ember_ref **)out, err);
}

/* ---- the interface -------------------------------------------------------------------- */

ember_status ember_step_create(const ember_model *m, const ember_step_opts *o, ember_step **out, ember_err *err)
{
    *out = NULL;
    ember_step *s = ember_calloc(1, sizeof *s);
    if (!s) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    s->ops = m->gpu ? &GPU : &CPU;
    ember_status st = m->gpu ? gpu_create(m, o, &s->impl, err) : cpu_create(m, o, &s->impl, err);
    if (st != EMBER_OK) {
        ember_free(s);
        return st;
    }
    *out = s;
    return EMBER_OK;
}

void ember_step_free(ember_step *s)
{
    if (!s) return;
    s->ops->free(s->impl);
    ember_free(s);
}

ember_status ember_step_submit(ember_step *s, const ember_batch *b, const ember_step_out *out, ember_err *err)
{
    return s->ops->submit(s->impl, b, out, err);
}

ember_status ember_step_wait(ember_step *s, uint64_t timeout_ns, ember_err *err)
{
    return s->ops->wait(s->impl, timeout_ns, err);
}

ember_status ember_step_run(ember_step *s, const ember_batch *b, float *logits, uint32_t *argmax, ember_err *err)
{
    ember_step_out out = {.logits = logits, .argmax = argmax};
    ember_status st = ember_step_submit(s, b, &out, err);
    return st == EMBER_OK ? ember_step_wait(s, UINT64_MAX, err) : st;
}

bool ember_step_has_candidates(const ember_step *s) { return s->ops == &GPU; }

ember_status ember_step_fetch_logits(ember_step *s, const uint32_t *rows, uint32_t n, float *out, ember_err *err)
{
    if (s->ops != &GPU) return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the CPU backend delivers every row");
    return ember_forward_fetch_logits(s->impl, rows, n, out, err);
}

ember_status ember_step_transfer_kv(ember_step *s, const uint32_t *blocks, const uint32_t *local, uint32_t p0,
                                    uint32_t p1, uint8_t *rows, uint32_t rows_pos, bool write, ember_err *err)
{
    return s->ops->transfer_kv(s->impl, blocks, local, p0, p1, rows, rows_pos, write, err);
}

ember_status ember_step_copy_blocks(ember_step *s, const uint32_t *src, const uint32_t *dst, const uint32_t *lsrc,
                                    const uint32_t *ldst, uint32_t n, ember_err *err)
{
    return s->ops->copy_blocks(s->impl, src, dst, lsrc, ldst, n, err);
}

ember_status ember_step_sync_next(ember_step *s, void *timeline, uint64_t wait_value, uint64_t signal_value,
                                  ember_err *err)
{
    if (s->ops != &GPU) return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the CPU backend has no GPU work to order");
    return ember_forward_sync_next(s->impl, (VkSemaphore)timeline, wait_value, signal_value, err);
}

uint64_t ember_step_kv_bytes(const ember_step *s) { return s->ops == &GPU ? ember_forward_kv_bytes(s->impl) : 0; }

ember_status ember_step_resize_kv(ember_step *s, uint32_t n, uint32_t keep, ember_err *err)
{
    if (s->ops != &GPU)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the CPU backend's KV pool has a fixed size");
    return ember_forward_resize_kv(s->impl, n, keep, err);
}

ember_status ember_step_set_profiling(ember_step *s, bool on, ember_err *err)
{
    if (s->ops != &GPU) return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the CPU backend has no GPU timestamps");
    return ember_forward_set_profiling(s->impl, on, err);
}

uint32_t ember_step_profile(const ember_step *s, const ember_vk_dispatch_time **d, uint32_t *n_barriers,
                            double *gpu_ns)
{
    if (s->ops != &GPU) {
        *d = NULL, *n_barriers = 0, *gpu_ns = 0;
        return 0;
    }
    return ember_forward_profile(s->impl, d, n_barriers, gpu_ns);
}

uint32_t ember_step_max_blocks(const ember_model *m, uint32_t block_size, ember_kv_type t)
{
    const ember_hparams *hp = &m->llama.hp;
    uint64_t per_block = (uint64_t)block_size * hp->n_kv_heads * ember_kv_row_bytes(hp->head_dim, t);
    if (!m->vk || !per_block) return UINT32_MAX;
    uint64_t max = ember_vk_get_caps(m->vk)->max_storage_range / per_block;
    return max < UINT32_MAX ? (uint32_t)max : UINT32_MAX;
}
