// linear.glsl — what every variant of linear.comp shares: bindings, push constants, the
// weight and x loads of each dtype and binding kind, and the reduction order of one
// output, which is a fixed function of cols (and the dtype) alone.
//
// Variant defines: DT_F32 | DT_F16 | DT_Q8 | DT_BLOCK with BLK_<type> (weight dtype: a
// block type of shaders/types, read as ggml's blocks lie in the file); TEXEL (weights
// and x through uniform texel buffers: x RGBA32F, F32 weights RGBA32F, F16 weights, Q8_0
// quants, Q8_0 scales and blocks RGBA32UI; else storage buffers); GENERIC (F32/F16 with scalar loads,
// any cols; storage only); SUBGROUP (partials combined with subgroupShuffleXor, else
// through shared memory).
//
// ---- The reduction order (batch invariance) --------------------------------------------
// y[t][r] must be bit-identical whatever n_tok, the token's place in the batch, the tile
// shape, the subgroup size or the variant (texel/storage, subgroup/shared memory). So:
//  - a row is cut into units (F32: 4 columns, F16: 8, Q8_0: one 32-block, GENERIC: 1,
//    a block type: 32 values in codes form, blocks.glsl);
//  - NPART partial sums (8, 16, 32 or 64: a device-wide choice, the same for every
//    dispatch of a model, kernels.c); partial p takes units p, p+NPART, p+2*NPART, ... in
//    that order (a block type with runs of R units, blocks.glsl: runs p, p+NPART, ...,
//    each run's R units in order);
//  - within a unit, columns are accumulated in order, a = a + w*x with the product
//    rounded (Q8_0: the block's s = sum q_i x_i from 0 in column order, then
//    partial = partial + d*s; a block type: per half unit s = sum q*x and sx = sum x in
//    column order, then partial = partial + ((a0*s0 + b0*sx0) + (a1*s1 + b1*sx1)); codes
//    in place: q*2^(8k) times x*2^(-8k), the same product);
//  - the partials are combined by one tree, pairing partials NPART/2 apart, then NPART/4,
//    ..., then 1 (combine_parts; NPART 8: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7))).
// Another NPART is another order, so other bits: a device keeps one NPART for all.
// Every product and sum is `precise` (NoContraction): the compiler may neither fuse a
// multiply into an add nor reassociate. fma() is not used: lavapipe lowers it to
// llvm.fmuladd, which LLVM fuses in some places and not in others, so the same fma()
// chain gave different bits in two shaders (measured); separately rounded, NoContraction
// products and sums are the same on every conforming driver. A lane group of NPART
// invocations owns a tile; lane p holds partial p of every output of the tile, so the
// tile shape (tokens per tile, tiles per workgroup, tokens per workgroup) changes how
// much each load is reused, never the arithmetic of an output.
//
// Bindings (set 0): 0 x (n_tok x cols f32), 1 y, 2 w0, 3 s0, 4 w1, 5 s1 (s: Q8_0 scales;
// F32/F16 do not declare them). A row tile of TN rows reads its first half from w0 and its
// second half from w1, at rows off0 + g*step + r and off1 + g*step + r. STORE/ADD bind the
// same part twice with off1 = off0 + TN/2 and step = TN, so a tile is TN consecutive rows;
// SWIGLU binds the parts holding gate row i and up row i + h, step = TN/2, so one tile
// holds matching gate and up rows even when they live in different parts.

// Lanes per tile, the partials of an output (kernels.c: from the device table). Wider
// groups read longer runs of a row per load, as 32- and 64-lane GPUs like.
layout(constant_id = 6) const uint NPART = 8;

#define MODE_STORE 0u
#define MODE_ADD 1u
#define MODE_SWIGLU 2u
#define MODE_GEGLU 3u
#define MODE_SWIGLU_OAI 4u  // gpt-oss's clamped SwiGLU: oscale is its alpha, ocap its limit
// Gated modes pair gate row i with up row i + h and store act(gate) * up.
#define GATED (pc.mode >= MODE_SWIGLU)

