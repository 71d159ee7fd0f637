#version 450
// linear.comp — y = W x for n_tok rows of x, every shape from the decode mat-vec to the
// prefill mat-mat. A tile is TN = 8*RPL rows x TM tokens, owned by a group of NPART lanes
// (8, 16, 32 or 64); lane p accumulates partial p (units p, p+NPART, ...) of all TN*TM
// outputs in registers, so every weight load serves TM tokens and every x load TN rows,
// and the lanes of a group read consecutive units of a row; the partials are then
// combined in the fixed order of linear.glsl and the lanes store the tile together. A workgroup holds NG tiles
// (consecutive row tiles) and loops over its tpw tokens TM at a time, so the weights of
// its rows are read from memory once and from cache for the other token groups (a decode
// batch costs about one weight read); workgroups along y take further token ranges. The host picks TM, NG, UNROLL and tpw: none of them changes the bits of
// an output (see linear.glsl).
//
// MOE: the grouped expert product (linear.glsl): workgroups along y are experts, each
// over the (token, slot) pairs that chose it.
// Defines: DT_F32 | DT_F16 | DT_Q8 | DT_BLOCK + BLK_<type>, TEXEL, GENERIC, SUBGROUP, MOE,
// INT_DOT (DT_Q8 and DT_BLOCK; see linear.glsl), FP16_DOT (DT_F16 and DT_Q8: fp16
// arithmetic inside a unit). Needs cols % UNIT == 0; the host uses GENERIC (UNIT 1) for F32/F16 rows
// that are not.
#extension GL_EXT_control_flow_attributes : require
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#ifdef INT_DOT
#extension GL_EXT_spirv_intrinsics : require
#endif
#ifdef FP16_DOT
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

layout(local_size_x_id = 0) in;                 // NG * NPART (NPART: constant 6, linear.glsl)
layout(constant_id = 1) const uint RPL = 1;     // rows per lane at the end: 1 or 2
layout(constant_id = 2) const uint TM = 1;      // tokens per tile
layout(constant_id = 3) const uint NG = 1;      // tiles per workgroup
layout(constant_id = 4) const uint UNROLL = 2;  // units per lane per loop iteration
layout(constant_id = 5) const uint NORM = 0;    // 1: x is RMS-normalised as it is read
layout(constant_id = 7) const uint STAGE = 0;   // 1: the workgroup stages x in shared memory

#include "linear.glsl"

const uint TN = 8u * RPL;  // rows per tile
const uint HR = TN / 2;
// The subgroup combine (combine_group) reduces GR rows at a time, NGRP groups; S lanes
// end up with each row.
const uint GR = TN < NPART ? TN : NPART;
const uint NGRP = TN / GR;
const uint S = NPART / GR;

#if defined(DT_BLOCK) && !defined(BLK_RUN)  // a type without runs: one unit each, no header of its own
#define BLK_RUN 1u
#define BLK_HEAD_T uint
#define BLK_HEAD(hi, row, u, n) 0u
#define BLK_CODES_H(hi, row, u, h, q, a, b) BLK_CODES(hi, row, u, q, a, b)
#endif

// Elements of a weight binding per row (WPE columns each), and floats per x element.
#if defined(GENERIC)
#define WPE 1u
#define XPE 1u
#elif defined(DT_BLOCK)
#define XPE 4u
#elif defined(DT_F32)
#define WPE 4u
#define XPE 4u
#elif defined(DT_F16)
#define WPE 8u
#define XPE 4u
#else
#define WPE 16u
#define XPE 4u
#endif

float acc[TN][TM];  // this lane's partial of each output, then the combined sums
uint base[TN];      // first weight element of each tile row (DT_BLOCK: its first byte)
uint sbase[TN];     // Q8_0: the first scales texel of this lane's list of each tile row
uvec4 sq[TN];       // Q8_0: this lane's scales of 8 blocks of each tile row
uint xb[TM];        // first x element of each tile token
float rn[TM];       // NORM: 1 / sqrt(mean(x^2) + eps) of each tile token

