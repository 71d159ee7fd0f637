/* quant_k.c — the K-quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (quant_k.h), operation for
 * operation as ggml's dequantize_row_q*_K and quantize_row_q*_K_ref, so that Ember reads
 * llama.cpp's files to the bit and writes the bytes llama.cpp writes without an
 * importance matrix.
 *
 * Layouts (ggml-common.h): a super-block of 256 values with little-endian f16 fields d
 * (and dmin), cut into sub-blocks of 16 values (Q2_K, Q3_K, Q6_K) or 32 (Q4_K, Q5_K),
 * each with a quantized scale sc (and min m):
 *   Q2_K {scales[16]; qs[64]; d; dmin}            84 bytes  value = d*sc * q - dmin*m
 *        scales[j] = sc | m << 4; q: 2 bits in qs
 *   Q3_K {hmask[32]; qs[64]; scales[12]; d}      110 bytes  value = d*(sc - 32) * (q - 4)
 *        q: 2 low bits in qs, the third in hmask; sc: 6 bits, see below
 *   Q4_K {d; dmin; scales[12]; qs[128]}          144 bytes  value = d*sc * q - dmin*m
 *        q: 4 bits in qs; sc and m: 6 bits each, see below
 *   Q5_K {d; dmin; scales[12]; qh[32]; qs[128]}  176 bytes  as Q4_K, q's fifth bit in qh
 *   Q6_K {ql[128]; qh[64]; scales[16]; d}        210 bytes  value = d*sc * (q - 32)
 *        q: 4 low bits in ql, 2 high bits in qh; sc: int8
 *
 * The codes lie in bit planes: a plane of `bits`-wide fields and span s gives value v
 * the field at byte s * (v / (s * 8/bits)) + v % s, bit bits * (v / s % (8/bits)):
 *   2 bits, span 32: qs of Q2_K and Q3_K, qh of Q6_K
 *   4 bits, span 32: qs of Q4_K and Q5_K;  4 bits, span 64: ql of Q6_K
 *   1 bit,  span 32: hmask of Q3_K, qh of Q5_K (value v: bit v / 32 of byte v % 32)
 *
 * 6-bit scales. Q3_K's 12 bytes: the low 4 bits of sc j in byte j % 8 (low half for
 * j < 8, high half after), its top 2 bits in byte 8 + j % 4 at bit 2 * (j / 4).
 * Q4_K's and Q5_K's 12 bytes (ggml's get_scale_min_k4), for i < 4: byte i = sc i and
 * byte 4 + i = m i in the low 6 bits; byte 8 + i = the low nibbles of sc 4+i and m 4+i;
 * the top 2 bits of sc 4+i and m 4+i in bits 6-7 of bytes i and 4 + i. */
#include "quant_k.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "floats.h"

#define QK_K 256
/* ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it is quantized as 0 */
#define GROUP_MAX_EPS 1e-15f

static float f16(const uint8_t *p) { return ember_f16_to_f32(ember_le16(p)); }
static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- bit planes and packed scales --------------------------------------------------- */

static void put_field(uint8_t *p, int v, int bits, int span, int code)
{
    int per = 8 / bits;
    p[span * (v / (span * per)) + v % span] |= (uint8_t)((code & ((1 << bits) - 1)) << (bits * (v / span % per)));
}

/* One plane's fields (bits wide, span as in the header), shifted left by shift, or'd
 * into code: a plane at a time and without divisions, since this runs for every block
 * a GPU upload lays out anew. */
static void unpack_plane(const uint8_t *p, int bits, int span, int shift, int *code)
{
    int per = 8 / bits, mask = (1 << bits) - 1;
    for (int base = 0; base < QK_K; base += span * per, p += span)
        for (int j = 0; j < span; j++)
            for (int k = 0; k < per; k++) code[base + span * k + j] |= (p[j] >> (bits * k) & mask) << shift;
}

/* A super-block's codes: lo_bits from the planes at lo, and when hi is given hi_bits
 * more above them from the planes at hi (span 32 for every type). */
static void unpack_codes(const uint8_t *lo, int lo_bits, int lo_span, const uint8_t *hi, int hi_bits, int *code)
{
    memset(code, 0, QK_K * sizeof *code);
    unpack_plane(lo, lo_bits, lo_span, 0, code);
    if (hi) unpack_plane(hi, hi_bits, 32, lo_bits, code);
}

