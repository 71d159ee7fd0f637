// tile.glsl — what the tile probes share (probe.c, "tile" kernels): linear.comp's decode
// layout, a workgroup of 8 lanes owning 16 rows, lane p taking the 32-value blocks p,
// p+8, ... of every row, so each x block is loaded (and, with int8 x, quantized) once per
// lane and used for 16 rows; the 8 partials of a row are summed through shared memory.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 8) in;
layout(push_constant) uniform Push { uint rows, cols; } pc;
layout(std430, binding = 0) readonly buffer W { uvec4 w[]; };      // rows x cols int8
layout(std430, binding = 1) readonly buffer S { float ws[]; };     // rows x cols/32 scales
layout(std430, binding = 2) readonly buffer X { vec4 x[]; };       // cols floats
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
const uint TN = 16u;
shared float part[TN][8];

void store_rows(uint r0, uint p, float acc[TN])
{
    for (uint r = 0; r < TN; r++) part[r][p] = acc[r];
    barrier();
    for (uint r = p; r < TN; r += 8u) {
        float s = 0.0;
        for (uint q = 0; q < 8u; q++) s += part[r][q];
        if (r0 + r < pc.rows) y[r0 + r] = s;
    }
}
