/* engine_fixture.h — what the engine test programs (test_engine, test_engine_threads,
 * test_faults, test_host_device, test_profile, test_kv_types) share: an engine made or
 * failed as a check, a request's outcome as its two callbacks collect it (tokens, text,
 * finish reason, metrics, done calls), the description of a request that fills one, and
 * the comparison of two outcomes' tokens.
 * The callbacks may run on the engine's worker thread: done is atomic, and it is counted
 * after everything else is written, so a thread that sees it may read the rest. */
#ifndef EMBER_ENGINE_FIXTURE_H
#define EMBER_ENGINE_FIXTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

#define EF_MAX_TOKENS 64   /* tokens kept; a longer request counts only these */
#define EF_TEXT_CAP 4096   /* bytes of text kept (a piece that does not fit is dropped) */

/* What one request gave. Empty (all zero) before it is submitted: ef_desc empties it. */
typedef struct ef_result {
    uint32_t tokens[EF_MAX_TOKENS];
    uint32_t n;                 /* tokens kept, at most EF_MAX_TOKENS */
    char text[EF_TEXT_CAP];     /* the streamed text, NUL-terminated */
    size_t text_len;
    ember_finish why;           /* from the done callback */
    ember_request_metrics m;    /* from the done callback (m.error NULL: see error) */
    char error[256];            /* the metrics' error, copied; "" when there was none */
    atomic_int done;            /* done callbacks so far (1 when the request ended) */
} ef_result;

/* The token callback (user: an ef_result): keeps the token and its text; never stops. */
int ef_on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len);
/* The done callback (user: an ef_result): keeps why and the metrics, then counts done. */
void ef_on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m);

/* Empties r and returns a request for the n tokens of prompt, at most max_tokens tokens,
 * EOS ignored, with both callbacks collecting into r. */
ember_request_desc ef_desc(const uint32_t *prompt, size_t n, uint32_t max_tokens, ef_result *r);

/* a ended exactly once, and a and b both hold exactly the same n tokens. */
bool ef_same_tokens(const ef_result *a, const ef_result *b, uint32_t n);
/* How many of the count pairs a[i], b[i] are ef_same_tokens over n tokens. */
int ef_count_same(const ef_result *a, const ef_result *b, int count, uint32_t n);

/* An engine of m with options o; NULL, with the engine's message as a failed check, when
 * it cannot be made. */
ember_engine *ef_engine(ember_model *m, ember_engine_opts o);

/* The model at path loaded with o; NULL, with its error on stderr and nothing left
 * loaded, when there is no Vulkan device for it (the caller skips). */
ember_model *ef_load(const char *path, const ember_model_opts *o);

#endif