static void pack_codes(const uint8_t *L, uint8_t *lo, int lo_bits, int lo_span, uint8_t *hi, int hi_bits)
{
    memset(lo, 0, (size_t)(QK_K * lo_bits / 8));
    if (hi) memset(hi, 0, (size_t)(QK_K * hi_bits / 8));
    for (int v = 0; v < QK_K; v++) {
        put_field(lo, v, lo_bits, lo_span, L[v]);
        if (hi) put_field(hi, v, hi_bits, 32, L[v] >> lo_bits);
    }
}

/* Q3_K's sixteen 6-bit scales. */
static void q3_scales_get(const uint8_t *s, int *sc)
{
    for (int j = 0; j < 16; j++) sc[j] = (s[j % 8] >> (j < 8 ? 0 : 4) & 0xf) | (s[8 + j % 4] >> (2 * (j / 4)) & 3) << 4;
}

static void q3_scales_put(const int *sc, uint8_t *s)
{
    memset(s, 0, 12);
    for (int j = 0; j < 16; j++) {
        s[j % 8] |= (uint8_t)((sc[j] & 0xf) << (j < 8 ? 0 : 4));
        s[8 + j % 4] |= (uint8_t)((sc[j] >> 4) << (2 * (j / 4)));
    }
}

/* Q4_K's and Q5_K's eight 6-bit scales and mins. */
static void k4_get(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63, *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xf) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

static void k4_put(const uint8_t *sc, const uint8_t *m, uint8_t *s)
{
    for (int i = 0; i < 4; i++) {
        s[i] = (uint8_t)(sc[i] | (sc[i + 4] >> 4) << 6);
        s[i + 4] = (uint8_t)(m[i] | (m[i + 4] >> 4) << 6);
        s[i + 8] = (uint8_t)((sc[i + 4] & 0xf) | (m[i + 4] & 0xf) << 4);
    }
}

/* ---- decoding ----------------------------------------------------------------------- */

/* value v = dl * (code - offset) - ml with its sub-block's dl and ml: ggml rounds the
 * product, then the difference (no ml: the product only). */
static void scale_codes(const int *code, int offset, int sub, const float *dl, const float *ml, float *dst)
{
    for (int v = 0; v < QK_K; v++) {
        float y = dl[v / sub] * (float)(code[v] - offset);
        dst[v] = ml ? y - ml[v / sub] : y;
    }
}

void ember_q2_k_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 84, dst += QK_K) {
        float d = f16(b + 80), dmin = f16(b + 82), dl[16], ml[16];
        for (int j = 0; j < 16; j++) dl[j] = d * (float)(b[j] & 0xf), ml[j] = dmin * (float)(b[j] >> 4);
        int code[QK_K];
        unpack_codes(b + 16, 2, 32, NULL, 0, code);
        scale_codes(code, 0, 16, dl, ml, dst);
    }
}

void ember_q3_k_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 110, dst += QK_K) {
        float d = f16(b + 108), dl[16];
        int sc[16], code[QK_K];
        q3_scales_get(b + 96, sc);
        for (int j = 0; j < 16; j++) dl[j] = d * (float)(sc[j] - 32);
        unpack_codes(b + 32, 2, 32, b, 1, code);
        scale_codes(code, 4, 16, dl, NULL, dst);
    }
}

/* Q4_K and Q5_K: qs at b + 16 + qh_bytes, the fifth bits (if any) at b + 16. */
static void decode_scale_min(const uint8_t *b, int qh_bytes, float *dst)
{
    float d = f16(b), dmin = f16(b + 2), dl[8], ml[8];
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k4_get(b + 4, j, &sc, &m);
        dl[j] = d * (float)sc, ml[j] = dmin * (float)m;
    }
    int code[QK_K];
    unpack_codes(b + 16 + qh_bytes, 4, 32, qh_bytes ? b + 16 : NULL, 1, code);
    scale_codes(code, 0, 32, dl, ml, dst);
}

void ember_q4_k_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 144, dst += QK_K) decode_scale_min(b, 0, dst);
}

void ember_q5_k_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 176, dst += QK_K) decode_scale_min(b, 32, dst);
}

