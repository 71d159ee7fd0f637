/* jinja_methods.h — what a template can call besides its own macros (jinja_methods.c):
 * the methods of strings (upper, lower, strip, lstrip, rstrip, title, capitalize,
 * startswith, endswith, split, replace; also find, rfind, count, splitlines) and of
 * dicts (get, items, keys, values, dictsort), and the global functions range,
 * namespace, raise_exception, strftime_now and dict. This is the whole sandbox: a
 * member that is not a dict's own and not listed here is undefined, so no template
 * reaches anything else. Library-internal. */
#ifndef EMBER_JINJA_METHODS_H
#define EMBER_JINJA_METHODS_H

#include "jinja_value.h"

/* The kinds of ember_jfunc. */
enum { JF_GLOBAL, JF_METHOD, JF_MACRO, JF_CALLER };

/* A call's arguments: positional ones, then name=value ones. */
typedef struct ember_jargs {
    const ember_jv *pos;
    uint32_t n;
    const ember_jstr *const *kw_name;
    const ember_jv *kw;
    uint32_t n_kw;
} ember_jargs;

/* Argument i, else the keyword argument name (NULL: none), else false. */
bool ember_jarg(const ember_jargs *a, uint32_t i, const char *name, ember_jv *out);

/* The method or property `name` of self (a string, list or dict), bound to it: *found
 * false when there is none (then *out is undefined). */
bool ember_jinja_method(ember_jctx *c, ember_jv self, const char *name, size_t len, ember_jv *out, bool *found);
/* The global function `name`, or false. */
bool ember_jinja_global(const char *name, ember_jv *out);
/* The names of the global functions, NULL-terminated. */
const char *const *ember_jinja_global_names(void);
/* Calls a JF_GLOBAL or JF_METHOD function. */
bool ember_jinja_call_builtin(ember_jctx *c, const ember_jfunc *fn, const ember_jargs *a, ember_jv *out);

/* Strings as @huggingface/jinja transforms them (shared with the filters): upper and
 * lower (ASCII letters and Latin-1, Greek and Cyrillic ones), title (a letter after a
 * non-word character), capitalize (the first character only). */
bool ember_jstr_case(ember_jctx *c, const ember_jstr *s, int how, ember_jv *out);
enum { JCASE_UPPER, JCASE_LOWER, JCASE_TITLE, JCASE_CAPITALIZE };
/* The length JavaScript gives a string: UTF-16 code units. */
int64_t ember_jstr_js_length(const ember_jstr *s);
/* dict.items() as a list of (key, value) lists. */
bool ember_jdict_items(ember_jctx *c, const ember_jdict *d, ember_jv *out);
/* The (key, value) pairs of d sorted by key or value (dictsort). */
bool ember_jdict_sorted(ember_jctx *c, const ember_jdict *d, bool by_value, bool case_sensitive, bool reverse,
                        ember_jv *out);
/* A stable merge sort of v[0..n) by ember_jv_compare of key(v[i]) (keys[] parallel). */
bool ember_jsort(ember_jctx *c, ember_jv *v, ember_jv *keys, uint32_t n, bool case_sensitive, bool reverse);

#endif
