/* json_text.h — how JSON writes things, as GBNF: a set of characters inside a string
 * (plain, or escaped where JSON must escape them), and a JSON value as a literal with
 * room for whitespace. What json_schema.c and regex.c build their grammars from; the one
 * place that knows JSON's string escapes. Library-internal. */
#ifndef EMBER_JSON_TEXT_H
#define EMBER_JSON_TEXT_H

#include <stdint.h>

#include "common/strbuf.h"
#include "json.h"

/* The whitespace rule's name: the grammars allow what llama.cpp's do between tokens
 * (nothing, a space, or a newline and up to 20 spaces or tabs), never unbounded. */
#define EMBER_JSON_WS "ws"
#define EMBER_JSON_WS_BODY "| \" \" | \"\\n\" [ \\t]{0,20}"

/* Appends a GBNF expression for one character of the set (n sorted, disjoint ranges
 * lo, hi of code points; surrogates are never in it) as JSON writes it inside a string:
 * itself, except '"' and '\' (always escaped), control characters (\b \f \n \r \t or
 * \u00XX, hex in either case), and '/' (itself or "\/"). The set must not be empty. */
void ember_jtext_chars(ember_sbuf *out, const uint32_t *ranges, uint32_t n);

/* Appends a GBNF sequence that matches value v as JSON text: strings as JSON writes them
 * (the escapes above), numbers as written, arrays and objects with the whitespace rule
 * between their tokens. */
void ember_jtext_value(ember_sbuf *out, const ember_json *v);

/* Appends a GBNF literal for UTF-8 text s[0..n) inside a JSON string (its characters
 * escaped as above, '/' plain). */
void ember_jtext_string_content(ember_sbuf *out, const char *s, size_t n);

#endif
