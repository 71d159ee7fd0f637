#version 450
// matmul.comp — y = W x for many tokens. Each invocation computes a tile of TN rows x TM
// tokens in registers, reading every weight unit once for TM tokens and every x unit once
// for TN rows; no shared-memory tiling (measured best on lavapipe, see DESIGN.md; shared
// memory and barriers are slow there). Invocations along x take consecutive row tiles,
// workgroups along y take token tiles.
//
// Defines: DT_F32 | DT_F16 | DT_Q8 (half-block units) | GENERIC (F32/F16, any cols,
// scalar loads: the path for cols not a multiple of 4 (F32) or 8 (F16)).
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TN = 8;   // rows per invocation (even)
layout(constant_id = 2) const uint TM = 8;   // tokens per invocation

#define Q8_XV 4
#include "linear.glsl"

const uint HR = TN / 2;

float acc[TN][TM];
uint base[TN];
uint sbase[TN];
uint xbase[TM];

#ifdef GENERIC
float w_at(uint r, uint c)
{
#ifdef DT_F32
    return r < HR ? w0[base[r] + c] : w1[base[r] + c];
#else
    return r < HR ? HALF_AT(w0, base[r] + c) : HALF_AT(w1, base[r] + c);
#endif
}

void unit(uint c)
{
    float xs[TM];
    [[unroll]] for (uint t = 0; t < TM; t++) xs[t] = x1[xbase[t] + c];
    [[unroll]] for (uint r = 0; r < TN; r++) {
        float w = w_at(r, c);
        [[unroll]] for (uint t = 0; t < TM; t++) acc[r][t] += w * xs[t];
    }
}
#else
void unit(uint i)
{
    vec4 xv[TM][XV];
    [[unroll]] for (uint t = 0; t < TM; t++)
        [[unroll]] for (uint v = 0; v < XV; v++) xv[t][v] = x4[xbase[t] + i * XV + v];
    [[unroll]] for (uint r = 0; r < TN; r++) {
        vec4 wv[XV];
        float sc;
        if (r < HR) load_w0(base[r], sbase[r], i, wv, sc);
        else load_w1(base[r], sbase[r], i, wv, sc);
#ifdef DT_Q8
        [[unroll]] for (uint v = 0; v < XV; v++) wv[v] *= sc;
#endif
        [[unroll]] for (uint t = 0; t < TM; t++) {
            float s = 0.0;
            [[unroll]] for (uint v = 0; v < XV; v++) s += dot(wv[v], xv[t][v]);
            acc[r][t] += s;
        }
    }
}
#endif

void main()
{
    uint g = (gl_WorkGroupID.z * pc.wgx + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
             gl_LocalInvocationID.x;
    uint tok0 = gl_WorkGroupID.y * TM;
    if (g * pc.step >= pc.n_out) return;

#ifdef GENERIC
    uint xrow = pc.cols;
#else
    uint xrow = pc.cols / 4u;
#endif
    // Tokens past n_tok load the last token and are not stored.
    [[unroll]] for (uint t = 0; t < TM; t++) xbase[t] = min(tok0 + t, pc.n_tok - 1u) * xrow;
    [[unroll]] for (uint r = 0; r < TN; r++) {
        uint row = tile_row(g, r, HR);
        base[r] = row * (pc.cols / WPE);
        sbase[r] = row * (pc.cols / 32u);
        [[unroll]] for (uint t = 0; t < TM; t++) acc[r][t] = 0.0;
    }

    uint units = pc.cols / UNIT;
    for (uint i = 0; i < units; i++) unit(i);

    uint j0 = g * pc.step;
    [[unroll]] for (uint t = 0; t < TM; t++) {
        if (tok0 + t >= pc.n_tok) break;
        if (pc.mode == MODE_SWIGLU) {
            [[unroll]] for (uint r = 0; r < HR; r++)
                if (j0 + r < pc.n_out) store_out(tok0 + t, j0 + r, silu(acc[r][t]) * acc[r + HR][t]);
        } else {
            [[unroll]] for (uint r = 0; r < TN; r++)
                if (j0 + r < pc.n_out) store_out(tok0 + t, j0 + r, acc[r][t]);
        }
    }
}