layout(push_constant) uniform Push {
    uint cols;   // input length (x row length)
    uint n_tok;
    uint mode;
    uint ldy;    // y row length
    uint out0;   // first y column written by this dispatch
    uint n_out;  // y columns written by this dispatch
    uint step;   // outputs per row tile: TN (STORE/ADD) or TN/2 (SWIGLU)
    uint wgx;    // workgroups along x (row tiles spill into z past the limit)
    uint off0, lim0;  // first row read from w0, rows in w0
    uint off1, lim1;
    uint tpw;    // tokens per workgroup along y (a multiple of TM), looped in the workgroup
    uint xrow0;  // token t reads x row xrow0 + t
    uint yrow0;  // and writes y row yrow0 + t
    float eps;   // NORM: the RMS norm's epsilon
    float oscale;  // STORE/ADD: the output times it before it is stored or added (1: none)
    float ocap;    // STORE: then soft-capped, c tanh(v / c) (0: none)
    uint e0;       // MOE: the first expert of this dispatch's weight part
    uint erows;    // MOE: rows of one expert in the part (gated: its gate rows, then its up rows)
    uint xdiv;     // MOE: a pair's x row is pair / xdiv (k: the token's row; 1: the pair's own)
    uint nexp;     // MOE: experts of the model, the length of the group's counts and offsets
                   // (and n_tok: the step's pairs, where the chosen experts' list follows)
    uint bias;     // 1: binding 6 holds a bias per weight row (row_bias), not NORM's weights
    uint args;     // MOE: the counts of moe_route.comp's this indirect dispatch took (~0u: direct)
} pc;

layout(std430, binding = 1) buffer Y { float y[]; };
// NORM: the RMS norm's weights, one per column (fused RMSNorm; linear.comp).
layout(std430, binding = 6) readonly buffer G { vec4 g4[]; };

// ---- MOE: the grouped expert product (mul_mat_id) ------------------------------------
// A workgroup along y serves the y-th expert some pair chose (moe_route.comp's list of
// them), when it lies in this dispatch's part, for every (token, slot) pair that chose it:
// mg holds, as moe_route.comp writes them, the pairs per expert (mg[e]), where each
// expert's run of the pair list starts (mg[nexp + e]) and the list (mg[2 nexp + i]). Tile
// token t of the workgroup is pair list[off + t]: it reads x row pair / xdiv and writes y
// row pair; the weight rows are those of expert e, erows a piece. Every output is the same
// function of its x row and its expert's rows as in a plain dispatch: batch invariant.
#ifdef MOE
layout(std430, binding = 7) readonly buffer MG { uint mg[]; };
uint moe_n, moe_off, moe_row;  // the expert's pairs, its run of the list, its first weight row
#define NTOK moe_n
uint moe_pair(uint t) { return mg[2u * pc.nexp + moe_off + t]; }
uint x_row_of(uint t) { return moe_pair(t) / pc.xdiv; }
uint y_row_of(uint t) { return moe_pair(t); }
uint moe_bias0;  // the expert's first row in the biases (e * erows)
#else
#define NTOK pc.n_tok
const uint moe_row = 0u, moe_bias0 = 0u;
uint x_row_of(uint t) { return pc.xrow0 + t; }
uint y_row_of(uint t) { return pc.yrow0 + t; }
#endif

// ---- units: UNIT columns; XV vec4s of x per unit (GENERIC: one float) -----------------
#if defined(GENERIC)
#define UNIT 1u
#elif defined(DT_BLOCK)
#define UNIT 32u
#define XV 8
#elif defined(DT_F32)
#define UNIT 4u
#define XV 1
#elif defined(DT_F16)
#define UNIT 8u
#define XV 2
#else
#define UNIT 32u
#define XV 8
#endif

