/* hash.c — see hash.h. Each 8-byte word is mixed in with a multiply and a rotation
 * (the shape of wyhash/xxhash's inner step), the tail byte by byte, the length last, and
 * a final avalanche so that every input bit reaches every output bit. */
#include <string.h>

#include "hash.h"

static uint64_t rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }

static uint64_t mix(uint64_t h, uint64_t w)
{
    return rotl(h ^ (w * 0x87C37B91114253D5ull), 31) * 0x4CF5AD432745937Full;
}

uint64_t ember_hash64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = mix(h, w);
    }
    uint64_t tail = 0;
    for (size_t k = 0; i + k < n; k++) tail |= (uint64_t)b[i + k] << (8 * k);
    h = mix(h, tail ^ ((uint64_t)n << 56));
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    return h;
}
