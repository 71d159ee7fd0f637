#version 450
// linear_mm.comp — y = W x as a tiled matrix product on fp16 inputs with fp32 accumulators:
// the matrix family of the linear (docs/kernels.md, "The matrix family"), for the matrix
// units of GPUs. A workgroup computes a tile of BM = 64 rows x BN tokens (16 or 64). For
// each step of 32 columns (one unit of every weight type) it stages the tile's weights,
// decoded to values and rounded to fp16, and its tokens' x, rounded to fp16, in shared
// memory; then
//  - COOPMAT (VK_NV_cooperative_matrix; 4 subgroups of 32): each subgroup multiplies its
//    16x16 fragments with coopMatMulAddNV, 16 columns at a time, accumulating in fp32;
//  - else (any device with shaderFloat16: how lavapipe runs and tests this family) each
//    invocation accumulates 2 rows x BN/4 tokens, column by column: an fp16 product is
//    exact in fp32, so an output is the sum of exact products in column order.
// Either way an output's arithmetic does not depend on the other rows and tokens of its
// tile (a matrix unit computes each element alike wherever it sits: the GPU check
// tests it), so the family is batch invariant; it rounds w and x to fp16, so it sums
// other values than linear.comp and is a device-wide choice (kernels.c): every linear
// whose rows are whole 32-column steps takes it, decode too.
//
// Defines: DT_F32 | DT_F16 | DT_Q8 | DT_BLOCK + BLK_<type> (linear.glsl's storage
// bindings), COOPMAT. Needs cols % 32 == 0 (kernels_linear.c keeps other weights on
// linear.comp).
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifdef COOPMAT
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif

layout(local_size_x_id = 0) in;             // WG invocations (the host sets 128)
layout(constant_id = 2) const uint BN = 64; // tokens per tile: 16 or 64

#include "linear.glsl"

const uint WG = 128u;
const uint BM = 64u;      // rows per tile; SWIGLU: 32 gate rows (w0) and their 32 up rows (w1)
const uint HR = BM / 2u;
const uint KB = 32u;      // columns per step
const uint AS = KB + 8u;  // halves between rows of As (16-byte multiples, banks spread)
const uint BS = KB + 8u;  // ... between tokens of Bs
shared float16_t As[BM * AS];  // the step's weights: row r, column k at r * AS + k
shared float16_t Bs[BN * BS];  // the step's x: token t, column k at t * BS + k

// ---- staging ----------------------------------------------------------------------------
// The 32 values of unit u of binding row `row` (w1 when hi), as the C dequantizer gives
// them (then rounded to fp16 by the caller).
void unit_values(bool hi, uint row, uint u, out float v[32])
{
#if defined(DT_BLOCK)
    vec4 q[8];
    vec2 a, b;
    BLK_CODES(hi, row * (pc.cols / BLK_V * BLK_B), u, q, a, b);
    [[unroll]] for (uint j = 0; j < 32u; j++) v[j] = blk_value(q, a, b, j);
#elif defined(DT_F32)
    uint base = row * (pc.cols / 4u) + u * 8u;
    [[unroll]] for (uint i = 0; i < 8u; i++) {
        vec4 w = hi ? wq1(base + i) : wq0(base + i);
        [[unroll]] for (uint c = 0; c < 4u; c++) v[4u * i + c] = w[c];
    }
#elif defined(DT_F16)
    uint base = row * (pc.cols / 8u) + u * 4u;
    [[unroll]] for (uint i = 0; i < 4u; i++) {
        uvec4 w = hi ? wq1(base + i) : wq0(base + i);
        [[unroll]] for (uint c = 0; c < 4u; c++) {
            vec2 h = unpackHalf2x16(w[c]);
            v[8u * i + 2u * c] = h.x, v[8u * i + 2u * c + 1u] = h.y;
        }
    }
#else  // DT_Q8: d * q, as ggml's dequantize_row_q8_0
    uint base = row * (pc.cols / 16u) + u * 2u, s = q8_scale_half(row, u, pc.cols);
    uvec4 sv = hi ? sq1(s >> 3) : sq0(s >> 3);
    float d = unpackHalf2x16(sv[(s >> 1) & 3u])[s & 1u];
    [[unroll]] for (uint i = 0; i < 2u; i++) {
        uvec4 w = hi ? wq1(base + i) : wq0(base + i);
        [[unroll]] for (uint c = 0; c < 4u; c++) {
            vec4 q = i8x4(w[c]);
            [[unroll]] for (uint e = 0; e < 4u; e++) {
                precise float y = q[e] * d;
                v[16u * i + 4u * c + e] = y;
            }
        }
    }
#endif
}

