/* json_schema.h — a JSON Schema as a GBNF grammar (start rule "root") whose sentences
 * are JSON texts the schema accepts. Every keyword either shapes the grammar or is
 * refused by name; annotations (title, description, default, examples, $comment, ...)
 * change nothing. docs/grammar.md lists what is supported and the few places where the
 * grammar writes less than the schema would accept (properties in the schema's order,
 * no undeclared properties unless additionalProperties says so, strings of at most 1000
 * characters, numbers of at most 16 digits). Library-internal. */
#ifndef EMBER_JSON_SCHEMA_H
#define EMBER_JSON_SCHEMA_H

#include <stddef.h>

#include "common/error.h"

/* Converts the JSON Schema text[0..len). Refused (EMBER_ERR_INVALID_ARG) with
 * "json schema: at POINTER: reason" (a JSON pointer into the schema; the line and column
 * when the text is not JSON). On success *gbnf is the caller's (ember_free). */
ember_status ember_json_schema_to_gbnf(const char *text, size_t len, char **gbnf, ember_err *err);

/* The same rules with the top one named top (a rule name: letters, digits, '-') instead
 * of root, and every rule the schema's $defs become named after it, so that the rules of
 * several schemas (a tool's arguments each) can go into one grammar. Rules they share
 * (ws, char, string, number, ...) have the same name and body in each: keep one. */
ember_status ember_json_schema_rules(const char *text, size_t len, const char *top, char **gbnf, ember_err *err);

#endif
