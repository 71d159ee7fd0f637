/* jinja_parse.h — tokens to the tree of jinja_ast.h (jinja_parse.c): a recursive-descent
 * parser with @huggingface/jinja's grammar and operator precedence (loosest first: `x
 * if c else y`, or, and, not, comparisons and in, + - ~, * / // %, **, is, |filter,
 * unary sign, calls and members). Library-internal. */
#ifndef EMBER_JINJA_PARSE_H
#define EMBER_JINJA_PARSE_H

#include "jinja_ast.h"
#include "jinja_lex.h"
#include "jinja_value.h"

/* A tree deeper than this is refused: the evaluator recurses along it. */
#define EMBER_JINJA_MAX_NESTING 128

/* Parses toks into a list of top-level nodes (*body, *n), allocated in arena (an
 * ember_jctx used for its memory only). Refusals: EMBER_ERR_INVALID_ARG, "jinja: line
 * L, column C: reason". */
ember_status ember_jinja_parse_toks(const ember_jtoks *toks, ember_jctx *arena, ember_jnode ***body, uint32_t *n,
                                    ember_err *err);

#endif
