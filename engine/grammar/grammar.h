/* grammar.h — GBNF grammars (llama.cpp's grammar format), parsed and checked once, then
 * shared read-only by every request that is constrained by them (grammar_match.h).
 * docs/grammar.md describes the syntax and what is refused. Library-internal. */
#ifndef EMBER_GRAMMAR_H
#define EMBER_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* A rule is a flat run of elements: alternatives, each a sequence of character classes
 * and rule references, each alternative ended by GE_ALT and the last by GE_END.
 * Repetitions and groups are rewritten into rules of their own when parsed. */
typedef enum { GE_END, GE_ALT, GE_REF, GE_CLASS } ember_gelem_kind;

typedef struct ember_gelem {
    uint32_t kind;  /* ember_gelem_kind */
    uint32_t value; /* GE_REF: the rule; GE_CLASS: the class */
} ember_gelem;

/* A set of code points: n sorted, disjoint ranges lo..hi (ranges[first ..]), or their
 * complement when negated; its ASCII members also as bits (cp of ascii[cp / 64]), as
 * masks ask about them for every byte. */
typedef struct ember_gclass {
    uint32_t first, n;
    bool negated;
    uint64_t ascii[2];
} ember_gclass;

typedef struct ember_grammar {
    ember_gelem *elems;   /* every rule's elements */
    uint32_t n_elems;
    uint32_t *rule_start; /* rule r's first element */
    char **rule_names;    /* generated rules: "name_N" after the rule they came from */
    uint32_t n_rules;
    uint32_t *ranges;     /* lo, hi pairs */
    ember_gclass *classes;
    uint32_t n_classes;
    uint32_t root;
} ember_grammar;

/* Parses GBNF text (len bytes, UTF-8) whose start rule is named root ("root" when NULL).
 * Refused, with the line, column and reason in err (EMBER_ERR_INVALID_ARG): a syntax
 * error, an undefined or missing rule, a rule defined twice, a left-recursive rule (the
 * matcher could not end its expansion), a bad escape or range. On success *out is
 * owned by the caller (ember_grammar_free). */
ember_status ember_grammar_parse(const char *text, size_t len, const char *root, ember_grammar **out,
                                 ember_err *err);
void ember_grammar_free(ember_grammar *g);

/* Whether class c holds code point cp, whether it holds any of lo..hi, and all of it. */
bool ember_grammar_class_has(const ember_grammar *g, uint32_t c, uint32_t cp);
bool ember_grammar_class_meets(const ember_grammar *g, uint32_t c, uint32_t lo, uint32_t hi);
bool ember_grammar_class_covers(const ember_grammar *g, uint32_t c, uint32_t lo, uint32_t hi);

#endif