#ifdef DT_BLOCK
// Units whose x a lane holds at once: a whole run in the mat-vec (each row's header read
// once a run, x once for all rows), one unit in a mat-mat tile, where TM tokens of a
// run's x would not fit in registers (the header is then read once a unit and row). The
// arithmetic of an output is the same either way.
#ifdef INT_DOT
const uint SPAN = 1u;  // int_unit: a unit at a time, its header read with it
#else
const uint SPAN = TM == 1u ? BLK_RUN : 1u;
#endif
const uint PIECES = BLK_RUN / SPAN;  // spans a run
const uint PV = SPAN * 8u;           // x vec4s of a span
#elif !defined(GENERIC)
const uint PIECES = 1u;
const uint PV = XV;
#endif

#if !defined(GENERIC)
// Vec4 c of tile token t's x row; NORM: RMS-normalised, (x * rn) * g as rmsnorm.comp
// writes it (the fused RMSNorm: no dispatch of its own, no xn buffer).
vec4 xrow4_mem(uint t, uint c)
{
    vec4 v = x4(xb[t] + c);
    if (NORM == 0u) return v;
    precise vec4 r = (v * rn[t]) * g4[c];
    return r;
}

// STAGE: the x (normalised if NORM) of the piece each lane of a group takes next, for the
// tile's TM tokens, loaded once by the whole workgroup for its NG tiles (stage_x):
// xs[(t * PV + v) * NPART + p] is vec4 v of lane p's piece, so that the lanes of a group
// read consecutive vec4s. The piece of lane `xslot` starts at x vec4 xc0.
shared vec4 xs[STAGE * (NPART * TM * PV - 1u) + 1u];
uint xslot, xc0;

vec4 xrow4(uint t, uint c)
{
    if (STAGE != 0u) return xs[(t * PV + (c - xc0)) * NPART + xslot];
    return xrow4_mem(t, c);
}
#endif

#if defined(GENERIC)
void unit(uint u)
{
    float xs[TM];
    [[unroll]] for (uint t = 0; t < TM; t++) xs[t] = x1[xb[t] + u];
    [[unroll]] for (uint r = 0; r < TN; r++) {
        float w = r < HR ? W_AT(w0, base[r] + u) : W_AT(w1, base[r] + u);
        [[unroll]] for (uint t = 0; t < TM; t++) acc[r][t] = mul_add(w, xs[t], acc[r][t]);
    }
}
#elif defined(DT_BLOCK)

// Tile row r (read from w1 when hi) of units u0 .. u0 + SPAN - 1 (one run's): per unit,
// token and half s = sum q*x in column order, then acc + ((a0*s0 + b0*sx0) + (a1*s1 + b1*sx1)).
void span_row(bool hi, uint r, uint u0, vec4 xv[SPAN][TM][8], float sx[SPAN][TM][2])
{
    BLK_HEAD_T h = BLK_HEAD(hi, base[r], u0, SPAN);
    [[unroll]] for (uint i = 0; i < SPAN; i++) {
        vec4 q[8];
        vec2 a, b;
        BLK_CODES_H(hi, base[r], u0 + i, h, q, a, b);
        [[unroll]] for (uint t = 0; t < TM; t++) {
            float s0 = 0.0, s1 = 0.0;
            [[unroll]] for (uint v = 0; v < 4u; v++) {
                s0 = dot4(q[v], xv[i][t][v], s0);
                s1 = dot4(q[4u + v], xv[i][t][4u + v], s1);
            }
            precise float v0 = a.x * s0 + b.x * sx[i][t][0], v1 = a.y * s1 + b.y * sx[i][t][1];
            precise float r_acc = acc[r][t] + (v0 + v1);
            acc[r][t] = r_acc;
        }
    }
}

