// legacy.glsl — what ggml's 32-value types Q4_0, Q4_1, Q5_0 and Q5_1 share: code j and
// j + 16 are the low and high nibbles of qs[j], with bit j and j + 16 of qh above them as
// a fifth bit (qh = 0 for the 4-bit types) (engine/model/quant_legacy.c).
#ifndef LEGACY_GLSL
#define LEGACY_GLSL
#include "../blocks.glsl"

// The 32 codes of a block whose qs are the words w (qs[4k .. 4k + 3] in w[k]), less
// offset.
void legacy_codes(uint w[4], uint qh, int offset, out vec4 q[8])
{
    for (uint k = 0u; k < 4u; k++) {
        q[k] = vec4(ivec4(field4(w[k], 0u, 15u) | (bits4(qh, 4u * k) << 4u)) - offset);
        q[k + 4u] = vec4(ivec4(field4(w[k], 4u, 15u) | (bits4(qh, 16u + 4u * k) << 4u)) - offset);
    }
}
// The words of 16 bytes of a block read by blk_span, from byte c.
void span_words(uint R[7], uint sh, uint c, out uint w[4])
{
    for (uint k = 0u; k < 4u; k++) w[k] = span_u32(R, sh, c + 4u * k);
}

#endif
