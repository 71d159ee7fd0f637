// blocks.glsl — reading ggml's quantized blocks as they lie in a GGUF row, and the form
// every type's decoder gives a unit in. The includer defines BLK_WORD(i), word i of the
// weight binding, and BLK_VEC4(i), its 16-byte element i; both may use a `bool hi` in
// scope (linear.comp reads two bindings, w0 and w1). Offsets are in bytes. Blocks lie end
// to end, so some types' fields sit at any even offset (Q4_0's 18-byte blocks); those are
// read with blk_u32. Q3_K to Q6_K are laid out at upload (engine/gpu/gpu_block.c) so that
// a unit's codes are whole 16-byte elements.
//
// A unit is 32 values; its decoder gives them in codes form: value j = a[h] * q[j] + b[h]
// with h = j / 16, q in 8 vec4 (q[k] holds values 4k..4k+3). For every type this is
// ggml's dequantize, operation for operation (a product, then a sum): a decoded weight
// is blk_value(...), bit for bit the C codec's (b = -0.0 where ggml adds nothing: x +
// -0.0 is x for every x, +0.0 and -0.0 included). linear.comp uses the form to sum
// q[j] * x[j] first and scale once per half unit.
//
// For linear.comp a type may add two things (docs/kernels.md, "Runs and codes in place"):
// - Runs: when consecutive units share a header (a K-quant's d and scales), BLK_RUN (the
//   units of a run, 4), BLK_HEAD_T, BLK_HEAD(hi, row, u, n) (the header of units u ..
//   u + n - 1 of one run; n a constant) and BLK_CODES_H(hi, row, u, h, q, a, b)
//   (BLK_CODES given the header). A partial then takes whole runs, and the mat-vec reads
//   a header once a run and row instead of once a unit: on lavapipe a texel fetch is the
//   costliest operation of a unit.
// - Codes in place (BLK_IN_PLACE): BLK_CODES_H gives code j of byte position k (j % 4)
//   times 2^(8k), masked where it lies instead of shifted down, and the kernel multiplies
//   x by BLK_IN_PLACE_X, so that the product is the same (power-of-two scalings are exact
//   while x * 2^-24 stays a normal float: |x| >= 2^-102) for fewer operations a weight.
#ifndef BLOCKS_GLSL
#define BLOCKS_GLSL

// Four bytes from off, any alignment, the byte at off lowest.
uint blk_u32(bool hi, uint off)
{
    uint i = off >> 2u, s = (off & 3u) * 8u;
    uint a = BLK_WORD(i);
    return s == 0u ? a : (a >> s) | (BLK_WORD(i + 1u) << (32u - s));
}

// The word at a 4-aligned off.
uint blk_w(bool hi, uint off) { return BLK_WORD(off >> 2u); }

// The 16 bytes at a 16-aligned off.
uvec4 blk_v4(bool hi, uint off) { return BLK_VEC4(off >> 4u); }

// A block of 17 to 24 bytes at an even off, read with the two or three 16-byte elements
// it lies in instead of a load or two per word: R = the seven words from off & ~3;
// span_u32 takes fields out of it. size: the block's bytes, align: its offsets' (2, 4 or
// 8); constants at each call, so that a block that always lies in two elements (at most
// 16 + align bytes) never loads a third, and one that can (Q5_0) loads it only if it does.
void blk_span(bool hi, uint off, uint size, uint align, out uint R[7])
{
    uint e = off & ~15u, j = (off >> 2u) & 3u;
    uvec4 e0 = blk_v4(hi, e), e1 = blk_v4(hi, e + 16u), e2 = uvec4(0u);
    if (size > 16u + align && (off & 15u) + size > 32u) e2 = blk_v4(hi, e + 32u);
    uint W[12] = uint[12](e0.x, e0.y, e0.z, e0.w, e1.x, e1.y, e1.z, e1.w, e2.x, e2.y, e2.z, e2.w), V[10];
    for (uint i = 0u; i < 10u; i++) V[i] = (j & 1u) != 0u ? W[i + 1u] : W[i];
    for (uint i = 0u; i < 7u; i++) R[i] = (j & 2u) != 0u ? V[i + 2u] : V[i];
}