// Units u0 .. u0 + SPAN - 1 of each row in codes form (blocks.glsl: values a[h]*q[j] +
// b[h], h the half); sx = sum x of a half unit, one per token, shared by the rows. The
// rows are loops, not unrolled: lavapipe compiles a decoder copied into 16 rows for
// seconds, and runs the loop faster.
#ifdef INT_DOT
// Tile row r (w1 when hi) of unit u against the tokens' int8 x: its codes (integers of at
// most 8 bits in every type's codes form, blocks.glsl) packed four a word, per half s =
// sum q*qx exactly, then acc + dx * ((a0*s0 + b0*sx0) + (a1*s1 + b1*sx1)).
void int_row(bool hi, uint r, uint u, uint xq[TM][8], float dx[TM], int sx[TM][2])
{
    vec4 q[8];
    vec2 a, b;
    BLK_CODES(hi, base[r], u, q, a, b);
    uint qw[8];
    [[unroll]] for (uint v = 0; v < 8u; v++) {
        ivec4 c = ivec4(q[v]) & 255;
        qw[v] = uint(c.x | (c.y << 8) | (c.z << 16) | (c.w << 24));
    }
    [[unroll]] for (uint t = 0; t < TM; t++) {
        int s0 = sdot(qw[0], xq[t][0], 0) + sdot(qw[1], xq[t][1], 0) + sdot(qw[2], xq[t][2], 0) + sdot(qw[3], xq[t][3], 0);
        int s1 = sdot(qw[4], xq[t][4], 0) + sdot(qw[5], xq[t][5], 0) + sdot(qw[6], xq[t][6], 0) + sdot(qw[7], xq[t][7], 0);
        precise float v0 = a.x * float(s0) + b.x * float(sx[t][0]), v1 = a.y * float(s1) + b.y * float(sx[t][1]);
        precise float r_acc = acc[r][t] + dx[t] * (v0 + v1);
        acc[r][t] = r_acc;
    }
}

// Unit u of each row against x quantized to int8 per token and block as the lane loads it
// (quant_x8, linear.glsl; once for all TN rows), sx its halves' sums.
void int_unit(uint u)
{
    uint xq[TM][8];
    float dx[TM];
    int sx[TM][2];
    [[unroll]] for (uint t = 0; t < TM; t++) {
        vec4 xv[8];
        [[unroll]] for (uint v = 0; v < 8u; v++) xv[v] = xrow4(t, u * 8u + v);
        dx[t] = quant_x8(xv, xq[t]);
        [[unroll]] for (uint h = 0; h < 2u; h++) {
            int a = 0;
            [[unroll]] for (uint v = 0; v < 4u; v++) a += sdot(0x01010101u, xq[t][4u * h + v], 0);
            sx[t][h] = a;
        }
    }
    [[dont_unroll]] for (uint r = 0; r < HR; r++) int_row(false, r, u, xq, dx, sx);
    [[dont_unroll]] for (uint r = HR; r < TN; r++) int_row(true, r, u, xq, dx, sx);
}
#endif

void span(uint u0)
{
#ifdef INT_DOT
    int_unit(u0);
#else
    vec4 xv[SPAN][TM][8];
    float sx[SPAN][TM][2];
    [[unroll]] for (uint i = 0; i < SPAN; i++)
        [[unroll]] for (uint t = 0; t < TM; t++) {
            [[unroll]] for (uint v = 0; v < 8u; v++) xv[i][t][v] = xrow4(t, (u0 + i) * 8u + v);
            [[unroll]] for (uint h = 0; h < 2u; h++) {
                float a = 0.0;
                [[unroll]] for (uint v = 0; v < 4u; v++) a = dot4(vec4(1.0), xv[i][t][4u * h + v], a);
                sx[i][t][h] = a;
            }
#ifdef BLK_IN_PLACE  // codes in place: x times 2^(-8k) at byte position k (blocks.glsl)
            [[unroll]] for (uint v = 0; v < 8u; v++) xv[i][t][v] *= BLK_IN_PLACE_X;
#endif
        }
    // Two loops, one per binding, so that each reads one binding (hi constant).
    [[dont_unroll]] for (uint r = 0; r < HR; r++) span_row(false, r, u0, xv, sx);
    [[dont_unroll]] for (uint r = HR; r < TN; r++) span_row(true, r, u0, xv, sx);
#endif
}

