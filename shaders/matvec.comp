#version 450
// matvec.comp — y = W x for a few tokens (NT, exactly n_tok). A row tile of ROWS rows is
// owned by one group of lanes (a subgroup, or LANES invocations in the baseline); each
// lane walks the row with wide loads, UNROLL units per iteration, reusing every x load
// for all ROWS rows and every weight load for all NT tokens; partial sums are then
// reduced across the group (subgroupAdd, or shared memory in the baseline).
//
// Defines: DT_F32 | DT_F16 | DT_Q8, SUBGROUP. Needs cols % UNIT == 0 (UNIT = 4, 8, 32
// columns for F32, F16, Q8_0); the host uses matmul.comp's GENERIC variant otherwise.
#extension GL_EXT_control_flow_attributes : require
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 8;    // rows per tile (even)
layout(constant_id = 2) const uint NT = 1;      // tokens
layout(constant_id = 3) const uint NG = 8;      // row tiles per workgroup
layout(constant_id = 4) const uint UNROLL = 2;  // units per lane per iteration
layout(constant_id = 5) const uint LANES = 16;  // baseline only: lanes per tile

#define Q8_XV 8
#include "linear.glsl"

const uint HR = ROWS / 2;

float acc[ROWS][NT];
uint base[ROWS];
uint sbase[ROWS];

#ifndef SUBGROUP
shared float red[gl_WorkGroupSize.x * ROWS * NT];
#endif

void unit(uint i)
{
    uint xrow = pc.cols / 4u;
    vec4 xv[NT][XV];
    [[unroll]] for (uint t = 0; t < NT; t++)
        [[unroll]] for (uint v = 0; v < XV; v++)
            xv[t][v] = x4[t * xrow + i * XV + v];
    [[unroll]] for (uint r = 0; r < ROWS; r++) {
        vec4 wv[XV];
        float sc;
        if (r < HR) load_w0(base[r], sbase[r], i, wv, sc);
        else load_w1(base[r], sbase[r], i, wv, sc);
        [[unroll]] for (uint t = 0; t < NT; t++) {
            float s = 0.0;
            [[unroll]] for (uint v = 0; v < XV; v++) s += dot(wv[v], xv[t][v]);
#ifdef DT_Q8
            acc[r][t] += s * sc;
#else
            acc[r][t] += s;
#endif
        }
    }
}

// Accumulates this lane's share of tile g into acc.
void tile_partial(uint g, uint lane, uint lanes)
{
    uint units = pc.cols / UNIT;
    [[unroll]] for (uint r = 0; r < ROWS; r++) {
        uint row = tile_row(g, r, HR);
        base[r] = row * (pc.cols / WPE);
        sbase[r] = row * (pc.cols / 32u);
        [[unroll]] for (uint t = 0; t < NT; t++) acc[r][t] = 0.0;
    }
    uint i = lane;
    for (; i + (UNROLL - 1u) * lanes < units; i += UNROLL * lanes)
        [[unroll]] for (uint u = 0; u < UNROLL; u++) unit(i + u * lanes);
    for (; i < units; i += lanes) unit(i);
}

// Writes the reduced tile g (acc holds full sums).
void tile_store(uint g)
{
    uint j0 = g * pc.step;
    [[unroll]] for (uint t = 0; t < NT; t++) {
        if (pc.mode == MODE_SWIGLU) {
            [[unroll]] for (uint r = 0; r < HR; r++)
                if (j0 + r < pc.n_out) store_out(t, j0 + r, silu(acc[r][t]) * acc[r + HR][t]);
        } else {
            [[unroll]] for (uint r = 0; r < ROWS; r++)
                if (j0 + r < pc.n_out) store_out(t, j0 + r, acc[r][t]);
        }
    }
}

void main()
{
    uint wg = gl_WorkGroupID.z * pc.wgx + gl_WorkGroupID.x;
#ifdef SUBGROUP
    // Tiles are spread over however many subgroups the driver made, so a subgroup size
    // other than the one the host assumed is still correct.
    for (uint k = gl_SubgroupID; k < NG; k += gl_NumSubgroups) {
        uint g = wg * NG + k;
        if (g * pc.step >= pc.n_out) break;
        tile_partial(g, gl_SubgroupInvocationID, gl_SubgroupSize);
        [[unroll]] for (uint r = 0; r < ROWS; r++)
            [[unroll]] for (uint t = 0; t < NT; t++) acc[r][t] = subgroupAdd(acc[r][t]);
        if (subgroupElect()) tile_store(g);
    }
#else
    // Every invocation reaches the barrier: tiles past the end compute clamped rows and
    // store nothing.
    uint lid = gl_LocalInvocationID.x;
    uint lane = lid % LANES, g = wg * NG + lid / LANES;
    tile_partial(g, lane, LANES);
    uint nv = ROWS * NT;
    [[unroll]] for (uint r = 0; r < ROWS; r++)
        [[unroll]] for (uint t = 0; t < NT; t++) red[lid * nv + r * NT + t] = acc[r][t];
    barrier();
    if (lane == 0u) {
        [[unroll]] for (uint r = 0; r < ROWS; r++)
            [[unroll]] for (uint t = 0; t < NT; t++) {
                float s = 0.0;
                for (uint l = 0; l < LANES; l++) s += red[(lid + l) * nv + r * NT + t];
                acc[r][t] = s;
            }
        tile_store(g);
    }
#endif
}
