/* hash.h — one 64-bit hash of bytes for fingerprints and checksums (hash.c): not
 * cryptographic (it finds accidents — a truncated file, a flipped bit, another model —
 * not forgeries), fast enough for a state of hundreds of megabytes (8 bytes a step). */
#ifndef EMBER_HASH_H
#define EMBER_HASH_H

#include <stddef.h>
#include <stdint.h>

#define EMBER_HASH_SEED 0x9E3779B97F4A7C15ull

/* The hash of p[0..n) from h (EMBER_HASH_SEED to start). Calls chain: the hash of parts
 * a, b is ember_hash64(ember_hash64(seed, a), b), which differs from that of a followed
 * by b in one call (each call mixes in its length). */
uint64_t ember_hash64(uint64_t h, const void *p, size_t n);

#endif
