/* kv_layout.c — the bytes of a KV cache row (kv_layout.h). */
#include <math.h>
#include <string.h>

#include "engine/model/floats.h"
#include "kv_layout.h"

bool ember_kv_type_known(ember_kv_type t)
{
    return t == EMBER_KV_F32 || t == EMBER_KV_Q8_0 || t == EMBER_KV_F16;
}

uint32_t ember_kv_q8_group(uint32_t head_dim)
{
    uint32_t low = head_dim & (~head_dim + 1u); /* lowest set bit */
    return low < 32 ? low : 32;
}

uint64_t ember_kv_token_bytes(uint32_t n_layers, uint32_t n_kv_heads, uint32_t head_dim, ember_kv_type type)
{
    return 2ull * n_layers * n_kv_heads * ember_kv_row_bytes(head_dim, type);
}

uint64_t ember_kv_row_bytes(uint32_t head_dim, ember_kv_type type)
{
    if (type == EMBER_KV_F16) return (uint64_t)head_dim * 2;
    if (type != EMBER_KV_Q8_0) return (uint64_t)head_dim * sizeof(float);
    uint32_t groups = head_dim / ember_kv_q8_group(head_dim);
    return head_dim + 4ull * ((groups + 1) / 2); /* quants, then f16 scales two per word */
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

void ember_kv_row_decode(ember_kv_type type, const uint8_t *row, uint32_t head_dim, float *out)
{
    if (type == EMBER_KV_F32) {
        memcpy(out, row, head_dim * sizeof *out); /* the hosts Ember runs on are little-endian */
        return;
    }
    if (type == EMBER_KV_F16) {
        for (uint32_t i = 0; i < head_dim; i++) out[i] = ember_f16_to_f32(get16(row + 2 * i));
        return;
    }
    uint32_t g = ember_kv_q8_group(head_dim);
    for (uint32_t i = 0; i < head_dim; i++)
        out[i] = (float)(int8_t)row[i] * ember_f16_to_f32(get16(row + head_dim + 2 * (i / g)));
}

void ember_kv_row_encode(ember_kv_type type, const float *in, uint32_t head_dim, uint8_t *row)
{
    if (type == EMBER_KV_F32) {
        memcpy(row, in, head_dim * sizeof *in);
        return;
    }
    if (type == EMBER_KV_F16) {
        for (uint32_t i = 0; i < head_dim; i++) put16(row + 2 * i, ember_f32_to_f16(in[i]));
        return;
    }
    uint32_t g = ember_kv_q8_group(head_dim), groups = head_dim / g;
    memset(row + head_dim, 0, ember_kv_row_bytes(head_dim, type) - head_dim); /* an odd count's half word */
    for (uint32_t k = 0; k < groups; k++) {
        float amax = 0;
        for (uint32_t e = 0; e < g; e++) amax = fmaxf(amax, fabsf(in[k * g + e]));
        uint16_t h = ember_f32_to_f16(amax / 127.0f);
        float d = ember_f16_to_f32(h), id = d > 0 ? 1 / d : 0;
        for (uint32_t e = 0; e < g; e++) {
            float q = roundf(in[k * g + e] * id);
            row[k * g + e] = (uint8_t)(int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
        }
        put16(row + head_dim + 2 * k, h);
    }
}
