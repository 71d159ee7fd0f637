// linear.glsl — what matvec.comp, matmul.comp and matmul_generic.comp share: the
// bindings, the push constants, the weight loads of each dtype and the output modes.
//
// Variant defines: DT_F32, DT_F16 or DT_Q8 (weight dtype); GENERIC (scalar loads, any
// cols; F32/F16 only); Q8_XV (4 or 8: vec4s per Q8_0 unit, i.e. half or whole block).
//
// Bindings (set 0): 0 x (n_tok x cols f32), 1 y, 2 w0, 3 s0, 4 w1, 5 s1.
// A row tile of ROWS rows reads its first half from w0 and its second half from w1, at
// rows off0 + g*step + r and off1 + g*step + r. STORE/ADD bind the same part twice with
// off1 = off0 + ROWS/2 and step = ROWS, so a tile is ROWS consecutive rows; SWIGLU binds
// the parts holding gate row i and up row i + h, step = ROWS/2, so one tile holds
// matching gate and up rows even when the two live in different parts. No branch in the
// inner loop depends on the mode.

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
    uint step;   // outputs per row tile: ROWS (STORE/ADD) or ROWS/2 (SWIGLU)
    uint wgx;    // workgroups along x (row tiles spill into z past the limit)
    uint off0, lim0;  // first row read from w0, rows in w0
    uint off1, lim1;
} pc;

#ifdef GENERIC
layout(std430, binding = 0) readonly buffer X { float x1[]; };
#else
layout(std430, binding = 0) readonly buffer X { vec4 x4[]; };
#endif
layout(std430, binding = 1) buffer Y { float y[]; };

#if defined(DT_F32) && defined(GENERIC)
layout(std430, binding = 2) readonly buffer W0 { float w0[]; };
layout(std430, binding = 4) readonly buffer W1 { float w1[]; };
#elif defined(DT_F32)
layout(std430, binding = 2) readonly buffer W0 { vec4 w0[]; };
layout(std430, binding = 4) readonly buffer W1 { vec4 w1[]; };
#elif defined(GENERIC)
layout(std430, binding = 2) readonly buffer W0 { uint w0[]; };
layout(std430, binding = 4) readonly buffer W1 { uint w1[]; };
#else
layout(std430, binding = 2) readonly buffer W0 { uvec4 w0[]; };
layout(std430, binding = 4) readonly buffer W1 { uvec4 w1[]; };
#endif
#ifdef DT_Q8
layout(std430, binding = 3) readonly buffer S0 { uint s0[]; };
layout(std430, binding = 5) readonly buffer S1 { uint s1[]; };
#endif

// A "unit" is what one load step covers along a row: UNIT columns, XV vec4s of x.
// WPE: columns per element of the w0/w1 arrays.
#if defined(GENERIC)
#define UNIT 1u
#define WPE 1u
#elif defined(DT_F32)
#define UNIT 4u
#define XV 1
#define WPE 4u
#elif defined(DT_F16)
#define UNIT 8u
#define XV 2
#define WPE 8u
#else
#define XV Q8_XV
#define UNIT (4u * Q8_XV)
#define WPE 16u
#endif

// Sign-extends the four int8 of w (little-endian) to floats.
vec4 i8x4(uint w)
{
    return vec4(ivec4(int(w << 24), int(w << 16), int(w << 8), int(w)) >> 24);
}

// Element h of an array of packed halves.
#define HALF_AT(A, h) (unpackHalf2x16(A[(h) >> 1])[(h) & 1u])

// Row `row` of a binding starts at element b = row * (cols / WPE) of w0/w1; for Q8 its
// first scale is at half index sb = row * (cols / 32).
#if defined(GENERIC)
#define LOAD_FN(NAME, W, S)
#elif defined(DT_F32)
#define LOAD_FN(NAME, W, S) \
    void NAME(uint b, uint sb, uint i, out vec4 wv[XV], out float sc) \
    { wv[0] = W[b + i]; sc = 1.0; }
#elif defined(DT_F16)
#define LOAD_FN(NAME, W, S) \
    void NAME(uint b, uint sb, uint i, out vec4 wv[XV], out float sc) \
    { \
        uvec4 u = W[b + i]; \
        wv[0] = vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)); \
        wv[1] = vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w)); \
        sc = 1.0; \
    }
#else
// Q8_XV 8: unit i is block i (two uvec4). Q8_XV 4: unit i is half i&1 of block i>>1.
#define LOAD_FN(NAME, W, S) \
    void NAME(uint b, uint sb, uint i, out vec4 wv[XV], out float sc) \
    { \
        [[unroll]] for (uint k = 0; k < XV / 4; k++) { \
            uvec4 u = W[b + i * (XV / 4) + k]; \
            wv[4 * k + 0] = i8x4(u.x); wv[4 * k + 1] = i8x4(u.y); \
            wv[4 * k + 2] = i8x4(u.z); wv[4 * k + 3] = i8x4(u.w); \
        } \
        sc = HALF_AT(S, sb + i / (8 / XV)); \
    }
#endif
LOAD_FN(load_w0, w0, s0)
LOAD_FN(load_w1, w1, s1)

// Unit index of the first unit of the row of tile g at r (r < ROWS/2: w0, else w1),
// clamped into the binding so that tiles past the end read valid memory.
uint tile_row(uint g, uint r, uint half_rows)
{
    return r < half_rows ? min(pc.off0 + g * pc.step + r, pc.lim0 - 1u)
                         : min(pc.off1 + g * pc.step + r - half_rows, pc.lim1 - 1u);
}

float silu(float g)
{
    return g / (1.0 + exp(-g));
}

// Writes output j (0-based within this dispatch) of token tok.
void store_out(uint tok, uint j, float v)
{
    uint idx = tok * pc.ldy + pc.out0 + j;
    y[idx] = pc.mode == MODE_ADD ? y[idx] + v : v;
}
