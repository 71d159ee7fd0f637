/* input.h — the rows every quantization reference vector is made from (input.c): the
 * generator (gen.c, linked against llama.cpp's libggml) and test_quant_types both make
 * them, so only ggml's outputs are committed (tests/data/quant, README.md there). */
#ifndef EMBER_QV_INPUT_H
#define EMBER_QV_INPUT_H

#include <stddef.h>

#define QV_ROWS 7
#define QV_COLS 512 /* two of the K-quants' 256-value super-blocks per row */

/* Fills x[QV_ROWS * QV_COLS] with the rows described in input.c. */
void qv_input(float *x);

#endif
