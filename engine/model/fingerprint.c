/* fingerprint.c — see fingerprint.h. */
#include "common/hash.h"
#include "fingerprint.h"

#define SAMPLE 64

uint64_t ember_gguf_fingerprint(const ember_gguf *g)
{
    uint64_t h = ember_hash64(EMBER_HASH_SEED, g->map, g->data_offset);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ember_gguf_tensor *t = &g->tensors[i];
        const unsigned char *d = t->data;
        uint64_t n = t->nbytes < SAMPLE ? t->nbytes : SAMPLE;
        uint64_t at[3] = {0, (t->nbytes - n) / 2, t->nbytes - n};
        for (int k = 0; k < 3; k++) h = ember_hash64(h, d + at[k], n);
    }
    return h;
}