void ember_q6_k_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 210, dst += QK_K) {
        float d = f16(b + 208), dl[16];
        for (int j = 0; j < 16; j++) dl[j] = d * (float)(int8_t)b[192 + j];
        int code[QK_K];
        unpack_codes(b, 4, 64, b + 128, 2, code);
        scale_codes(code, 32, 16, dl, NULL, dst);
    }
}

/* ---- encoding: ggml's helpers --------------------------------------------------------- */

/* Round to nearest, ties to even, as ggml: adding 1.5 * 2^23 leaves the rounded value in
 * the low mantissa bits (|f| < 2^22). */
static int nearest_int(float f)
{
    float v = f + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* The value of largest magnitude, sign kept (the first of equals); *amax its magnitude. */
static float signed_absmax(const float *x, int n, float *amax)
{
    float max = 0.0f;
    *amax = 0.0f;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > *amax) *amax = fabsf(x[i]), max = x[i];
    return max;
}

/* The largest value, or 0 when none is positive. */
static float largest(const float *x, int n)
{
    float max = 0.0f;
    for (int i = 0; i < n; i++)
        if (x[i] > max) max = x[i];
    return max;
}

/* Weighted error of codes L under value = scale * l + min: absolute or squared. */
static float fit_error(int n, const float *x, const float *w, const uint8_t *L, float scale, float min, bool mad)
{
    float err = 0.0f;
    for (int i = 0; i < n; i++) {
        float diff = scale * (float)L[i] + min - x[i];
        err += w[i] * (mad ? fabsf(diff) : diff * diff);
    }
    return err;
}

/* ggml's make_qkx2_quants: codes 0..nmax and a scale and min (min <= 0, returned negated
 * in *the_min) for a group, the best in weighted error of the plain max - min fit and
 * nstep + 1 least-squares fits from trial scales (nmax + rmin + rdelta * is) / range. */
static float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                           float rmin, float rdelta, int nstep, bool mad)
{
    float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min), scale = 1 / iscale;
    for (int i = 0; i < n; i++) L[i] = (uint8_t)clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
    float best = fit_error(n, x, w, L, scale, min, mad);
    uint8_t aux[32];
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            aux[i] = (uint8_t)l;
            sum_l += w[i] * (float)l;
            sum_l2 += w[i] * (float)l * (float)l;
            sum_xl += w[i] * (float)l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0)) continue;
        float s = (sum_w * sum_xl - sum_x * sum_l) / D, m = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (m > 0) m = 0, s = sum_xl / sum_l2; /* a minimum must not be positive */
        float err = fit_error(n, x, w, aux, s, m, mad);
        if (err < best) {
            memcpy(L, aux, (size_t)n);
            best = err, scale = s, min = m;
        }
    }
    *the_min = -min;
    return scale;
}

/* Codes l = nearest(iscale * x) in -nmax..nmax-1, stored l + nmax in L, and the sums of
 * x^2-weighted l * x and l^2 that a least-squares scale is made of. */
static void weighted_sums(int n, int nmax, const float *x, float iscale, uint8_t *L, float *sumlx, float *suml2)
{
    *sumlx = *suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        int l = clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (uint8_t)(l + nmax);
        float w = x[i] * x[i];
        *sumlx += w * x[i] * (float)l;
        *suml2 += w * (float)l * (float)l;
    }
}

/* ggml's make_qx_quants with x^2 weights (rmse_type 1): codes 0..2*nmax-1 around nmax
 * and a scale of either sign, the best least-squares fit of 19 trial scales
 * -(nmax + 0.1 * is) / max. An all-zero group gets codes 0, scale 0. */
static float fit_symmetric(int n, int nmax, const float *x, uint8_t *L)
{
    float amax, max = signed_absmax(x, n, &amax);
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float sumlx, suml2;
    weighted_sums(n, nmax, x, (float)-nmax / max, L, &sumlx, &suml2);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f, best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        uint8_t aux[32];
        weighted_sums(n, nmax, x, -((float)nmax + 0.1f * (float)is) / max, aux, &sumlx, &suml2);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            memcpy(L, aux, (size_t)n);
            scale = sumlx / suml2, best = scale * sumlx;
        }
    }
    return scale;
}

/* ggml's make_q3_quants with do_rmse: codes from -nmax / max, then up to 5 passes that
 * move single codes to where they raise (sum w l x)^2 / sum w l^2, weights x^2; codes
 * stored + nmax. An all-zero group gets codes 0, scale 0. */