// The 4 bytes at byte c (even; a constant) of a block read by blk_span (sh: off & 2).
uint span_u32(uint R[7], uint sh, uint c)
{
    uint lo = c >> 2u, next = R[min(lo + 1u, 6u)];
    uint whole = (c & 2u) == 0u ? R[lo] : next, mid = (R[lo] >> 16u) | (next << 16u);
    return (c & 2u) == sh ? whole : mid;
}

// The 16 bytes at an 8-aligned off (a second load only when off is not 16-aligned).
uvec4 blk_v4_8(bool hi, uint off)
{
    uvec4 e = blk_v4(hi, off & ~15u);
    if ((off & 8u) != 0u) e = uvec4(e.zw, blk_v4(hi, off + 8u).xy);
    return e;
}

uint blk_u8(bool hi, uint off) { return (BLK_WORD(off >> 2u) >> ((off & 3u) * 8u)) & 0xffu; }

// A 16-bit field at an even offset (never across two words).
uint blk_u16(bool hi, uint off) { return (BLK_WORD(off >> 2u) >> ((off & 2u) * 8u)) & 0xffffu; }

float blk_f16(bool hi, uint off) { return unpackHalf2x16(blk_u16(hi, off)).x; }

// The field at bit `shift` of each byte of w (mask: its width), byte k in component k.
uvec4 field4(uint w, uint shift, uint mask) { return (uvec4(w) >> (uvec4(0u, 8u, 16u, 24u) + shift)) & mask; }

// The int8 levels of 4 codes n (0..15), as floats: L holds the 16 levels four to a word
// (code 4i + k: byte k of L[i]), picked with selects: an array indexed per lane became a
// gather from memory on lavapipe and made the 4-bit non-linear types ten times slower.
vec4 blk_levels(uvec4 n, uvec4 L)
{
    uvec4 lo = mix(uvec4(L.x), uvec4(L.y), greaterThan(n, uvec4(3u)));
    uvec4 up = mix(uvec4(L.z), uvec4(L.w), greaterThan(n, uvec4(11u)));
    uvec4 w = mix(lo, up, greaterThan(n, uvec4(7u)));
    return vec4(ivec4(w << (24u - 8u * (n & 3u))) >> 24);
}

// Bits j .. j+3 of w, one a component.
uvec4 bits4(uint w, uint j) { return (uvec4(w) >> (uvec4(0u, 1u, 2u, 3u) + j)) & 1u; }

// The 2-bit fields at bits j, j+2, j+4, j+6 of w, one a component.
uvec4 crumbs4(uint w, uint j) { return (uvec4(w) >> (uvec4(0u, 2u, 4u, 6u) + j)) & 3u; }

// The levels L (as blk_levels) of the 32 codes of 16 bytes w (byte i: code i | code
// i + 16 << 4, as Q4_0's nibbles).
void blk_level_codes(uvec4 w, uvec4 L, out vec4 q[8])
{
    for (uint k = 0u; k < 4u; k++) {
        q[k] = blk_levels(field4(w[k], 0u, 15u), L);
        q[k + 4u] = blk_levels(field4(w[k], 4u, 15u), L);
    }
}

// Codes in place: the field `mask` at bit 0 of each byte of w where it lies, byte k's
// times 2^(8k) (exact in a float: at most 8 significant bits).
vec4 bytes_in_place(uint w, uint mask) { return vec4(ivec4(uvec4(w) & (uvec4(1u, 0x100u, 0x10000u, 0x1000000u) * mask))); }
vec4 nibbles_in_place(uint w) { return bytes_in_place(w, 15u); }
const vec4 BLK_IN_PLACE_X = vec4(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0 / 16777216.0);

// Decoded value j of a unit in codes form.
float blk_value(vec4 q[8], vec2 a, vec2 b, uint j)
{
    uint h = j >> 4u;
    precise float y = a[h] * q[j >> 2u][j & 3u] + b[h];
    return y;
}

#endif