// Run j of each row, partial `lane` taking runs lane, lane + 8, .. (linear.glsl).
void unit(uint j)
{
    for (uint i = 0; i < BLK_RUN; i += SPAN) span(j * BLK_RUN + i);
}
#elif defined(DT_Q8)
// Q8_0's scales: the scale of block u is half j & 7 of texel j >> 3 of list u & 7, j = u >>
// 3 (q8_scales.glsl). A lane's blocks are u = p + NPART*i; q8_scales fetches each tile
// row's texel when j enters a new one: j & 7 below NPART/8 (the same i in all lanes of
// the group, so the branch is uniform); q8_scale reads row r's.
void q8_scales(uint u)
{
    uint j = u >> 3;
    if ((j & 7u) < NPART / 8u)
        [[unroll]] for (uint r = 0; r < TN; r++) sq[r] = r < HR ? sq0(sbase[r] + (j >> 3)) : sq1(sbase[r] + (j >> 3));
}

float q8_scale(uint r, uint u)
{
    uint j = u >> 3;
    return unpackHalf2x16(sq[r][(j >> 1) & 3u])[j & 1u];
}

#ifdef INT_DOT
// Block u against x quantized to int8 per token and block as the lane loads it (quant_x8,
// linear.glsl; once for all TN rows): s = sum q*qx exactly, in 8 packed 4x8 integer dot
// products, then acc = acc + (d * dx) * s.
void unit(uint u)
{
    q8_scales(u);
    uint xq[TM][8];
    float dx[TM];
    [[unroll]] for (uint t = 0; t < TM; t++) {
        vec4 xv[8];
        [[unroll]] for (uint v = 0; v < 8u; v++) xv[v] = xrow4(t, u * 8u + v);
        dx[t] = quant_x8(xv, xq[t]);
    }
    [[unroll]] for (uint r = 0; r < TN; r++) {
        uvec4 q0 = r < HR ? wq0(base[r] + 2u * u) : wq1(base[r] + 2u * u);
        uvec4 q1 = r < HR ? wq0(base[r] + 2u * u + 1u) : wq1(base[r] + 2u * u + 1u);
        float d = q8_scale(r, u);
        [[unroll]] for (uint t = 0; t < TM; t++) {
            int s = sdot(q0.x, xq[t][0], 0) + sdot(q0.y, xq[t][1], 0) + sdot(q0.z, xq[t][2], 0) +
                    sdot(q0.w, xq[t][3], 0) + sdot(q1.x, xq[t][4], 0) + sdot(q1.y, xq[t][5], 0) +
                    sdot(q1.z, xq[t][6], 0) + sdot(q1.w, xq[t][7], 0);
            precise float f = (d * dx[t]) * float(s);
            precise float a = acc[r][t] + f;
            acc[r][t] = a;
        }
    }
}
#elif defined(FP16_DOT)
// Block u in fp16 arithmetic: x scaled per token and block (half_x), each group of 4
// columns summed in fp16 (hdot4), the groups in fp32 in column order, then
// acc = acc + (d * 2^e) * s.
void unit(uint u)
{
    q8_scales(u);
    f16vec4 xh[TM][8];
    float ex[TM];
    [[unroll]] for (uint t = 0; t < TM; t++) {
        vec4 xv[8];
        [[unroll]] for (uint v = 0; v < 8u; v++) xv[v] = xrow4(t, u * 8u + v);
        ex[t] = half_x(xv, xh[t]);
    }
    [[unroll]] for (uint r = 0; r < TN; r++) {
        float s[TM];
        [[unroll]] for (uint h = 0; h < 2u; h++) {
            uvec4 q = r < HR ? wq0(base[r] + 2u * u + h) : wq1(base[r] + 2u * u + h);
            f16vec4 wv[4] = f16vec4[4](f16vec4(i8x4(q.x)), f16vec4(i8x4(q.y)), f16vec4(i8x4(q.z)), f16vec4(i8x4(q.w)));
            [[unroll]] for (uint t = 0; t < TM; t++) {
                float a = h == 0u ? 0.0 : s[t];
                [[unroll]] for (uint v = 0; v < 4u; v++) a = hdot4(wv[v], xh[t][4u * h + v], a);
                s[t] = a;
            }
        }
        float d = q8_scale(r, u);
        [[unroll]] for (uint t = 0; t < TM; t++) {
            precise float f = (d * ex[t]) * s[t];
            precise float a = acc[r][t] + f;
            acc[r][t] = a;
        }
    }
}
#else
// Block u in two 16-quant halves: the block sum s runs on across them in column order,
// then acc = acc + d*s.
void unit(uint u)
{
    q8_scales(u);
    float s[TN][TM];
    [[unroll]] for (uint h = 0; h < 2u; h++) {
        vec4 xv[TM][4];
        [[unroll]] for (uint t = 0; t < TM; t++)
            [[unroll]] for (uint v = 0; v < 4u; v++) xv[t][v] = xrow4(t, u * 8u + h * 4u + v);
        [[unroll]] for (uint r = 0; r < TN; r++) {
            uvec4 q = r < HR ? wq0(base[r] + 2u * u + h) : wq1(base[r] + 2u * u + h);
            vec4 wv[4] = vec4[4](i8x4(q.x), i8x4(q.y), i8x4(q.z), i8x4(q.w));
            [[unroll]] for (uint t = 0; t < TM; t++) {
                float a = h == 0u ? 0.0 : s[r][t];
                [[unroll]] for (uint v = 0; v < 4u; v++) a = dot4(wv[v], xv[t][v], a);
                s[r][t] = a;
            }
        }
    }
    [[unroll]] for (uint r = 0; r < TN; r++) {
        float d = q8_scale(r, u);
        [[unroll]] for (uint t = 0; t < TM; t++) acc[r][t] = mul_add(d, s[r][t], acc[r][t]);
    }
}
#endif  // INT_DOT
#elif defined(FP16_DOT)  // DT_F16
// Unit u (8 columns) in fp16 arithmetic: x scaled per token and unit (half_x), each group
// of 4 columns summed in fp16, the two groups in fp32, then acc = acc + 2^e * s.
void unit(uint u)
{
    f16vec4 xh[TM][2];
    float ex[TM];
    [[unroll]] for (uint t = 0; t < TM; t++) {
        vec4 xv[2] = vec4[2](xrow4(t, u * 2u), xrow4(t, u * 2u + 1u));
        ex[t] = half_x(xv, xh[t]);
    }
    [[unroll]] for (uint r = 0; r < TN; r++) {
        uvec4 q = r < HR ? wq0(base[r] + u) : wq1(base[r] + u);
        f16vec4 w0 = f16vec4(unpackFloat2x16(q.x), unpackFloat2x16(q.y));
        f16vec4 w1 = f16vec4(unpackFloat2x16(q.z), unpackFloat2x16(q.w));
        [[unroll]] for (uint t = 0; t < TM; t++) {
            float s = hdot4(w1, xh[t][1], hdot4(w0, xh[t][0], 0.0));
            acc[r][t] = mul_add(ex[t], s, acc[r][t]);
        }
    }
}
#else
void unit(uint u)
{
    vec4 xv[TM][XV];
    [[unroll]] for (uint t = 0; t < TM; t++)
        [[unroll]] for (uint v = 0; v < XV; v++) xv[t][v] = xrow4(t, u * XV + v);
    [[unroll]] for (uint r = 0; r < TN; r++) {
        vec4 wv[XV];
#ifdef DT_F32
        wv[0] = r < HR ? wq0(base[r] + u) : wq1(base[r] + u);
#else
        uvec4 q = r < HR ? wq0(base[r] + u) : wq1(base[r] + u);
        wv[0] = vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y));
        wv[1] = vec4(unpackHalf2x16(q.z), unpackHalf2x16(q.w));
