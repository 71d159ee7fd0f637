/* json.h — a JSON document as a tree, for what the library reads in JSON: JSON Schemas
 * (json_schema.h). Strict RFC 8259: no comments, no trailing commas, no NaN, nesting at
 * most 256 deep; strings are decoded to UTF-8 (\u escapes and surrogate pairs included;
 * a lone surrogate is an error). Library-internal. */
#ifndef EMBER_JSON_H
#define EMBER_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum { EJ_NULL, EJ_FALSE, EJ_TRUE, EJ_NUMBER, EJ_STRING, EJ_ARRAY, EJ_OBJECT } ember_json_kind;

typedef struct ember_json {
    ember_json_kind kind;
    const char *str;          /* EJ_STRING: the decoded text (NUL-terminated, may hold NULs:
                                 len counts them); EJ_NUMBER: the number as written */
    size_t len;
    struct ember_json *items; /* EJ_ARRAY: the items; EJ_OBJECT: the members' values */
    const char **keys;        /* EJ_OBJECT: the members' names (decoded, NUL-terminated) */
    uint32_t n;               /* items or members */
    uint32_t line, col;       /* where the value starts in the text */
    size_t at, span;          /* its text: text[at .. at + span) */
} ember_json;

typedef struct ember_json_doc ember_json_doc;

/* Parses text[0..len). Refused with "line L, column C: reason" in err
 * (EMBER_ERR_INVALID_ARG). *root points into *doc, which the caller frees. */
ember_status ember_json_parse(const char *text, size_t len, ember_json_doc **doc, const ember_json **root,
                              ember_err *err);
void ember_json_free(ember_json_doc *doc);

/* The value of member key of object o, or NULL (also when o is not an object). */
const ember_json *ember_json_get(const ember_json *o, const char *key);

/* Appends s[0..n) (UTF-8) as a JSON string, quotes included, to out. */
struct ember_sbuf;
void ember_json_quote(struct ember_sbuf *out, const char *s, size_t n);

#endif
