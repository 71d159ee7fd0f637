#version 450
// dot_q4_i8.comp — the same product with 4-bit weights (a Q4_0-like layout: 32 unsigned
// codes a block, two per byte, low nibbles the first 16 values; value = d * (code - 8))
// and x quantized to int8 per block: the nibbles masked out of a word four at a time and
// multiplied by signed x with mixed-signedness packed dot products (OpSUDot), the -8
// folded in through the block's sum of x. What Q4_K's int8 path would cost, without its
// scale unpacking.
#extension GL_EXT_spirv_intrinsics : require
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint rows, cols; } pc;
layout(std430, binding = 0) readonly buffer W { uvec4 w[]; };      // rows x cols/2 bytes
layout(std430, binding = 1) readonly buffer S { float ws[]; };
layout(std430, binding = 2) readonly buffer X { uvec4 xq[]; };     // cols int8
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) readonly buffer XS { float xs[]; };    // cols/32 scales
layout(std430, binding = 5) readonly buffer XSUM { int xsum[]; };  // cols/32 sums of x's codes
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int sudot(uint signed_a, uint unsigned_b, spirv_literal int packed_4x8);
void main()
{
    uint r = gl_GlobalInvocationID.x;
    if (r >= pc.rows) return;
    uint nb = pc.cols / 32u;
    float acc = 0.0;
    for (uint b = 0; b < nb; b++) {
        uvec4 q = w[r * nb + b], lo = q & 0x0F0F0F0Fu, hi = (q >> 4) & 0x0F0F0F0Fu;
        uvec4 x0 = xq[b * 2u], x1 = xq[b * 2u + 1u];
        int s = sudot(x0.x, lo.x, 0) + sudot(x0.y, lo.y, 0) + sudot(x0.z, lo.z, 0) + sudot(x0.w, lo.w, 0) +
                sudot(x1.x, hi.x, 0) + sudot(x1.y, hi.y, 0) + sudot(x1.z, hi.z, 0) + sudot(x1.w, hi.w, 0);
        s -= 8 * xsum[b];
        precise float a = acc + ws[r * nb + b] * xs[b] * float(s);
        acc = a;
    }
    y[r] = acc;
}
