/* regex.h — a JSON Schema "pattern" (an ECMA-262 regular expression) as GBNF for the text
 * of a JSON string that matches it. The subset: literals, ".", classes ([a-z], [^...],
 * \d \w \s and their complements), groups ((...), (?:...), (?<name>...)), alternation,
 * quantifiers (* + ? {m} {m,} {m,n}, lazy ones too: the same strings), and ^ / $ at the
 * ends of a branch. A pattern is not anchored unless it says so: "abc" matches any string
 * holding abc, as JSON Schema means it. Refused, naming what: backreferences,
 * lookaround, word boundaries, Unicode property escapes, and counts above 1000.
 * Library-internal; docs/grammar.md. */
#ifndef EMBER_REGEX_H
#define EMBER_REGEX_H

#include <stddef.h>

#include "common/error.h"
#include "common/strbuf.h"

/* Appends to out a GBNF expression for the contents (between the quotes) of the JSON
 * strings whose decoded text matches pattern[0..len) (UTF-8). */
ember_status ember_regex_to_gbnf(const char *pattern, size_t len, ember_sbuf *out, ember_err *err);

#endif
