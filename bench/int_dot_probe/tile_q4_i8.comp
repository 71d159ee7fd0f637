#version 450
// tile_q4_i8.comp — the same 4-bit unit with x quantized to int8 in the kernel: masked
// nibbles against the packed x with mixed-signedness dot products (OpSUDot), the -8
// through the block's integer x sum.
#extension GL_EXT_spirv_intrinsics : require
#include "tile.glsl"
layout(std430, binding = 4) readonly buffer W4 { uvec4 w4[]; };
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int sudot(uint signed_a, uint unsigned_b, spirv_literal int packed_4x8);
void main()
{
    uint p = gl_LocalInvocationID.x, r0 = gl_WorkGroupID.x * TN, nb = pc.cols / 32u;
    float acc[TN];
    for (uint r = 0; r < TN; r++) acc[r] = 0.0;
    for (uint b = p; b < nb; b += 8u) {
        vec4 xv[8];
        float amax = 0.0;
        for (uint v = 0; v < 8u; v++) {
            xv[v] = x[b * 8u + v];
            vec4 a = abs(xv[v]);
            amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
        }
        float dx = amax / 127.0, inv = amax > 0.0 ? 127.0 / amax : 0.0;
        uint xq[8];
        int xs = 0;
        for (uint v = 0; v < 8u; v++) {
            ivec4 q = ivec4(roundEven(xv[v] * inv));
            xs += q.x + q.y + q.z + q.w;
            q &= 255;
            xq[v] = uint(q.x | q.y << 8 | q.z << 16 | q.w << 24);
        }
        [[dont_unroll]] for (uint r = 0; r < TN; r++) {
            uint row = min(r0 + r, pc.rows - 1u);
            uvec4 q = w4[row * nb + b], lo = q & 0x0F0F0F0Fu, hi = (q >> 4) & 0x0F0F0F0Fu;
            int s = sudot(xq[0], lo.x, 0) + sudot(xq[1], lo.y, 0) + sudot(xq[2], lo.z, 0) + sudot(xq[3], lo.w, 0) +
                    sudot(xq[4], hi.x, 0) + sudot(xq[5], hi.y, 0) + sudot(xq[6], hi.z, 0) + sudot(xq[7], hi.w, 0) -
                    8 * xs;
            precise float a = acc[r] + ws[row * nb + b] * dx * float(s);
            acc[r] = a;
        }
    }
    store_rows(r0, p, acc);
}
