#version 450
// dot_f32.comp — the Q8_0 mat-vec's arithmetic as linear.comp does it today: int8 weights
// sign-extended to floats, times f32 x, products and sums rounded one by one (precise),
// a block's sum times its scale. One invocation per row (the probe measures instructions
// per weight, not the lane layout).
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint rows, cols; } pc;
layout(std430, binding = 0) readonly buffer W { uvec4 w[]; };      // rows x cols int8
layout(std430, binding = 1) readonly buffer S { float ws[]; };     // rows x cols/32 scales
layout(std430, binding = 2) readonly buffer X { vec4 x[]; };       // cols floats
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
vec4 i8x4(uint v) { return vec4(ivec4(int(v << 24), int(v << 16), int(v << 8), int(v)) >> 24); }
float dot4(vec4 a, vec4 b, float s)
{
    precise float r = s + a.x * b.x;
    r = r + a.y * b.y;
    r = r + a.z * b.z;
    r = r + a.w * b.w;
    return r;
}
void main()
{
    uint r = gl_GlobalInvocationID.x;
    if (r >= pc.rows) return;
    uint nb = pc.cols / 32u;
    float acc = 0.0;
    for (uint b = 0; b < nb; b++) {
        float s = 0.0;
        for (uint h = 0; h < 2u; h++) {
            uvec4 q = w[(r * nb + b) * 2u + h];
            uint x0 = b * 8u + h * 4u;
            s = dot4(i8x4(q.x), x[x0], s);
            s = dot4(i8x4(q.y), x[x0 + 1u], s);
            s = dot4(i8x4(q.z), x[x0 + 2u], s);
            s = dot4(i8x4(q.w), x[x0 + 3u], s);
        }
        precise float a = acc + ws[r * nb + b] * s;
        acc = a;
    }
    y[r] = acc;
}
