/* gpu_weight.c — uploading a weight matrix (or several stacked by rows) into GPU memory,
 * cut by whole rows into parts that each fit one storage-buffer binding and one texel
 * view. Where the device has the formats, every part gets its uniform texel views here,
 * once (F32 data RGBA32F, F16 and Q8_0 data and Q8_0 scales RGBA32UI): on lavapipe
 * texel fetches are several times faster than storage-buffer loads.
 *
 * F32 and F16 rows, and the rows of the other block types, are copied as they are, but for
 * the K types whose blocks gpu_block.c lays out anew for the decoders of shaders/types.
 * Q8_0 blocks ({f16 d; int8 q[32]}) are split into an array of quants (cols bytes per
 * row) and an array of f16 scales grouped by the lane of the linear shader that reads
 * them (shaders/q8_scales.glsl): the shaders then read 16 quants per 16-byte load, with
 * no 34-byte stride to undo, and 8 scales of one lane per load; nothing is ever expanded
 * to floats. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "gpu_block.h"
#include "gpu_weight.h"
#include "engine/model/quant_legacy.h"

#define REPACK_ROWS_BYTES (4u << 20) /* host scratch for one repack batch (Q8_0, gpu_block.c's types) */

/* Where the stacked sources stand: source s, row r within it. */
typedef struct src_cursor {
    const void *const *src;
    const uint32_t *src_rows;
    uint32_t s, r;
} src_cursor;

/* Takes up to want rows that are contiguous in one source; returns their first byte. */
static const uint8_t *take_rows(src_cursor *cur, uint64_t row_bytes, uint32_t want, uint32_t *got)
{
    while (cur->r == cur->src_rows[cur->s]) {
        cur->s++;
        cur->r = 0;
    }
    uint32_t left = cur->src_rows[cur->s] - cur->r;
    *got = want < left ? want : left;
    const uint8_t *p = (const uint8_t *)cur->src[cur->s] + (uint64_t)cur->r * row_bytes;
    cur->r += *got;
    return p;
}

static uint64_t round16(uint64_t n) { return (n + 15) & ~(uint64_t)15; }

/* Bytes of one GGUF row, and of one GPU row in the part's data binding. */
static uint64_t gguf_row_bytes(ember_dtype t, uint32_t cols) { return ember_dtype_size(t, cols); }
static uint64_t gpu_row_bytes(ember_dtype t, uint32_t cols)
{
    return t == EMBER_DTYPE_Q8_0 ? cols : (uint64_t)cols / ember_dtype_block(t) * ember_gpu_block_bytes(t);
}

/* The Q8_0 scales layout of shaders/q8_scales.glsl: each of the 8 lanes of a row gets
 * J halves (its blocks' count rounded up to 8), so a row has 16*J bytes. */
static uint32_t q8_lane_halves(uint32_t cols) { return ((cols / 32 + 7) / 8 + 7) & ~7u; }
static uint64_t q8_scale_row_bytes(uint32_t cols) { return 16ull * q8_lane_halves(cols); }

uint64_t ember_gpu_weight_bytes(ember_dtype type, uint64_t rows, uint32_t cols)
{
    uint64_t scales = type == EMBER_DTYPE_Q8_0 ? q8_scale_row_bytes(cols) : 0;
    return rows * (gpu_row_bytes(type, cols) + scales);
}

static void repack_q8_0(const uint8_t *src, uint32_t rows, uint32_t cols, uint8_t *quants, uint8_t *scales)
{
    uint32_t nb = cols / EMBER_Q8_0_BLOCK, lane = q8_lane_halves(cols);
    uint64_t srow = q8_scale_row_bytes(cols);
    memset(scales, 0, rows * srow);
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t b = 0; b < nb; b++) {
            const uint8_t *blk = src + ((uint64_t)r * nb + b) * EMBER_Q8_0_BYTES;
            memcpy(scales + r * srow + 2ull * ((b % 8) * lane + b / 8), blk, 2);
            memcpy(quants + ((uint64_t)r * nb + b) * EMBER_Q8_0_BLOCK, blk + 2, EMBER_Q8_0_BLOCK);
        }
}