#endif
        [[unroll]] for (uint t = 0; t < TM; t++) {
            float a = acc[r][t];
            [[unroll]] for (uint v = 0; v < XV; v++) a = dot4(wv[v], xv[t][v], a);
            acc[r][t] = a;
        }
    }
}
#endif

#if !defined(GENERIC)
#ifndef SUBGROUP
shared float nred[NG * NPART];
#endif

// NORM: rn[t] for each tile token. Lane p sums the squares of the row's vec4s p,
// p+NPART, .. in column order; the partials are combined as combine_parts does. So the
// scale is a function of the row alone, the same bits in every tile shape. The shared-
// memory variant is called by every invocation (its barriers).
void tile_norms(uint lane)
{
    uint n4 = pc.cols / 4u;
    [[unroll]] for (uint t = 0; t < TM; t++) {
        float ss = 0.0;
        for (uint c = lane; c < n4; c += NPART) {
            vec4 v = x4(xb[t] + c);
            ss = dot4(v, v, ss);
        }
#ifdef SUBGROUP
        ss = lane_sum(ss);
#else
        uint k = gl_LocalInvocationID.x / NPART;
        nred[k * NPART + lane] = ss;
        barrier();
        float a[64];
        [[unroll]] for (uint q = 0; q < 64u; q++) a[q] = q < NPART ? nred[k * NPART + q] : 0.0;
        ss = combine_parts(a);
        barrier();
#endif
        rn[t] = 1.0 / sqrt(ss / float(pc.cols) + pc.eps);
    }
}
#endif

