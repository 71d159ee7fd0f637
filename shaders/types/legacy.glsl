// legacy.glsl — what ggml's 32-value types Q4_0, Q4_1, Q5_0 and Q5_1 share: code j and
// j + 16 are the low and high nibbles of qs[j], with bit j and j + 16 of qh above them as
// a fifth bit (qh = 0 for the 4-bit types) (engine/model/quant_legacy.c).
#ifndef LEGACY_GLSL
#define LEGACY_GLSL
#include "../blocks.glsl"

// The legacy block at b (size bytes at offsets aligned to align; constants): its 32
// codes less offset, with the 16 bytes of qs at byte qs and the fifth bits' word at byte
// qh (0: none, the 4-bit types), and its first four bytes as two halves (d, and m for
// Q4_1 and Q5_1). Two or three 16-byte loads (blk_span).
void legacy_block(bool hi, uint b, uint size, uint align, uint qs, uint qh, int offset, out vec4 q[8],
                  out vec2 dm)
{
    uint R[7], sh = b & 2u;
    blk_span(hi, b, size, align, R);
    uint fifth = qh != 0u ? span_u32(R, sh, qh) : 0u;
    for (uint k = 0u; k < 4u; k++) {
        uint w = span_u32(R, sh, qs + 4u * k);
        q[k] = vec4(ivec4(field4(w, 0u, 15u) | (bits4(fifth, 4u * k) << 4u)) - offset);
        q[k + 4u] = vec4(ivec4(field4(w, 4u, 15u) | (bits4(fifth, 16u + 4u * k) << 4u)) - offset);
    }
    dm = unpackHalf2x16(span_u32(R, sh, 0u));
}

#endif
