// legacy.glsl — what ggml's 32-value types Q4_0, Q4_1, Q5_0 and Q5_1 share: code j and
// j + 16 are the low and high nibbles of qs[j], with bit j and j + 16 of qh above them as
// a fifth bit (qh = 0 for the 4-bit types) (engine/model/quant_legacy.c).
#ifndef LEGACY_GLSL
#define LEGACY_GLSL
#include "../blocks.glsl"

// The 32 codes of a block whose qs start at byte qs.
void legacy_codes(bool hi, uint qs, uint qh, out uint c[32])
{
    for (uint k = 0u; k < 4u; k++) {
        uint q = blk_u32(hi, qs + 4u * k);
        for (uint i = 0u; i < 4u; i++) {
            uint j = 4u * k + i;
            c[j] = nib(q, 2u * i) | (((qh >> j) & 1u) << 4u);
            c[j + 16u] = nib(q, 2u * i + 1u) | (((qh >> (j + 16u)) & 1u) << 4u);
        }
    }
}
#endif
