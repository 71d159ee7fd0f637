/* json_schema_scalar.h — a view's strings and numbers as GBNF (json_schema_scalar.c):
 * minLength/maxLength, pattern and format; minimum/maximum and their exclusive forms.
 * Library-internal, for json_schema.c. */
#ifndef EMBER_JSON_SCHEMA_SCALAR_H
#define EMBER_JSON_SCHEMA_SCALAR_H

#include "schema_conv.h"

/* Integer keyword k of the view into *out (absent: true, *out untouched; not a
 * non-negative integer: failed). */
bool ember_schema_count_kw(conv *c, const view *v, const char *k, long *out);
/* The body of the view's string rule into b. */
bool ember_schema_string_body(conv *c, const view *v, ember_sbuf *b);
/* The body of the view's number (integer: integer) rule into b. */
bool ember_schema_number_body(conv *c, const view *v, bool integer, ember_sbuf *b);

#endif