static float fit_q3(int n, int nmax, const float *x, uint8_t *L)
{
    float amax, max = signed_absmax(x, n, &amax);
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float sumlx, suml2;
    int l[32];
    weighted_sums(n, nmax, x, (float)-nmax / max, L, &sumlx, &suml2);
    for (int i = 0; i < n; i++) l[i] = L[i] - nmax;
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i], slx = sumlx - w * x[i] * (float)l[i];
            if (!(slx > 0)) continue;
            float sl2 = suml2 - w * (float)l[i] * (float)l[i];
            int nl = clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (nl == l[i]) continue;
            slx += w * x[i] * (float)nl;
            sl2 += w * (float)nl * (float)nl;
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) l[i] = nl, sumlx = slx, suml2 = sl2, changed++;
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (uint8_t)(l[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* The final codes, against the stored (f16-rounded, quantized) scale d and min dm:
 * nearest((x + dm) / d) in 0..nmax. */
static void requantize_min(const float *x, int n, float d, float dm, int nmax, uint8_t *L)
{
    for (int i = 0; i < n; i++) L[i] = (uint8_t)clamp(nearest_int((x[i] + dm) / d), 0, nmax);
}

/* The same for the symmetric types: nearest(x / d) in -half..half-1, stored + half. */
static void requantize_symmetric(const float *x, int n, float d, int half, uint8_t *L)
{
    for (int i = 0; i < n; i++) L[i] = (uint8_t)(clamp(nearest_int(x[i] / d), -half, half - 1) + half);
}

/* ---- encoding: the types -------------------------------------------------------------- */

static void q2_k_block(const float *x, uint8_t *b)
{
    uint8_t L[QK_K], *sc = b;
    float scale[16], min[16], w[16];
    for (int j = 0; j < 16; j++) {
        for (int i = 0; i < 16; i++) w[i] = fabsf(x[16 * j + i]);
        scale[j] = fit_scale_min(16, 3, x + 16 * j, w, L + 16 * j, &min[j], -0.5f, 0.1f, 15, true);
    }
    /* 4-bit scales and mins against the largest of each (no clamp: none exceeds 15) */
    float max_scale = largest(scale, 16), max_min = largest(min, 16);
    memset(sc, 0, 16);
    if (max_scale > 0)
        for (int j = 0; j < 16; j++) sc[j] = (uint8_t)nearest_int(15.0f / max_scale * scale[j]);
    if (max_min > 0)
        for (int j = 0; j < 16; j++) sc[j] |= (uint8_t)((unsigned)nearest_int(15.0f / max_min * min[j]) << 4);
    ember_put_le16(b + 80, ember_f32_to_f16(max_scale > 0 ? max_scale / 15.0f : 0.0f));
    ember_put_le16(b + 82, ember_f32_to_f16(max_min > 0 ? max_min / 15.0f : 0.0f));
    float d = f16(b + 80), dmin = f16(b + 82);
    for (int j = 0; j < 16; j++) {
        float dl = d * (float)(sc[j] & 0xf);
        if (dl != 0.0f) requantize_min(x + 16 * j, 16, dl, dmin * (float)(sc[j] >> 4), 3, L + 16 * j);
    }
    pack_codes(L, b + 16, 2, 32, NULL, 0);
}

static void q3_k_block(const float *x, uint8_t *b)
{
    uint8_t L[QK_K];
    float scale[16], amax;
    for (int j = 0; j < 16; j++) scale[j] = fit_q3(16, 4, x + 16 * j, L + 16 * j);
    /* 6-bit signed scales, the largest in magnitude at -32 */
    float max_scale = signed_absmax(scale, 16, &amax), iscale = max_scale != 0.0f ? -32.0f / max_scale : 0.0f;
    int sc[16] = {0};
    if (max_scale != 0.0f) /* ggml keeps nearest_int's result in an int8 before clamping */
        for (int j = 0; j < 16; j++) sc[j] = clamp((int8_t)nearest_int(iscale * scale[j]), -32, 31) + 32;
    q3_scales_put(sc, b + 96);
    ember_put_le16(b + 108, ember_f32_to_f16(max_scale != 0.0f ? 1 / iscale : 0.0f));
    float d = f16(b + 108);
    for (int j = 0; j < 16; j++) {
        float dl = d * (float)(sc[j] - 32);
        if (dl != 0.0f) requantize_symmetric(x + 16 * j, 16, dl, 4, L + 16 * j);
    }
    pack_codes(L, b + 32, 2, 32, b, 1);
}

/* A 6-bit code of a sub-block's scale or min: ggml keeps nearest_int's result in a
 * uint8 before capping it at 63. */
static uint8_t code6(float f)
{
    uint8_t c = (uint8_t)nearest_int(f);
    return c < 63 ? c : 63;
}

/* Q4_K and Q5_K: codes 0..nmax in L and the scales at b (d, dmin, scales[12]); the
 * weights of each sub-block's fit are its rms plus |x|. */
static void encode_scale_min(const float *x, uint8_t *b, int nmax, float rmin, int nstep, uint8_t *L)
{
    float scale[8], min[8], w[32];
    for (int j = 0; j < 8; j++) {
        const float *xj = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int i = 0; i < 32; i++) sum_x2 += xj[i] * xj[i];
        float av_x = sqrtf(sum_x2 / 32);
        for (int i = 0; i < 32; i++) w[i] = av_x + fabsf(xj[i]);
        scale[j] = fit_scale_min(32, nmax, xj, w, L + 32 * j, &min[j], rmin, 0.1f, nstep, false);
    }
    float max_scale = largest(scale, 8), max_min = largest(min, 8);
    float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f, inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; j++) sc[j] = code6(inv_scale * scale[j]), m[j] = code6(inv_min * min[j]);
    k4_put(sc, m, b + 4);
    ember_put_le16(b, ember_f32_to_f16(max_scale / 63.0f));
    ember_put_le16(b + 2, ember_f32_to_f16(max_min / 63.0f));
    float d = f16(b), dmin = f16(b + 2);
    for (int j = 0; j < 8; j++) {
        float dl = d * (float)sc[j];
        if (dl != 0.0f) requantize_min(x + 32 * j, 32, dl, dmin * (float)m[j], nmax, L + 32 * j);
    }
}