#if !defined(GENERIC)
// STAGE: lane pieces. A lane's units (a block type's: runs) are u = lane, lane + NPART, ..,
// each PIECES pieces of PV x vec4s (a block type's spans of a run), taken in this order
// with or without staging: the same arithmetic, the same bits.
uint piece_col(uint u, uint s)
{
#ifdef DT_BLOCK
    return (u * BLK_RUN + s * SPAN) * 8u;
#else
    return u * XV;
#endif
}

void piece(uint u, uint s)
{
#ifdef DT_BLOCK
    span(u * BLK_RUN + s * SPAN);
#else
    unit(u);
#endif
}

// Every invocation: piece s of units i*NPART + q (q < NPART, those below `units`) for
// every tile token into xs, consecutive invocations reading consecutive x vec4s.
void stage_x(uint i, uint s, uint units)
{
    for (uint e = gl_LocalInvocationID.x; e < NPART * TM * PV; e += gl_WorkGroupSize.x) {
        uint t = e / (NPART * PV), r = e % (NPART * PV), q = r / PV, v = r % PV;
        uint u = i * NPART + q;
        if (u < units) xs[(t * PV + v) * NPART + q] = xrow4_mem(t, piece_col(u, s) + v);
    }
}

// tile_partial's unit loop with x staged. Every invocation of the workgroup reaches each
// barrier the same number of times (all its tiles have the same units); a lane past the
// last unit skips the work.
void staged_units(uint lane, uint units)
{
    xslot = lane;
    for (uint i = 0; i * NPART < units; i++) {
        uint u = i * NPART + lane;
        for (uint s = 0; s < PIECES; s++) {
            barrier();  // the readers of the previous piece are done
            stage_x(i, s, units);
            barrier();
            xc0 = piece_col(u, s);
            if (u < units) piece(u, s);
        }
    }
}
#endif

