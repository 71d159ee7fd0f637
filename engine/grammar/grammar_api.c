/* grammar_api.c — the public grammar calls of ember.h: a JSON Schema's grammar, and a
 * text checked against a grammar, byte by byte so the refusal's place is known. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "ember.h"
#include "grammar.h"
#include "grammar_match.h"
#include "json_schema.h"

static void copy_error(const ember_err *e, char *err, size_t cap)
{
    if (err && cap) snprintf(err, cap, "%s", e->msg);
}

ember_status ember_json_schema_to_grammar(const char *schema, char *buf, size_t cap, size_t *len, char *err,
                                          size_t err_cap)
{
    ember_err e = {{0}};
    char *gbnf = NULL;
    if (err && err_cap) err[0] = 0;
    if (!schema || !len || (cap && !buf)) {
        ember_fail(&e, EMBER_ERR_INVALID_ARG, "ember_json_schema_to_grammar: schema, len and buf are required");
        copy_error(&e, err, err_cap);
        return EMBER_ERR_INVALID_ARG;
    }
    ember_status s = ember_json_schema_to_gbnf(schema, strlen(schema), &gbnf, &e);
    if (s != EMBER_OK) {
        copy_error(&e, err, err_cap);
        return s;
    }
    *len = strlen(gbnf);
    if (cap) snprintf(buf, cap, "%s", gbnf);
    ember_free(gbnf);
    return EMBER_OK;
}

ember_status ember_grammar_check(const char *grammar, const char *root, const char *text, size_t len,
                                 ember_grammar_match *match, char *err, size_t err_cap)
{
    ember_err e = {{0}};
    ember_grammar *g = NULL;
    ember_gmatch *m = NULL;
    if (err && err_cap) err[0] = 0;
    if (!grammar || !match || (len && !text)) {
        ember_fail(&e, EMBER_ERR_INVALID_ARG, "ember_grammar_check: grammar, text and match are required");
        copy_error(&e, err, err_cap);
        return EMBER_ERR_INVALID_ARG;
    }
    ember_status s = ember_grammar_parse(grammar, strlen(grammar), root, &g, &e);
    if (s == EMBER_OK) s = ember_gmatch_create(g, &m, &e);
    if (s == EMBER_OK) {
        size_t i = 0;
        while (i < len && ember_gmatch_accept(m, (const uint8_t *)text + i, 1)) i++;
        *match = (ember_grammar_match){i == len && ember_gmatch_complete(m), i};
    }
    copy_error(&e, err, err_cap);
    ember_gmatch_free(m);
    ember_grammar_free(g);
    return s;
}