static void q6_k_block(const float *x, uint8_t *b)
{
    uint8_t L[QK_K];
    float scale[16], amax;
    for (int j = 0; j < 16; j++) scale[j] = fit_symmetric(16, 32, x + 16 * j, L + 16 * j);
    float max_scale = signed_absmax(scale, 16, &amax);
    if (amax < GROUP_MAX_EPS) { /* all zero, d = +0 */
        memset(b, 0, 210);
        return;
    }
    /* int8 scales, the largest in magnitude at -128 */
    float iscale = -128.0f / max_scale;
    ember_put_le16(b + 208, ember_f32_to_f16(1 / iscale));
    int8_t sc[16];
    for (int j = 0; j < 16; j++) {
        int l = nearest_int(iscale * scale[j]);
        sc[j] = (int8_t)(l < 127 ? l : 127);
        b[192 + j] = (uint8_t)sc[j];
    }
    float d = f16(b + 208);
    for (int j = 0; j < 16; j++) {
        float dl = d * (float)sc[j];
        if (dl != 0.0f) requantize_symmetric(x + 16 * j, 16, dl, 32, L + 16 * j);
    }
    pack_codes(L, b, 4, 64, b + 128, 2);
}

void ember_q2_k_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += 84, src += QK_K) q2_k_block(src, b);
}

void ember_q3_k_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += 110, src += QK_K) q3_k_block(src, b);
}

void ember_q4_k_from_float(const float *src, void *dst, size_t n)
{
    uint8_t L[QK_K];
    for (uint8_t *b = dst; n--; b += 144, src += QK_K) {
        encode_scale_min(src, b, 15, -1.0f, 20, L);
        pack_codes(L, b + 16, 4, 32, NULL, 0);
    }
}

void ember_q5_k_from_float(const float *src, void *dst, size_t n)
{
    uint8_t L[QK_K];
    for (uint8_t *b = dst; n--; b += 176, src += QK_K) {
        encode_scale_min(src, b, 31, -0.5f, 15, L);
        pack_codes(L, b + 48, 4, 32, b + 16, 1);
    }
}

void ember_q6_k_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += 210, src += QK_K) q6_k_block(src, b);
}
