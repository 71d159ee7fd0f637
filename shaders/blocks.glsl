// blocks.glsl — reading ggml's quantized blocks as they lie in a GGUF row: bytes,
// little-endian 16-bit fields and unaligned 32-bit runs, from 32-bit words. The includer
// defines BLK_WORD(i), word i of the weight binding, which may use a `bool hi` in scope
// (linear.comp reads two bindings, w0 and w1). Offsets are in bytes; blocks are laid end
// to end, so a field may sit at any even offset (Q6_K's 210-byte blocks) or any offset
// (bytes). Every type's decoder (shaders/types/*.glsl) reads through these.
#ifndef BLOCKS_GLSL
#define BLOCKS_GLSL

// Four bytes from off, any alignment, the byte at off lowest.
uint blk_u32(bool hi, uint off)
{
    uint i = off >> 2u, s = (off & 3u) * 8u;
    uint a = BLK_WORD(i);
    return s == 0u ? a : (a >> s) | (BLK_WORD(i + 1u) << (32u - s));
}

uint blk_u8(bool hi, uint off) { return (BLK_WORD(off >> 2u) >> ((off & 3u) * 8u)) & 0xffu; }

// A 16-bit field at an even offset (never across two words).
uint blk_u16(bool hi, uint off) { return (BLK_WORD(off >> 2u) >> ((off & 2u) * 8u)) & 0xffffu; }

float blk_f16(bool hi, uint off) { return unpackHalf2x16(blk_u16(hi, off)).x; }

// Nibble k (0..7) of a word: the low nibble of its byte k/2 for even k.
uint nib(uint w, uint k) { return (w >> (4u * k)) & 15u; }

#endif
