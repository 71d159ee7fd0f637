/* decimal_range.h — GBNF for the decimal numbers between two bounds, written the way JSON
 * writes a number without an exponent: an optional "-", an integer part without leading
 * zeros, and an optional fraction of 1-16 digits. A JSON Schema's minimum, maximum,
 * exclusiveMinimum and exclusiveMaximum on a "number" become one (json_schema.c); the
 * digits are compared as decimals, never as binary floats. Library-internal. */
#ifndef EMBER_DECIMAL_RANGE_H
#define EMBER_DECIMAL_RANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/strbuf.h"

/* A bound, exactly: sign, integer part, fraction digits (no trailing zeros), and whether
 * the bound itself is in the range. */
typedef struct ember_decimal {
    bool neg;
    uint64_t ipart;
    char frac[32];
    bool inclusive;
} ember_decimal;

/* Appends GBNF alternatives for the natural numbers lo..hi (hi UINT64_MAX: up to 16
 * digits) without leading zeros. */
void ember_naturals(ember_sbuf *out, uint64_t lo, uint64_t hi);

/* Reads a JSON number's text (exponents too) into *d; false when it has more than 15
 * integer digits or 31 fraction digits. */
bool ember_decimal_parse(const char *text, ember_decimal *d);

/* Appends a GBNF expression for the numbers in lo..hi (NULL: that side open) to out;
 * false when the range is empty. */
bool ember_decimal_range(ember_sbuf *out, const ember_decimal *lo, const ember_decimal *hi);

#endif
