/* engine_fixture.c — see engine_fixture.h. */
#include "engine_fixture.h"

#include <stdio.h>
#include <string.h>

#include "testutil.h"

int ef_on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    ef_result *r = user;
    if (r->n < EF_MAX_TOKENS) r->tokens[r->n++] = tok;
    if (r->text_len + len < sizeof r->text) {
        memcpy(r->text + r->text_len, text, len);
        r->text_len += len;
        r->text[r->text_len] = 0;
    }
    return 0;
}

void ef_on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    ef_result *r = user;
    r->why = why;
    if (m) r->m = *m;
    if (m && m->error) snprintf(r->error, sizeof r->error, "%s", m->error);
    r->m.error = NULL; /* valid only during the callback */
    atomic_fetch_add(&r->done, 1);
}

ember_request_desc ef_desc(const uint32_t *prompt, size_t n, uint32_t max_tokens, ef_result *r)
{
    memset(r, 0, sizeof *r);
    return (ember_request_desc){.tokens = prompt, .n_tokens = n, .max_tokens = max_tokens, .ignore_eos = 1,
                                .on_token = ef_on_token, .on_done = ef_on_done, .user = r};
}

bool ef_same_tokens(const ef_result *a, const ef_result *b, uint32_t n)
{
    return atomic_load(&a->done) == 1 && a->n == n && b->n == n &&
           memcmp(a->tokens, b->tokens, n * sizeof *a->tokens) == 0;
}

int ef_count_same(const ef_result *a, const ef_result *b, int count, uint32_t n)
{
    int same = 0;
    for (int i = 0; i < count; i++) same += ef_same_tokens(&a[i], &b[i], n);
    return same;
}

ember_engine *ef_engine(ember_model *m, ember_engine_opts o)
{
    ember_engine *e = NULL;
    ember_status s = ember_engine_create(m, &o, &e);
    CHECKF(s == EMBER_OK, "engine: %s", ember_engine_error(e));
    if (s == EMBER_OK) return e;
    ember_engine_destroy(e);
    return NULL;
}

ember_model *ef_load(const char *path, const ember_model_opts *o)
{
    ember_model *m = NULL;
    if (ember_model_load(path, o, &m) == EMBER_OK) return m;
    fprintf(stderr, "%s\n", ember_model_error(m));
    ember_model_free(m);
    return NULL;
}
