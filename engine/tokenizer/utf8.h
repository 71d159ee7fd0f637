/* utf8.h — UTF-8 helpers for the tokenizer (utf8.c). Library-internal. */
#ifndef EMBER_UTF8_H
#define EMBER_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length of the UTF-8 character at s[0..n), or 1 for a byte that does not start a
 * well-formed lead + continuation bytes (lenient: overlong forms pass). */
size_t ember_utf8_len(const unsigned char *s, size_t n);

typedef enum { EMBER_UTF8_OK, EMBER_UTF8_INVALID, EMBER_UTF8_TRUNCATED } ember_utf8_result;

/* Strict decoding of the character at s[0..n) (n >= 1). OK: *len bytes hold code point
 * *cp. INVALID: *len bytes are the maximal ill-formed subpart (Unicode's "maximal
 * subpart" rule), to be replaced by one U+FFFD. TRUNCATED: all n bytes are a valid but
 * unfinished prefix of a character. */
ember_utf8_result ember_utf8_decode(const unsigned char *s, size_t n, size_t *len, uint32_t *cp);
/* Writes the UTF-8 form of cp (< 0x110000) to out; returns its length (1..4). */
size_t ember_utf8_encode(uint32_t cp, char out[4]);

#endif