/* Fills one Q8_0 part from the cursor, a batch of rows at a time. */
static ember_status upload_q8_0(ember_vk *vk, ember_gpu_weight_part *p, uint32_t cols, src_cursor *cur,
                                ember_err *err)
{
    uint64_t in_row = gguf_row_bytes(EMBER_DTYPE_Q8_0, cols), sc_row = q8_scale_row_bytes(cols);
    uint32_t batch = REPACK_ROWS_BYTES / cols;
    batch = batch < 1 ? 1 : batch;
    uint8_t *quants = ember_malloc((size_t)batch * cols), *scales = ember_malloc((size_t)(batch * sc_row));
    ember_status s = quants && scales ? EMBER_OK : ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t done = 0; s == EMBER_OK && done < p->n_rows;) {
        uint32_t n = 0, want = p->n_rows - done < batch ? p->n_rows - done : batch;
        while (s == EMBER_OK && n < want) {
            uint32_t got;
            const uint8_t *src = take_rows(cur, in_row, want - n, &got);
            repack_q8_0(src, got, cols, quants + (uint64_t)n * cols, scales + n * sc_row);
            n += got;
        }
        s = ember_vk_upload(vk, &p->data, (uint64_t)done * cols, quants, (size_t)n * cols, err);
        if (s == EMBER_OK)
            s = ember_vk_upload(vk, &p->scales, (uint64_t)done * sc_row, scales, (size_t)(n * sc_row), err);
        done += n;
    }
    ember_free(quants);
    ember_free(scales);
    return s;
}

/* Fills one part of a type not stored as in the file: each block written in its GPU
 * layout (gpu_block.c), a batch of rows at a time. */
static ember_status upload_blocks(ember_vk *vk, ember_gpu_weight_part *p, uint32_t cols, src_cursor *cur,
                                  ember_err *err)
{
    uint32_t fb = ember_dtype_find(p->type)->bytes, gb = ember_gpu_block_bytes(p->type), nb = cols / ember_dtype_block(p->type);
    uint64_t in_row = gguf_row_bytes(p->type, cols), out_row = gpu_row_bytes(p->type, cols);
    uint32_t batch = (uint32_t)(REPACK_ROWS_BYTES / out_row);
    batch = batch < 1 ? 1 : batch;
    uint8_t *out = ember_calloc(batch, out_row);
    ember_status s = out ? EMBER_OK : ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t done = 0; s == EMBER_OK && done < p->n_rows;) {
        uint32_t n = 0, want = p->n_rows - done < batch ? p->n_rows - done : batch;
        while (n < want) {
            uint32_t got;
            const uint8_t *src = take_rows(cur, in_row, want - n, &got);
            for (uint64_t b = 0; b < (uint64_t)got * nb; b++)
                ember_gpu_block_put(p->type, src + b * fb, out + n * out_row + b * gb);
            n += got;
        }
        s = ember_vk_upload(vk, &p->data, (uint64_t)done * out_row, out, (size_t)(n * out_row), err);
        done += n;
    }
    ember_free(out);
    return s;
}

/* Fills one F32/F16 part: rows are copied as they are, a source run at a time. */
static ember_status upload_plain(ember_vk *vk, ember_gpu_weight_part *p, uint64_t row_bytes, src_cursor *cur,
                                 ember_err *err)
{
    ember_status s = EMBER_OK;
    for (uint32_t done = 0; s == EMBER_OK && done < p->n_rows;) {
        uint32_t got;
        const uint8_t *src = take_rows(cur, row_bytes, p->n_rows - done, &got);
        s = ember_vk_upload(vk, &p->data, done * row_bytes, src, got * row_bytes, err);
        done += got;
    }
    return s;
}

/* The texel formats of a weight's data and scales, or VK_FORMAT_UNDEFINED when the
 * device cannot read them as uniform texel buffers. */
static VkFormat data_format(const ember_vk_caps *c, ember_dtype t)
{
    if (t == EMBER_DTYPE_F32) return c->texel_rgba32f ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_UNDEFINED;
    return c->texel_rgba32ui ? VK_FORMAT_R32G32B32A32_UINT : VK_FORMAT_UNDEFINED;
}

/* The largest binding a part may use: the caller's bound, the device's storage range and
 * allocation size, 2 GiB so that shader indices stay within 32 bits, and (with views)
 * maxTexelBufferElements 16-byte texels. */
