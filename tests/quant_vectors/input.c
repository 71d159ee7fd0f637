/* input.c — see input.h. Rows that take a quantizer through its cases: signed and
 * one-signed data, weights' small spread, outliers, zero blocks, large values, powers of
 * two and ties. */
#include "input.h"

#include <math.h>
#include <stdint.h>

/* splitmix64, as tests/testutil.c's tu_next (this file links without it). */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Row 6: blocks of 32 whose largest magnitude is a power of two 2^e or the float just
 * below it (where log2f may round up to e: MXFP4's scale byte), e from -12 to 11, and
 * values halfway between the levels such a scale gives (ties between two codes). */
static float edge(int i)
{
    static const float mids[8] = {0.0625f, 0.1875f, 0.3125f, 0.4375f, 0.625f, 0.875f, 1.25f, 0.0f};
    int b = i / 32, j = i % 32;
    float base = (float)ldexp(1.0, b % 24 - 12);
    if (j == 0) return b % 2 ? base : nextafterf(base, 0.0f);
    return (j % 2 ? -1.0f : 1.0f) * mids[j % 8] * base;
}

/* Uniform in [-1, 1), 24 bits. */
static float unit(uint64_t *s) { return (float)((next(s) >> 40) * (2.0 / 16777216.0) - 1.0); }

void qv_input(float *x)
{
    uint64_t s = 2026;
    for (int r = 0; r < QV_ROWS; r++) {
        float *row = x + r * QV_COLS;
        for (int i = 0; i < QV_COLS; i++) {
            float u = unit(&s);
            switch (r) {
            case 0: row[i] = u; break;                                               /* signed */
            case 1: row[i] = 0.02f * (u + unit(&s) + unit(&s) + unit(&s)); break;    /* a weight's spread */
            case 2: row[i] = i % 37 == 5 ? 30.0f * u : u; break;                     /* outliers */
            case 3: row[i] = 1.0f + u; break;                                        /* one sign */
            case 4: row[i] = i < 256 ? 0.0f : i % 5 == 0 ? u : 0.0f; break;        /* zero blocks, sparse */
            case 6: row[i] = edge(i); break;                                         /* powers of two, ties */
            default: row[i] = 3000.0f * u; break;                                    /* large */
            }
        }
    }
}
