#version 450
// dot_i8.comp — the same product with x quantized to int8 per block of 32 (as llama.cpp's
// q8_1 activations): packed 4x8 integer dot products (OpSDot, SPV_KHR_integer_dot_
// product, through GL_EXT_spirv_intrinsics: Debian 12's glslang has no
// GL_EXT_integer_dot_product), an exact int32 sum per block, then one float multiply-add
// by the two scales.
#extension GL_EXT_spirv_intrinsics : require
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint rows, cols; } pc;
layout(std430, binding = 0) readonly buffer W { uvec4 w[]; };
layout(std430, binding = 1) readonly buffer S { float ws[]; };
layout(std430, binding = 2) readonly buffer X { uvec4 xq[]; };     // cols int8
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) readonly buffer XS { float xs[]; };    // cols/32 scales
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot(uint a, uint b, spirv_literal int packed_4x8);
void main()
{
    uint r = gl_GlobalInvocationID.x;
    if (r >= pc.rows) return;
    uint nb = pc.cols / 32u;
    float acc = 0.0;
    for (uint b = 0; b < nb; b++) {
        int s = 0;
        for (uint h = 0; h < 2u; h++) {
            uvec4 q = w[(r * nb + b) * 2u + h], v = xq[b * 2u + h];
            s += sdot(q.x, v.x, 0) + sdot(q.y, v.y, 0) + sdot(q.z, v.z, 0) + sdot(q.w, v.w, 0);
        }
        precise float a = acc + ws[r * nb + b] * xs[b] * float(s);
        acc = a;
    }
    y[r] = acc;
}