// ---- loads ----------------------------------------------------------------------------
// x4(i): vec4 i of x; wq0/wq1(i): element i of a weight binding (vec4 F32, uvec4 F16/Q8,
// 16 bytes either way); sq0/sq1(i): 16-byte element i of a Q8_0 scales binding (eight
// f16 scales of one lane, see q8_scales.glsl).
#if defined(GENERIC)
layout(std430, binding = 0) readonly buffer X { float x1[]; };
#ifdef DT_F32
layout(std430, binding = 2) readonly buffer W0 { float w0[]; };
layout(std430, binding = 4) readonly buffer W1 { float w1[]; };
#define W_AT(A, e) A[e]
#else
layout(std430, binding = 2) readonly buffer W0 { uint w0[]; };
layout(std430, binding = 4) readonly buffer W1 { uint w1[]; };
#define W_AT(A, e) (unpackHalf2x16(A[(e) >> 1])[(e) & 1u])
#endif
#elif defined(TEXEL)
layout(binding = 0) uniform samplerBuffer xt;
#define x4(i) texelFetch(xt, int(i))
#if defined(DT_BLOCK)
layout(binding = 2) uniform usamplerBuffer w0t;
layout(binding = 4) uniform usamplerBuffer w1t;
#define BLK_VEC4(i) (hi ? texelFetch(w1t, int(i)) : texelFetch(w0t, int(i)))
#define BLK_WORD(i) BLK_VEC4((i) >> 2u)[(i) & 3u]
#elif defined(DT_F32)
layout(binding = 2) uniform samplerBuffer w0t;
layout(binding = 4) uniform samplerBuffer w1t;
#else
layout(binding = 2) uniform usamplerBuffer w0t;
layout(binding = 4) uniform usamplerBuffer w1t;
#endif
#define wq0(i) texelFetch(w0t, int(i))
#define wq1(i) texelFetch(w1t, int(i))
#ifdef DT_Q8
layout(binding = 3) uniform usamplerBuffer s0t;
layout(binding = 5) uniform usamplerBuffer s1t;
#define sq0(i) texelFetch(s0t, int(i))
#define sq1(i) texelFetch(s1t, int(i))
#endif
#else
layout(std430, binding = 0) readonly buffer X { vec4 x4s[]; };
#define x4(i) x4s[i]
#if defined(DT_BLOCK)
layout(std430, binding = 2) readonly buffer W0 { uint wb0[]; };
layout(std430, binding = 4) readonly buffer W1 { uint wb1[]; };
#define BLK_WORD(i) (hi ? wb1[i] : wb0[i])
#define BLK_VEC4(i) uvec4(BLK_WORD(4u * (i)), BLK_WORD(4u * (i) + 1u), BLK_WORD(4u * (i) + 2u), BLK_WORD(4u * (i) + 3u))
#elif defined(DT_F32)
layout(std430, binding = 2) readonly buffer W0 { vec4 w0[]; };
layout(std430, binding = 4) readonly buffer W1 { vec4 w1[]; };
#else
layout(std430, binding = 2) readonly buffer W0 { uvec4 w0[]; };
layout(std430, binding = 4) readonly buffer W1 { uvec4 w1[]; };
#endif
#define wq0(i) w0[i]
#define wq1(i) w1[i]
#ifdef DT_Q8
layout(std430, binding = 3) readonly buffer S0 { uvec4 s0[]; };
layout(std430, binding = 5) readonly buffer S1 { uvec4 s1[]; };
#define sq0(i) s0[i]
#define sq1(i) s1[i]
#endif
#endif

#include "q8_scales.glsl"
#ifdef DT_BLOCK
#include "types/all.glsl"
#endif

// Sign-extends the four int8 of w (little-endian) to floats.
vec4 i8x4(uint w)
{
    return vec4(ivec4(int(w << 24), int(w << 16), int(w << 8), int(w)) >> 24);
}

#ifdef INT_DOT
// OpSDot (SPV_KHR_integer_dot_product; Debian 12's glslang has no GLSL name for it): the
// sum of the products of the four int8 of a and b, packed_4x8 = 0 (PackedVectorFormat4x8Bit).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot(uint a, uint b, spirv_literal int packed_4x8);

