/* jinja_ops.h — the operators (jinja_ops.c): arithmetic, comparison, `~`, `in`, unary
 * signs, `a.b` and `a[b]`, slices; each with @huggingface/jinja's rules for which
 * kinds meet (a string `+` anything concatenates; integer arithmetic stays integer;
 * `undefined ~ x` is x; none in arithmetic is a failure). `and`, `or` and `not` are the
 * evaluator's (they short-circuit). Library-internal. */
#ifndef EMBER_JINJA_OPS_H
#define EMBER_JINJA_OPS_H

#include "jinja_ast.h"
#include "jinja_value.h"

/* l op r for every ember_jop but JOP_AND and JOP_OR. */
bool ember_jinja_binary(ember_jctx *c, int op, ember_jv l, ember_jv r, ember_jv *out);
/* -v or +v ('-' or '+'). */
bool ember_jinja_sign(ember_jctx *c, int sign, ember_jv v, ember_jv *out);
/* obj.prop / obj[prop]: a dict's member (or method), a list's or string's item
 * (negative indexes count from the end) or method; undefined when there is none. */
bool ember_jinja_member(ember_jctx *c, ember_jv obj, ember_jv prop, ember_jv *out);
/* obj[start:stop:step] of a list or string (undefined parts left out). */
bool ember_jinja_slice(ember_jctx *c, ember_jv obj, ember_jv start, ember_jv stop, ember_jv step, ember_jv *out);
/* The code points of a string as a list of one-character strings. */
bool ember_jstr_chars(ember_jctx *c, const ember_jstr *s, ember_jv *out);

#endif
