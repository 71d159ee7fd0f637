/* input.c — see input.h. Rows that take a quantizer through its cases: signed and
 * one-signed data, weights' small spread, outliers, zero blocks, large values. */
#include "input.h"

#include <stdint.h>

/* splitmix64, as tests/testutil.c's tu_next (this file links without it). */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
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
            default: row[i] = 3000.0f * u; break;                                    /* large */
            }
        }
    }
}