// A 32-value block of x as int8, four a word: q = clamp(roundEven(x / 2^e), -127, 127),
// 2^e the power of two that puts the block's largest magnitude in [64, 128); returns 2^e
// (0 for a block below 2^-120: all q zero; amax itself when it is inf or NaN, so the
// output is too). Scaling by a power of two is exact, so every device, and the CPU
// reference, round x alike; the block keeps 7-8 bits of x.
float quant_x8(vec4 xv[8], out uint q[8])
{
    float amax = 0.0;
    [[unroll]] for (uint v = 0; v < 8u; v++) {
        vec4 a = abs(xv[v]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    uint eb = floatBitsToUint(amax) >> 23;  // biased exponent: amax in [2^(eb-127), 2^(eb-126))
    bool zero = eb < 7u || eb == 255u;
    float inv = zero ? 0.0 : uintBitsToFloat((260u - eb) << 23);  // 2^-e, e = eb - 133
    [[unroll]] for (uint v = 0; v < 8u; v++) {
        ivec4 b = ivec4(clamp(roundEven(xv[v] * inv), -127.0, 127.0)) & 255;
        q[v] = uint(b.x | (b.y << 8) | (b.z << 16) | (b.w << 24));
    }
    return eb == 255u ? amax : zero ? 0.0 : uintBitsToFloat((eb - 6u) << 23);
}
#endif

#ifdef FP16_DOT
// x's vec4s for fp16 arithmetic: scaled by 2^-e so that the largest magnitude amax lands
// in [0.5, 1) (2^-e at most 2^126, so zero and subnormals stay as they are), then rounded
// to fp16. A power of two scales exactly, and products with weights and their sums of four
// then stay far below fp16's 65504 whatever x holds. Returns 2^e; inf or NaN: amax
// itself, so that the output is not finite either. The array is sized by the caller: 8
// vec4s for Q8_0, 2 for F16.
#define HALF_X(N)                                                                   \
    float half_x(vec4 xv[N], out f16vec4 xh[N])                                     \
    {                                                                               \
        float amax = 0.0;                                                           \
        [[unroll]] for (uint v = 0; v < N; v++) {                                   \
            vec4 a = abs(xv[v]);                                                    \
            amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));                    \
        }                                                                           \
        uint eb = min(floatBitsToUint(amax) >> 23, 252u);                           \
        float inv = uintBitsToFloat((253u - eb) << 23);                             \
        [[unroll]] for (uint v = 0; v < N; v++) xh[v] = f16vec4(xv[v] * inv);       \
        return isinf(amax) || isnan(amax) ? amax : uintBitsToFloat((eb + 1u) << 23); \
    }
#ifdef DT_Q8
HALF_X(8u)
#else
HALF_X(2u)
#endif

// a + (w.x in fp16, in column order: each product and sum rounded to fp16), the sum of
// the four in fp32.
float hdot4(f16vec4 w, f16vec4 x, float a)
{
    precise float16_t r = w.x * x.x;
    r = r + w.y * x.y;
    r = r + w.z * x.z;
    r = r + w.w * x.w;
    precise float s = a + float(r);
    return s;
}
#endif

// ---- the fixed order of one unit -------------------------------------------------------
// a + w.x in column order, each product rounded, then each sum.
float dot4(vec4 w, vec4 x, float a)
{
    precise float r = a + w.x * x.x;
    r = r + w.y * x.y;
    r = r + w.z * x.z;
    r = r + w.w * x.w;
    return r;
}

float mul_add(float w, float x, float a)
{
    precise float r = a + w * x;
    return r;
}

// The tree that combines the NPART partials of one output (a[p] = partial p, p < NPART):
// partials NPART/2 apart first, then NPART/4, ..., 1. Written as a heap, h[NPART + p] =
// a[p] and node i of level n (n <= i < 2n, n a power of two) the sum of nodes i + n and
// i + 2n of the level below. Every loop here has a literal bound and tests NPART inside:
// lavapipe kept loops bounded by the specialization constant, indexing these arrays (and
// the accumulators) at run time, 2.5x slower (measured).
float combine_parts(float a[64])
{
    float h[128];
    [[unroll]] for (uint q = 0; q < 64u; q++)
        if (q < NPART) h[NPART + q] = a[q];
    [[unroll]] for (uint k = 0; k < 63u; k++) {
        uint i = 63u - k, n = 1u << findMSB(i);
        if (i >= NPART) continue;
        precise float s = h[i + n] + h[i + 2u * n];
        h[i] = s;
    }
    return h[1];
}