// Partial `lane` of tile g for tokens tok0 .. tok0+TM-1 (past n_tok: the last token,
// computed and not stored).
void tile_partial(uint g, uint lane, uint tok0)
{
    [[unroll]] for (uint r = 0; r < TN; r++) {
        uint row = tile_row(g, r, HR);
#ifdef DT_BLOCK
        base[r] = row * (pc.cols / BLK_V * BLK_B);
#else
        base[r] = row * (pc.cols / WPE);
#endif
        sbase[r] = (row * 8u + (lane & 7u)) * (q8_lane_halves(pc.cols) / 8u);
        [[unroll]] for (uint t = 0; t < TM; t++) acc[r][t] = 0.0;
    }
    [[unroll]] for (uint t = 0; t < TM; t++)
        xb[t] = x_row_of(min(tok0 + t, NTOK - 1u)) * (pc.cols / XPE);
#if !defined(GENERIC)
    if (NORM != 0u) tile_norms(lane);
#endif
#ifdef DT_BLOCK
    uint units = pc.cols / (UNIT * BLK_RUN), u = lane;  // runs: partial `lane` takes runs lane, lane + NPART, ..
#else
    uint units = pc.cols / UNIT, u = lane;
#endif
#if !defined(GENERIC)
    if (STAGE != 0u) {
        staged_units(lane, units);
        return;
    }
#endif
    for (; u + (UNROLL - 1u) * NPART < units; u += UNROLL * NPART)
        [[unroll]] for (uint k = 0; k < UNROLL; k++) unit(u + k * NPART);
    for (; u < units; u += NPART) unit(u);
}


#ifndef SUBGROUP
shared float red[NG * TN * TM * NPART];

// The baseline's combine: partials through shared memory, the same tree per output.
float combine_shared(uint k, uint r, uint t)
{
    float a[64];
    [[unroll]] for (uint q = 0; q < 64u; q++) a[q] = q < NPART ? red[((k * TN + r) * TM + t) * NPART + q] : 0.0;
    return combine_parts(a);
}
#else
// The sums of rows i*GR .. i*GR + GR-1 of tile token t (literal loop bounds, as in
// combine_parts): a butterfly over the group's
// lanes pairing them as combine_parts pairs partials, p^(NPART/2) first. The first
// log2(GR) steps halve the rows each lane keeps (its upper half where its bit is set),
// the rest add whole sums. Lane p ends with row i*GR + p/S, the same bits in each of its
// S lanes (IEEE addition is commutative). The halving steps are combine_parts' heap:
// node j of level n (n rows kept) from nodes j + n and j + 2n, lanes m = n*S apart.
float combine_group(uint i, uint t, uint p)
{
    float h[32];  // GR <= 16
    [[unroll]] for (uint r = 0; r < 16u; r++)
        if (r < GR) h[GR + r] = acc[i * GR + r][t];
    [[unroll]] for (uint k = 0; k < 15u; k++) {
        uint j = 15u - k, n = 1u << findMSB(j), m = n * S;
        if (j >= GR) continue;
        bool hi = (p & m) != 0u;
        precise float s = (hi ? h[j + 2u * n] : h[j + n]) + subgroupShuffleXor(hi ? h[j + n] : h[j + 2u * n], m);
        h[j] = s;
    }
    precise float r = h[1];
    if (S >= 8u) r = r + subgroupShuffleXor(r, 4u);
    if (S >= 4u) r = r + subgroupShuffleXor(r, 2u);
    if (S >= 2u) r = r + subgroupShuffleXor(r, 1u);
    return r;
}
#endif

#ifdef SUBGROUP
// Tile g for tokens tok_begin .. tok_end - 1: the lanes' partials combined in the
// subgroup, the sums stored where `live`.
void subgroup_tile(uint g, uint p, uint tok_begin, uint tok_end, bool live)
{
    for (uint tok0 = tok_begin; tok0 < tok_end; tok0 += TM) {
        tile_partial(g, p, tok0);
        [[unroll]] for (uint t = 0; t < TM; t++) {
            float sum[2];  // NGRP <= 2
            [[unroll]] for (uint i = 0; i < 2u; i++) sum[i] = i < NGRP ? combine_group(i, t, p) : 0.0;
            // SWIGLU: up row r + HR is in lane p ^ (HR*S) (one group) or in this lane's
            // other group (two: then S is 1).
            if (NGRP == 1u) {
                float up = GATED ? subgroupShuffleXor(sum[0], HR * S) : 0.0;
                if (live && p % S == 0u) store_tile_row(g, tok0 + t, p / S, HR, sum[0], up);
            } else if (live) {
                [[unroll]] for (uint i = 0; i < 2u; i++)
                    store_tile_row(g, tok0 + t, i * GR + p, HR, sum[i], sum[1u - i]);
            }
        }
    }
}
#endif

