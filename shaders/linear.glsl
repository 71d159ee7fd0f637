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
//  - NPART = 8 partial sums; partial p takes units p, p+8, p+16, ... in that order (a
//    block type with runs of R units, blocks.glsl: runs p, p+8, ..., each run's R units
//    in order);
//  - within a unit, columns are accumulated in order, a = a + w*x with the product
//    rounded (Q8_0: the block's s = sum q_i x_i from 0 in column order, then
//    partial = partial + d*s; a block type: per half unit s = sum q*x and sx = sum x in
//    column order, then partial = partial + ((a0*s0 + b0*sx0) + (a1*s1 + b1*sx1)); codes
//    in place: q*2^(8k) times x*2^(-8k), the same product);
//  - the partials are combined by one tree: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
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

#define NPART 8u

#define MODE_STORE 0u
#define MODE_ADD 1u
#define MODE_SWIGLU 2u

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
} pc;

layout(std430, binding = 1) buffer Y { float y[]; };
// NORM: the RMS norm's weights, one per column (fused RMSNorm; linear.comp).
layout(std430, binding = 6) readonly buffer G { vec4 g4[]; };

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

// The tree that combines the NPART partials of one output (a[p] = partial p).
float combine8(float a[NPART])
{
    precise float l = (a[0] + a[4]) + (a[2] + a[6]);
    precise float h = (a[1] + a[5]) + (a[3] + a[7]);
    precise float r = l + h;
    return r;
}

#ifdef SUBGROUP
// combine8 of one value per lane of an aligned lane group, returned to all of them: a
// butterfly pairing lanes p and p^4, then p^2, then p^1 as combine8 pairs partials; IEEE
// addition is commutative, so every lane gets combine8's bits.
float lane_sum8(float v)
{
    precise float a = v + subgroupShuffleXor(v, 4u);
    precise float b = a + subgroupShuffleXor(a, 2u);
    precise float c = b + subgroupShuffleXor(b, 1u);
    return c;
}

// combine8 of NPART outputs at once across the NPART lanes of an aligned lane group
// (v[j]: this lane's partial of output j): a butterfly that halves the outputs each lane
// keeps at every step, pairing lanes p and p^4, then p^2, then p^1 exactly as combine8
// pairs partials (IEEE addition is commutative, so both lanes of a pair get the same
// bits). Lane p ends with the sum of output p. 7 shuffles for 8 outputs.
float combine_lanes(float v[NPART], uint p)
{
    bool b2 = (p & 4u) != 0u, b1 = (p & 2u) != 0u, b0 = (p & 1u) != 0u;
    float u[4], w[2];
    [[unroll]] for (uint k = 0; k < 4u; k++) {
        precise float s = (b2 ? v[k + 4u] : v[k]) + subgroupShuffleXor(b2 ? v[k] : v[k + 4u], 4u);
        u[k] = s;
    }
    [[unroll]] for (uint k = 0; k < 2u; k++) {
        precise float s = (b1 ? u[k + 2u] : u[k]) + subgroupShuffleXor(b1 ? u[k] : u[k + 2u], 2u);
        w[k] = s;
    }
    precise float r = (b0 ? w[1] : w[0]) + subgroupShuffleXor(b0 ? w[0] : w[1], 1u);
    return r;
}
#endif

// ---- tiles -----------------------------------------------------------------------------
// Row of the tile's binding for tile g, tile row r (r < half_rows: w0, else w1), clamped
// into the binding so that tiles past the end read valid memory.
uint tile_row(uint g, uint r, uint half_rows)
{
    return r < half_rows ? min(pc.off0 + g * pc.step + r, pc.lim0 - 1u)
                         : min(pc.off1 + g * pc.step + r - half_rows, pc.lim1 - 1u);
}

// silu(gate) * up. precise: the product must not be fused with the residual add of
// store_out, which the compiler cannot tell apart from this mode.
float swiglu(float gate, float up)
{
    precise float r = gate / (1.0 + exp(-gate)) * up;
    return r;
}

// Writes output j (0-based within this dispatch) of token tok.
void store_out(uint tok, uint j, float v)
{
    uint idx = (pc.yrow0 + tok) * pc.ldy + pc.out0 + j;
    precise float r = pc.mode == MODE_ADD ? y[idx] + v : v;
    y[idx] = r;
}
