/* kv_layout.c — the bytes of a KV cache row (kv_layout.h). */
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