void main()
{
    uint wg = gl_WorkGroupID.z * pc.wgx + gl_WorkGroupID.x;
#ifdef MOE
    // One chosen expert a workgroup row, all its pairs. Indirect: the rows are the chosen
    // experts of this part, from the slot moe_route.comp wrote. Direct: every slot, and a
    // row past the chosen ones, or of an expert in another part, ends at once (the whole
    // workgroup: no barrier is skipped by part of it).
    uint chosen = 2u * pc.nexp + 2u * pc.n_tok, slot = gl_WorkGroupID.y;
    if (pc.args != ~0u) slot += mg[chosen + 1u + pc.nexp + 4u * pc.args + 3u];
    if (slot >= mg[chosen]) return;
    uint e = mg[chosen + 1u + slot];
    if (e < pc.e0 || e >= pc.e0 + pc.lim0 / pc.erows) return;
    moe_n = mg[e];
    moe_off = mg[pc.nexp + e];
    moe_row = (e - pc.e0) * pc.erows;
    moe_bias0 = e * pc.erows;
    uint tok_begin = 0u, tok_end = moe_n;
#else
    uint tok_begin = gl_WorkGroupID.y * pc.tpw;
    uint tok_end = min(tok_begin + pc.tpw, pc.n_tok);
#endif
#ifdef SUBGROUP
    // Lane groups are aligned runs of NPART lanes of a subgroup (the host needs a subgroup
    // size that is a multiple of NPART); tiles are spread over however many groups the
    // driver made, so another subgroup size than the host assumed stays correct.
    uint per_sg = gl_SubgroupSize / NPART, p = gl_SubgroupInvocationID % NPART;
    uint k0 = gl_SubgroupID * per_sg + gl_SubgroupInvocationID / NPART;
    if (STAGE != 0u) {
        // Staged x: one tile per lane group, all at the barriers together (the host makes
        // NG * NPART invocations); a group past NG (a driver's wider subgroup) only helps
        // stage, and tiles past the end compute clamped rows and store nothing (store_tile_row).
        subgroup_tile(wg * NG + min(k0, NG - 1u), p, tok_begin, tok_end, k0 < NG);
        return;
    }
    for (uint k = k0; k < NG; k += gl_NumSubgroups * per_sg) {
        uint g = wg * NG + k;
        if (g * pc.step >= pc.n_out) break;
        subgroup_tile(g, p, tok_begin, tok_end, true);
    }
#else
    // Every invocation reaches the barriers: tiles past the end compute clamped rows and
    // store nothing.
    uint lid = gl_LocalInvocationID.x, p = lid % NPART, k = lid / NPART, g = wg * NG + k;
    for (uint tok0 = tok_begin; tok0 < tok_end; tok0 += TM) {
        tile_partial(g, p, tok0);
        [[unroll]] for (uint r = 0; r < TN; r++)
            [[unroll]] for (uint t = 0; t < TM; t++) red[((k * TN + r) * TM + t) * NPART + p] = acc[r][t];
        barrier();
        if (g * pc.step < pc.n_out) {
            [[unroll]] for (uint t = 0; t < TM; t++)
                for (uint r = p; r < TN; r += NPART) {
                    bool swiglu = GATED;
                    if (swiglu && r >= HR) continue;
                    float up = swiglu ? combine_shared(k, r + HR, t) : 0.0;
                    store_tile_row(g, tok0 + t, r, HR, combine_shared(k, r, t), up);
                }
        }
        barrier();
    }
#endif
}
