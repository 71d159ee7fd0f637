/* jinja_json.h — values to and from text (jinja_json.c): the render's context read from
 * JSON, the `tojson` filter, and the text a value prints as, all as @huggingface/jinja
 * writes them. Library-internal. */
#ifndef EMBER_JINJA_JSON_H
#define EMBER_JINJA_JSON_H

#include "engine/grammar/json.h"
#include "jinja_value.h"

/* A JSON value as a template value: numbers with an integral value are integers (as
 * JavaScript's JSON.parse and @huggingface/jinja make them), object members in
 * JavaScript's order (integer-like names first, ascending; then the others as written;
 * a repeated name keeps its first place and its last value). */
bool ember_jv_from_json(ember_jctx *c, const ember_json *j, ember_jv *out);

/* tojson's options: Python's json.dumps arguments as @huggingface/jinja takes them. */
typedef struct ember_jjson_opts {
    int64_t indent;                    /* 0: none */
    bool ensure_ascii, sort_keys;
    const ember_jstr *item_sep, *key_sep; /* NULL: ", " and ": " (with indent: "," and ": ") */
} ember_jjson_opts;

/* Appends v as JSON. Undefined values are written null (undef_null) or `undefined` (as
 * a container prints); functions are refused. */
bool ember_jv_tojson(ember_jctx *c, ember_jv v, const ember_jjson_opts *o, bool undef_null, ember_sbuf *out);
/* Appends the text `{{ v }}` writes (none and undefined print nothing at the statement
 * level; here they are "null" and "undefined", as inside containers): strings as they
 * are, booleans true/false, floats with ".0" when integral, containers as JSON. */
bool ember_jv_print(ember_jctx *c, ember_jv v, ember_sbuf *out);
/* Appends JavaScript's toString() of the raw value, which `+`, `~` and join use: floats
 * without ".0", lists as their items' texts joined by ",", dicts "[object Map]". */
bool ember_jv_raw(ember_jctx *c, ember_jv v, ember_sbuf *out);

#endif