#ifdef SUBGROUP
// combine_parts of one value per lane of an aligned group of NPART lanes, returned to all
// of them: a butterfly pairing lanes p and p^(NPART/2), then p^(NPART/4), ..., as
// combine_parts pairs partials; IEEE addition is commutative, so every lane gets its bits.
float lane_sum(float v)
{
    precise float s = v;
    if (NPART >= 64u) s = s + subgroupShuffleXor(s, 32u);
    if (NPART >= 32u) s = s + subgroupShuffleXor(s, 16u);
    if (NPART >= 16u) s = s + subgroupShuffleXor(s, 8u);
    s = s + subgroupShuffleXor(s, 4u);
    s = s + subgroupShuffleXor(s, 2u);
    s = s + subgroupShuffleXor(s, 1u);
    return s;
}
#endif

// ---- tiles -----------------------------------------------------------------------------
// Row of the tile's binding for tile g, tile row r (r < half_rows: w0, else w1), clamped
// into the binding so that tiles past the end read valid memory.
uint tile_row(uint g, uint r, uint half_rows)
{
    return r < half_rows ? min(moe_row + pc.off0 + g * pc.step + r, pc.lim0 - 1u)
                         : min(moe_row + pc.off1 + g * pc.step + r - half_rows, pc.lim1 - 1u);
}

// silu(gate) * up, or gelu(gate) * up by GELU's tanh approximation (ggml_gelu; its
// argument clamped where tanh is +-1 in float anyway, so that an exp-based tanh cannot
// give inf / inf). precise: the product must not be fused with the residual add of
// store_out, which the compiler cannot tell apart from this mode.
float glu(float gate, float up)
{
    if (pc.mode == MODE_SWIGLU_OAI) {
        precise float g = min(gate, pc.ocap);
        precise float u = clamp(up, -pc.ocap, pc.ocap);
        precise float r = g / (1.0 + exp(-pc.oscale * g)) * (u + 1.0);
        return r;
    }
    if (pc.mode == MODE_GEGLU) {
        precise float z = 0.7978845608 * gate * (1.0 + 0.044715 * gate * gate);
        precise float g = 0.5 * gate * (1.0 + tanh(clamp(z, -15.0, 15.0))) * up;
        return g;
    }
    precise float r = gate / (1.0 + exp(-gate)) * up;
    return r;
}

// Writes output j (0-based within this dispatch) of token tok. A scale of 1 and no cap
// leave v's bits as they are.
void store_out(uint tok, uint j, float v)
{
    uint idx = y_row_of(tok) * pc.ldy + pc.out0 + j;
    precise float s = GATED ? v : v * pc.oscale;
    if (!GATED && pc.ocap > 0.0) s = pc.ocap * tanh(clamp(s / pc.ocap, -15.0, 15.0));
    precise float r = pc.mode == MODE_ADD ? y[idx] + s : s;
    y[idx] = r;
}

// The bias of weight row `row` (pc.bias): dense, the output's row out0 + j (gated: up's
// is ldy rows on, after the gate rows); a mixture, per expert in its stack's row order
// (gate rows then up rows), the expert's from moe_bias0.
float row_bias(uint row) { return g4[row >> 2u][row & 3u]; }

// Stores row r of tile g for token tok (v: its sum) where both are inside the dispatch's
// output, its bias added first where the call has biases. Gated modes: only gate rows
// (r < half_rows) store, act(v) * up with up the sum of up row r + half_rows.

void store_tile_row(uint g, uint tok, uint r, uint half_rows, float v, float up)
{
    uint j = g * pc.step + r;
    if (tok >= NTOK || j >= pc.n_out || (GATED && r >= half_rows)) return;
    if (pc.bias != 0u) {
        uint row = moe_bias0 + pc.out0 + j;
        precise float vb = v + row_bias(row);
        precise float ub = GATED ? up + row_bias(row + pc.ldy) : up;
        v = vb, up = ub;
    }
    store_out(tok, j, GATED ? glu(v, up) : v);
}
