/* schema_conv.h — the state of one JSON Schema's conversion to GBNF (schema_conv.c),
 * shared by json_schema.c (the walk, arrays, objects, alternatives) and
 * json_schema_scalar.c (strings, numbers): the JSON pointer being read, the rules made so
 * far, views (the schema objects that apply together), keywords and types. The short type
 * names are for these three files only. Library-internal. */
#ifndef EMBER_SCHEMA_CONV_H
#define EMBER_SCHEMA_CONV_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/strbuf.h"
#include "json.h"

#define MAX_LAYERS 16
#define MAX_DEPTH 64
#define MAX_CHARS 1000   /* the longest string written (GBNF counts stop at 1000) */
#define MAX_DIGITS 16    /* integer digits of an unbounded number */
#define MAX_KEY 64       /* characters of a key additionalProperties allows */

typedef struct ember_schema_view {
    const ember_json *layer[MAX_LAYERS];
    uint32_t n;
    uint32_t alts_from;  /* layers before it had their anyOf/oneOf taken apart already */
} view;

typedef struct ember_schema_rule {
    char *name, *body;   /* body NULL: reserved for a $ref being made */
} rule;

typedef struct ember_schema_ref {
    const ember_json *target;
    char *name;
} ref;

typedef struct ember_schema_conv {
    const ember_json *root;
    const char *top;     /* the top rule's name: every rule made from a $ref is named after it */
    rule *rules;
    uint32_t n_rules, cap_rules;
    ref *refs;
    uint32_t n_refs, cap_refs;
    char path[512];      /* JSON pointer of the schema being read */
    int depth;
    ember_err *err;
    bool failed;
} conv;

enum { T_NULL = 1, T_BOOLEAN = 2, T_OBJECT = 4, T_ARRAY = 8, T_NUMBER = 16, T_STRING = 32, T_INTEGER = 64,
       T_ALL = 127 };

/* Records the first failure, "json schema: at POINTER: " + fmt with arg; returns false. */
bool ember_schema_fail(conv *c, const char *fmt, const char *arg);
/* Appends /key (escaped as a JSON pointer) to the path; returns the old length for pop. */
size_t ember_schema_push(conv *c, const char *key);
void ember_schema_pop(conv *c, size_t n);
/* Grows *p (cap elements of size bytes) to hold need; false (failed) when out of memory. */
bool ember_schema_grow(conv *c, void **p, uint32_t *cap, uint32_t need, size_t size);
/* The name of a rule with this body: an existing one with the same body, or a new one
 * named after hint. Takes body (NULL: reserve a name for a body set later). */
const char *ember_schema_add_rule(conv *c, const char *hint, char *body);
/* The rules of any JSON: "char", and by name ws, string, integer, number, boolean, null,
 * value, object, array (each added the first time it is asked for; returns its name). */
void ember_schema_prim_char(conv *c);
const char *ember_schema_prim(conv *c, const char *name);
bool ember_schema_deep_equal(const ember_json *a, const ember_json *b);
/* Adds schema s (and its allOf members, its $ref target) to view v. */
bool ember_schema_view_add(conv *c, view *v, const ember_json *s, int depth);
/* Keyword k of the view (the layers agree on it, else failed), or NULL. */
const ember_json *ember_schema_kw(conv *c, const view *v, const char *k);
/* Whether any layer of v has one of keys (a NULL-ended list). */
bool ember_schema_has_any(const view *v, const char *const *keys);
/* The T_* bits the view's "type" allows (T_ALL without one). */
bool ember_schema_types_of(conv *c, const view *v, unsigned *t);
/* The T_* bits of a JSON value (an integer-valued number is both number and integer). */
unsigned ember_schema_type_of_value(const ember_json *x);
/* Whether key only annotates (title, description, $comment, ...): it shapes nothing. */
bool ember_schema_annotation(const char *key);

#endif