static uint64_t part_limit(const ember_vk_caps *caps, uint64_t max_part_bytes, bool views)
{
    uint64_t lim = caps->max_storage_range;
    if (max_part_bytes && max_part_bytes < lim) lim = max_part_bytes;
    if (caps->max_alloc && caps->max_alloc < lim) lim = caps->max_alloc;
    if (views && 16ull * caps->max_texel_elements < lim) lim = 16ull * caps->max_texel_elements;
    if (lim > (1ull << 31)) lim = 1ull << 31;
    return lim;
}

static ember_status check_type(ember_dtype type, uint32_t cols, ember_err *err)
{
    const ember_dtype_info *d = ember_dtype_find(type);
    if (!d || !d->gpu)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the Vulkan kernels do not read weight type %s",
                          ember_dtype_name(type));
    /* a block type's rows are whole units of 32 values of its shader (BF16 too) */
    if (cols == 0 || cols % (d->block > 1 || type == EMBER_DTYPE_BF16 ? 32 : 1) != 0)
        return ember_fail(err, EMBER_ERR_FORMAT, "weight rows of %u values do not fit type %s", cols,
                          ember_dtype_name(type));
    return EMBER_OK;
}

static ember_status check_args(const ember_dtype *types, uint32_t cols, const uint32_t *src_rows, uint32_t n_src,
                               uint64_t *rows, ember_err *err)
{
    *rows = 0;
    for (uint32_t i = 0; i < n_src; i++) {
        ember_status s = check_type(types[i], cols, err);
        if (s != EMBER_OK) return s;
        *rows += src_rows[i];
    }
    if (*rows == 0 || *rows > UINT32_MAX)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "weight of %llu rows", (unsigned long long)*rows);
    return EMBER_OK;
}

/* Appends the parts of `rows` rows of one type from row row0, of nearly equal size, so
 * that no dispatch is a tiny leftover. */
static ember_status plan_run(ember_gpu_weight *w, ember_dtype type, uint32_t row0, uint32_t rows, uint64_t limit,
                             uint32_t align, ember_err *err)
{
    uint64_t row_bytes = gpu_row_bytes(type, w->cols);
    /* Q8_0 rows of a few blocks have more bytes of (padded) scales than of quants. */
    if (type == EMBER_DTYPE_Q8_0 && q8_scale_row_bytes(w->cols) > row_bytes) row_bytes = q8_scale_row_bytes(w->cols);
    uint64_t max_units = limit / row_bytes / align, units = rows / align;
    if (max_units == 0)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s (%llu bytes) exceeds a binding of %llu bytes",
                          align > 1 ? "one expert's matrix" : "one weight row",
                          (unsigned long long)(row_bytes * align), (unsigned long long)limit);
    uint64_t n = (units + max_units - 1) / max_units;
    if (w->n_parts + n > EMBER_MAX_WEIGHT_PARTS)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "weight of %u x %u needs more than %d parts of %llu bytes",
                          w->rows, w->cols, EMBER_MAX_WEIGHT_PARTS, (unsigned long long)limit);
    for (uint32_t i = 0; i < n; i++) {
        ember_gpu_weight_part *p = &w->parts[w->n_parts++];
        p->type = type;
        p->row0 = row0;
        p->n_rows = ((uint32_t)(units / n) + (i < units % n)) * align;
        row0 += p->n_rows;
    }
    return EMBER_OK;
}

/* The parts of every run of sources of one type. */
static ember_status plan_parts(ember_gpu_weight *w, const ember_dtype *types, const uint32_t *src_rows,
                               uint32_t n_src, uint64_t limit, uint32_t align, ember_err *err)
{
    ember_status s = EMBER_OK;
    uint32_t row0 = 0;
    for (uint32_t i = 0, e; s == EMBER_OK && i < n_src; i = e) {
        uint32_t rows = 0;
        for (e = i; e < n_src && types[e] == types[i]; e++) rows += src_rows[e];
        s = plan_run(w, types[i], row0, rows, limit, align, err);
        row0 += rows;
        w->mixed |= types[i] != types[0];
    }
    return s;
}

