/* utf8.h — what the server writes into JSON is valid UTF-8 (utf8.c): a prompt echoed with
 * invalid bytes, a model name or stop string from a request, text cut mid-character. A
 * client's JSON parser (Python's json.loads, JavaScript's) fails on anything else. */
#ifndef EMBER_SERVER_UTF8_H
#define EMBER_SERVER_UTF8_H

#include <stddef.h>

/* s (malloc'ed, NUL-terminated) as valid UTF-8: s itself when it is, else a malloc'ed copy
 * with each maximal ill-formed subpart replaced by U+FFFD (as Python's and llama.cpp's
 * decoders do) and s freed. NULL when s is NULL or memory ran out (s freed). */
char *srv_utf8_valid(char *s);
/* The length of s[0..n) without a valid but unfinished character at its end: what a stream
 * may send now, the rest waiting for the bytes that complete it. */
size_t srv_utf8_whole(const char *s, size_t n);

#endif
