/* jinja_filters.h — `x | name(args)` and `x is name(args)` (jinja_filters.c). The
 * filters are @huggingface/jinja's, each for the kinds of value it takes there: safe,
 * tojson (indent, ensure_ascii, sort_keys, separators), list, first, last, length,
 * reverse, sort (reverse, case_sensitive, attribute), join, string, unique, upper,
 * lower, title, capitalize, trim, indent (width, first, blank), int, float, abs,
 * items, dictsort, default, replace, selectattr, rejectattr, map (attribute, default),
 * bool. Where it has none, Python's Jinja is followed: d, count, select, reject, map
 * with a filter's name, round, wordcount, batch. Tests: defined, undefined, none,
 * boolean, true, false, string, number, integer, float, iterable, sequence, mapping,
 * callable, lower, upper, odd, even, divisibleby, eq/equalto/==, ne/!=, lt/<, le/<=,
 * gt/>, ge/>=, sameas, in. Library-internal. */
#ifndef EMBER_JINJA_FILTERS_H
#define EMBER_JINJA_FILTERS_H

#include "jinja_methods.h"

/* Applies filter name[0..len) to v. called: written with parentheses (some filters
 * differ, as in @huggingface/jinja, between `x | f` and `x | f()`). */
bool ember_jinja_filter(ember_jctx *c, const char *name, size_t len, ember_jv v, bool called, const ember_jargs *a,
                        ember_jv *out);
/* Runs test name[0..len) on v with extra arguments a. */
bool ember_jinja_test(ember_jctx *c, const char *name, size_t len, ember_jv v, const ember_jargs *a, bool *out);

#endif