// Step u (columns 32u ..) of tile g and of the tile's tokens tok0 ..: invocations 0-63
// decode a weight row each, 64-127 load x (tokens past n_tok: the last one's, not stored).
void stage(uint g, uint tok0, uint u)
{
    uint l = gl_LocalInvocationID.x;
    if (l < BM) {
        float v[32];
        unit_values(l >= HR, tile_row(g, l, HR), u, v);
        [[unroll]] for (uint j = 0; j < 32u; j++) As[l * AS + j] = float16_t(v[j]);
        return;
    }
    for (uint e = l - BM; e < BN * 8u; e += WG - BM) {
        uint t = e >> 3, c = e & 7u;
        vec4 xv = x4((pc.xrow0 + min(tok0 + t, pc.n_tok - 1u)) * (pc.cols / 4u) + u * 8u + c);
        [[unroll]] for (uint i = 0; i < 4u; i++) Bs[t * BS + 4u * c + i] = float16_t(xv[i]);
    }
}

#ifdef COOPMAT
// ---- the matrix units: fragments of 16 x 16 --------------------------------------------
// The 4 subgroups tile BM x BN as SR x SC, each FR x FC fragments: BN 64, 2 x 2 of 2 x 2;
// BN 16, 4 x 1 of 1 x 1.
const uint FC = BN == 16u ? 1u : 2u;
const uint SC = BN / (16u * FC);
const uint SR = 4u / SC;
const uint FR = BM / (16u * SR);
shared float Cs[BM * BN];  // the sums, row r, token t at r * BN + t

void tile(uint g, uint tok0)
{
    uint s = gl_SubgroupID, r0 = (s / SC) * FR * 16u, t0 = (s % SC) * FC * 16u;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[2][2];
    [[unroll]] for (uint i = 0; i < 2u; i++)
        [[unroll]] for (uint j = 0; j < 2u; j++) acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    for (uint u = 0; u < pc.cols / KB; u++) {
        barrier();  // the previous step's fragments are loaded
        stage(g, tok0, u);
        barrier();
        [[unroll]] for (uint k = 0; k < KB; k += 16u) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[2], b[2];
            [[unroll]] for (uint i = 0; i < 2u; i++)
                if (i < FR) coopMatLoadNV(a[i], As, (r0 + 16u * i) * AS + k, AS, false);
            [[unroll]] for (uint j = 0; j < 2u; j++)
                if (j < FC) coopMatLoadNV(b[j], Bs, (t0 + 16u * j) * BS + k, BS, true);
            [[unroll]] for (uint i = 0; i < 2u; i++)
                [[unroll]] for (uint j = 0; j < 2u; j++)
                    if (i < FR && j < FC) acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
        }
    }
    [[unroll]] for (uint i = 0; i < 2u; i++)
        [[unroll]] for (uint j = 0; j < 2u; j++)
            if (i < FR && j < FC) coopMatStoreNV(acc[i][j], Cs, (r0 + 16u * i) * BN + t0 + 16u * j, BN, false);
    barrier();
    uint rows = GATED ? HR : BM;
    for (uint e = gl_LocalInvocationID.x; e < rows * BN; e += WG) {
        uint r = e / BN, t = e % BN;
        store_tile_row(g, tok0 + t, r, HR, Cs[r * BN + t], GATED ? Cs[(r + HR) * BN + t] : 0.0);
    }
}
#else
// ---- the same product by FMA units: rows r and r + HR, tokens q*NT .. of the tile -------
const uint NT = BN / 4u;

void tile(uint g, uint tok0)
{
    uint l = gl_LocalInvocationID.x, r = l % HR, q = l / HR;
    float acc[2][16];
    [[unroll]] for (uint i = 0; i < 2u; i++)
        [[unroll]] for (uint t = 0; t < 16u; t++) acc[i][t] = 0.0;
    for (uint u = 0; u < pc.cols / KB; u++) {
        barrier();
        stage(g, tok0, u);
        barrier();
        for (uint k = 0; k < KB; k++) {
            float a0 = float(As[r * AS + k]), a1 = float(As[(r + HR) * AS + k]);
            [[unroll]] for (uint t = 0; t < 16u; t++) {
                if (t >= NT) break;
                float b = float(Bs[(q * NT + t) * BS + k]);
                precise float s0 = acc[0][t] + a0 * b, s1 = acc[1][t] + a1 * b;
                acc[0][t] = s0, acc[1][t] = s1;
            }
        }
    }
    [[unroll]] for (uint t = 0; t < 16u; t++) {
        if (t >= NT) break;
        uint tok = tok0 + q * NT + t;
        if (GATED) {
            store_tile_row(g, tok, r, HR, acc[0][t], acc[1][t]);
        } else {
            store_tile_row(g, tok, r, HR, acc[0][t], 0.0);
            store_tile_row(g, tok, r + HR, HR, acc[1][t], 0.0);
        }
    }
}
#endif

void main()
{
    tile(gl_WorkGroupID.z * pc.wgx + gl_WorkGroupID.x, gl_WorkGroupID.y * pc.tpw);
}
