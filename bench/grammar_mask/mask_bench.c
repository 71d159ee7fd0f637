/* mask_bench.c — how long a grammar's token mask takes per token on a real vocabulary
 * (bench/grammar-mask.sh). A walk follows each target document the way a model would
 * write it: at every step the mask is made, then the allowed token that covers the
 * longest next piece of the document is taken. Prints p50/p99/max of the mask time, cold
 * (the first document: nothing cached) and warm (the rest), as one JSON line. A grammar
 * file ending in .json is a JSON Schema, turned into its grammar first. TRACE=1 prints
 * each mask over 300 us on stderr with what the cache did for it.
 *   mask_bench VOCAB GRAMMAR.gbnf|SCHEMA.json DOC... */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_match.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/mask_cache.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    if (b) b[n] = 0, *len = (size_t)n;
    return b;
}

static ember_vtrie_piece *read_vocab(const char *data, size_t len, uint32_t *n)
{
    ember_vtrie_piece *p = NULL;
    uint32_t cap = 0;
    *n = 0;
    for (size_t at = 0; at + 5 <= len;) {
        uint32_t l;
        memcpy(&l, data + at, 4);
        if (*n == cap) p = realloc(p, sizeof *p * (cap = cap ? cap * 2 : 1024));
        p[(*n)++] = (ember_vtrie_piece){(const uint8_t *)data + at + 5, l, (uint8_t)data[at + 4]};
        at += 5 + l;
    }
    return p;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(const char *name, double *t, size_t n)
{
    if (!n) return;
    qsort(t, n, sizeof *t, cmp);
    printf("\"%s\": {\"masks\": %zu, \"p50_us\": %.1f, \"p99_us\": %.1f, \"max_us\": %.1f}", name, n, t[n / 2],
           t[(size_t)(n * 0.99)], t[n - 1]);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: mask_bench VOCAB GRAMMAR.gbnf DOC...\n");
        return 2;
    }
    size_t vlen, glen;
    char *vdata = slurp(argv[1], &vlen), *gtext = slurp(argv[2], &glen);
    uint32_t n_vocab;
    ember_vtrie_piece *pieces = vdata ? read_vocab(vdata, vlen, &n_vocab) : NULL;
    ember_vtrie *v = NULL;
    ember_grammar *g = NULL;
    ember_gmask_cache *c = NULL;
    ember_gmask_vocab *shared = NULL;
    ember_err err = {{0}};
    size_t n = strlen(argv[2]);
    if (gtext && n > 5 && !strcmp(argv[2] + n - 5, ".json")) { /* a JSON Schema: its grammar */
        char *gbnf = NULL;
        if (ember_json_schema_to_gbnf(gtext, glen, &gbnf, &err) != EMBER_OK) {
            fprintf(stderr, "mask_bench: %s\n", err.msg);
            return 1;
        }
        free(gtext);
        gtext = gbnf, glen = strlen(gbnf);
    }
    double t0 = now_us();
    if (!pieces || !gtext || ember_vtrie_build(pieces, n_vocab, &v, &err) != EMBER_OK ||
        ember_gmask_vocab_create(v, &shared, &err) != EMBER_OK || /* with the trie, once per vocabulary */
        ember_grammar_parse(gtext, glen, NULL, &g, &err) != EMBER_OK ||
        ember_gmask_cache_create(g, v, shared, 0, &c, &err) != EMBER_OK) {
        fprintf(stderr, "mask_bench: %s\n", err.msg[0] ? err.msg : "cannot read the inputs");
        return 1;
    }
    double t_trie = now_us() - t0;
    size_t cap = 1 << 16, n_cold = 0, n_warm = 0, n_tokens = 0;
    double *cold = malloc(cap * sizeof *cold), *warm = malloc(cap * sizeof *warm);
    for (int d = 3; d < argc; d++) {
        size_t len;
        char *doc = slurp(argv[d], &len);
        ember_gmatch *m = NULL;
        if (!doc || ember_gmatch_create(g, &m, &err) != EMBER_OK) return 1;
        for (size_t at = 0;;) {
            uint32_t n_allowed;
            ember_gmask_counts k0 = ember_gmask_cache_counts(c);
            double s = now_us();
            const uint32_t *bits = ember_gmask_get(c, m, &n_allowed);
            double e = now_us() - s;
            ember_gmask_counts k1 = ember_gmask_cache_counts(c);
            if (getenv("TRACE") && e > 300)
                fprintf(stderr, "doc %d at %zu: %.0f us, %llu run, %llu derived, states %u->%u, made %llu\n", d, at, e,
                        (unsigned long long)(k1.transitions - k0.transitions), (unsigned long long)(k1.derived - k0.derived),
                        k0.states, k1.states, (unsigned long long)(k1.masks_made - k0.masks_made));
            if (!bits) return 1;
            if (d == 3 && n_cold < cap) cold[n_cold++] = e;
            else if (d > 3 && n_warm < cap) warm[n_warm++] = e;
            if (at == len) break;
            uint32_t best = UINT32_MAX, best_len = 0;
            for (uint32_t t = 0; t < n_vocab; t++)
                if (bits[t / 32] >> (t % 32) & 1 && pieces[t].len > best_len && pieces[t].len <= len - at &&
                    !memcmp(pieces[t].bytes, doc + at, pieces[t].len))
                    best = t, best_len = pieces[t].len;
            if (best == UINT32_MAX) {
                fprintf(stderr, "mask_bench: %s: no allowed token at byte %zu\n", argv[d], at);
                return 1;
            }
            ember_gmatch_accept(m, pieces[best].bytes, best_len);
            at += best_len;
            n_tokens++;
        }
        if (!ember_gmatch_complete(m)) fprintf(stderr, "mask_bench: %s: not a whole sentence\n", argv[d]);
        ember_gmatch_free(m);
        free(doc);
    }
    printf("{\"vocab\": %u, \"trie_nodes\": %u, \"trie_ms\": %.1f, \"tokens\": %zu, ", n_vocab, v->n_nodes,
           t_trie / 1e3, n_tokens);
    stats("cold", cold, n_cold);
    printf(", ");
    stats("warm", warm, n_warm);
    ember_gmask_counts k = ember_gmask_cache_counts(c);
    printf(", \"masks_made\": %llu, \"masks_found\": %llu, \"masks_shared\": %llu, \"transitions\": %llu, "
           "\"derived\": %llu, \"states\": %u, \"cache_mib\": %.1f}\n",
           (unsigned long long)k.masks_made, (unsigned long long)k.masks_found, (unsigned long long)k.masks_shared,
           (unsigned long long)k.transitions, (unsigned long long)k.derived, k.states, k.bytes / 1048576.0);
    return 0;
}