/* Allocates a part's spans, with their texel views when the device reads its type so. */
static ember_status alloc_part(ember_vk *vk, ember_vk_arena *arena, uint32_t cols, ember_gpu_weight_part *p,
                               ember_err *err)
{
    VkFormat fmt = data_format(ember_vk_get_caps(vk), p->type);
    uint64_t bytes = round16((uint64_t)p->n_rows * gpu_row_bytes(p->type, cols));
    if (bytes < 16) bytes = 16; /* a texel view holds at least one texel */
    bool q8 = p->type == EMBER_DTYPE_Q8_0, views = fmt != VK_FORMAT_UNDEFINED;
    ember_status s = ember_vk_alloc(arena, bytes, EMBER_VK_MEM_DEVICE, &p->data, err);
    if (s == EMBER_OK && q8)
        s = ember_vk_alloc(arena, (uint64_t)p->n_rows * q8_scale_row_bytes(cols), EMBER_VK_MEM_DEVICE, &p->scales,
                           err);
    if (s == EMBER_OK && views) s = ember_vk_texel_view(arena, &p->data, fmt, err);
    if (s == EMBER_OK && views && q8) s = ember_vk_texel_view(arena, &p->scales, fmt, err);
    return s;
}

/* Whether the device reads parts of these types through texel views (the binding limit
 * then also counts texels). */
static bool any_views(ember_vk *vk, const ember_dtype *types, uint32_t n_src)
{
    bool views = false;
    for (uint32_t i = 0; i < n_src; i++) views |= data_format(ember_vk_get_caps(vk), types[i]) != VK_FORMAT_UNDEFINED;
    return views;
}

/* ember_gpu_weight_upload with parts cut at multiples of align rows. */
static ember_status upload(ember_vk *vk, ember_vk_arena *arena, const ember_dtype *types, uint32_t cols,
                           const void *const *src, const uint32_t *src_rows, uint32_t n_src, uint64_t max_part_bytes,
                           uint32_t align, ember_gpu_weight *out, ember_err *err)
{
    memset(out, 0, sizeof *out);
    uint64_t rows = 0;
    ember_status s = check_args(types, cols, src_rows, n_src, &rows, err);
    if (s != EMBER_OK) return s;
    out->type = types[0];
    out->rows = (uint32_t)rows;
    out->cols = cols;
    uint64_t limit = part_limit(ember_vk_get_caps(vk), max_part_bytes, any_views(vk, types, n_src));
    s = plan_parts(out, types, src_rows, n_src, limit, align, err);
    src_cursor cur = {src, src_rows, 0, 0};
    for (uint32_t i = 0; s == EMBER_OK && i < out->n_parts; i++) {
        ember_gpu_weight_part *p = &out->parts[i];
        s = alloc_part(vk, arena, cols, p, err);
        if (s != EMBER_OK) break;
        if (p->type == EMBER_DTYPE_Q8_0) s = upload_q8_0(vk, p, cols, &cur, err);
        else if (!ember_gpu_block_as_file(p->type)) s = upload_blocks(vk, p, cols, &cur, err);
        else s = upload_plain(vk, p, gguf_row_bytes(p->type, cols), &cur, err);
    }
    if (s != EMBER_OK) out->n_parts = 0;
    return s;
}

ember_status ember_gpu_weight_upload(ember_vk *vk, ember_vk_arena *arena, const ember_dtype *types,
                                     uint32_t cols, const void *const *src,
                                     const uint32_t *src_rows, uint32_t n_src,
                                     uint64_t max_part_bytes, ember_gpu_weight *out,
                                     ember_err *err)
{
    return upload(vk, arena, types, cols, src, src_rows, n_src, max_part_bytes, 1, out, err);
}

ember_status ember_gpu_weight_upload_experts(ember_vk *vk, ember_vk_arena *arena, ember_dtype type, uint32_t cols,
                                             const void *const *src, const uint32_t *src_rows, uint32_t n_src,
                                             uint32_t expert_rows, uint64_t max_part_bytes, ember_gpu_weight *out,
                                             ember_err *err)
{
    uint64_t rows = 0;
    for (uint32_t i = 0; i < n_src; i++) rows += src_rows[i];
    if (!expert_rows || rows % expert_rows)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "experts of %u rows in a weight of %llu", expert_rows,
                          (unsigned long long)rows);
    ember_dtype *types = ember_malloc(n_src * sizeof *types);
    if (!types) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n_src; i++) types[i] = type;
    ember_status s = upload(vk, arena, types, cols, src, src_rows, n_src, max_part_bytes, expert_rows, out, err);
    out->expert_rows = s == EMBER_OK ? expert_rows : 0;
    ember_free(types);
    return s;
}
