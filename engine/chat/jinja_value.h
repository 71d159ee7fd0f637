/* jinja_value.h — the values a chat template computes with, and the render context
 * every part of the interpreter shares (jinja_value.c): one arena per render, the
 * limits, the error and where in the template it happened.
 *
 * Values follow @huggingface/jinja, the JavaScript interpreter Hugging Face's chat
 * front ends run, wherever it differs from Python's Jinja (docs/chat.md): integers and
 * floats are separate kinds, `==` is JavaScript's loose equality, strings are printed
 * as they are, containers as JSON. Everything a render allocates lives in its arena and
 * is freed with it at once: values are never freed one by one, so that a namespace that
 * holds itself, or a macro kept in the scope it closes over, cannot leak. The arena is
 * capped (max_memory), so a template cannot take the machine's memory either.
 * Library-internal. */
#ifndef EMBER_JINJA_VALUE_H
#define EMBER_JINJA_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/strbuf.h"

typedef enum {
    EJV_UNDEF,  /* a name or member that does not exist */
    EJV_NONE,
    EJV_BOOL,
    EJV_INT,
    EJV_FLOAT,
    EJV_STR,
    EJV_LIST,   /* also tuples (list->tuple) */
    EJV_DICT,   /* also namespace() objects (dict->ns) and `loop` */
    EJV_FUNC,
} ember_jv_kind;

/* A string: len bytes of UTF-8 and a NUL after them. Immutable once made. */
typedef struct ember_jstr {
    size_t len;
    char s[];
} ember_jstr;

typedef struct ember_jlist ember_jlist;
typedef struct ember_jdict ember_jdict;
typedef struct ember_jfunc ember_jfunc;

typedef struct ember_jv {
    ember_jv_kind kind;
    union {
        bool b;
        int64_t i;
        double f;
        const ember_jstr *s;
        ember_jlist *l;
        ember_jdict *d;
        const ember_jfunc *fn;
    } u;
} ember_jv;

struct ember_jlist {
    uint32_t n;
    bool tuple;
    ember_jv *v;
};

/* Members in insertion order; looked up by a linear scan (chat templates' dicts are small). */
struct ember_jdict {
    uint32_t n, cap;
    bool ns;  /* a namespace(): the only container a template may change (`set ns.x = ...`) */
    const ember_jstr **k;
    ember_jv *v;
};

/* Something callable. kind and id are the evaluator's and the built-ins' business;
 * self is the receiver of a method (a string, list or dict), node and scope a macro's
 * or a call block's definition and the scope it closes over. */
struct ember_jfunc {
    int kind, id;
    ember_jv self;
    const void *node;
    void *scope;
};

typedef struct ember_jblock ember_jblock;

/* One render's state, shared by the evaluator and the built-ins. */
typedef struct ember_jctx {
    ember_jblock *blocks;           /* the arena */
    size_t mem_used, max_memory;
    uint64_t steps, max_steps;
    uint32_t depth, max_depth;      /* macro and call-block nesting */
    size_t max_output;              /* also the longest string a template may build */
    uint32_t line, col;             /* where the expression being evaluated starts */
    int64_t now;                    /* strftime_now's time (Unix seconds), when has_now */
    bool has_now;
    ember_err *err;
    ember_status status;            /* the first failure's */
    bool failed;
} ember_jctx;

/* Records the first failure as "jinja: line L, column C: reason" (the current place) and
 * returns false, so that callers can `return ember_jfail(...)`. */
bool ember_jfail(ember_jctx *c, const char *fmt, ...) EMBER_PRINTF(2, 3);
/* Zeroed memory from the arena; NULL (and the failure recorded) past max_memory. */
void *ember_jalloc(ember_jctx *c, size_t size);
/* Counts n steps of work; false (failure recorded) past max_steps. */
bool ember_jstep(ember_jctx *c, uint64_t n);
/* Frees the arena. */
void ember_jctx_free(ember_jctx *c);

/* ---- making values ------------------------------------------------------------------ */

static inline ember_jv ember_jv_undef(void) { return (ember_jv){.kind = EJV_UNDEF}; }
static inline ember_jv ember_jv_none(void) { return (ember_jv){.kind = EJV_NONE}; }
static inline ember_jv ember_jv_bool(bool b) { return (ember_jv){.kind = EJV_BOOL, .u.b = b}; }
static inline ember_jv ember_jv_int(int64_t i) { return (ember_jv){.kind = EJV_INT, .u.i = i}; }
static inline ember_jv ember_jv_float(double f) { return (ember_jv){.kind = EJV_FLOAT, .u.f = f}; }

/* A new string of len bytes (to be filled; NUL-terminated), NULL past the limits: a
 * string longer than max_output is refused too. */
ember_jstr *ember_jstr_new(ember_jctx *c, size_t len);
/* A string value holding a copy of s[0..len); false when the limits refuse it. */
bool ember_jv_str(ember_jctx *c, const char *s, size_t len, ember_jv *out);
/* A string value taking b's text (b is emptied, its memory freed). */
bool ember_jv_str_sb(ember_jctx *c, ember_sbuf *b, ember_jv *out);
/* A list (or tuple) of n items, all undefined until filled. */
bool ember_jv_list(ember_jctx *c, uint32_t n, bool tuple, ember_jv *out);
/* An empty dict with room for cap members. */
bool ember_jv_dict(ember_jctx *c, uint32_t cap, bool ns, ember_jv *out);

/* ---- dicts ---------------------------------------------------------------------------- */

/* The member named key[0..len), or NULL. */
ember_jv *ember_jdict_get(const ember_jdict *d, const char *key, size_t len);
/* Sets a member (replacing one of that name where it is, else appending). */
bool ember_jdict_set(ember_jctx *c, ember_jdict *d, const ember_jstr *key, ember_jv v);
/* The same, with a key given as text (copied into the arena). */
bool ember_jdict_set_text(ember_jctx *c, ember_jdict *d, const char *key, ember_jv v);

/* ---- what values are ------------------------------------------------------------------ */

/* @huggingface/jinja's name of the value's type, for messages ("StringValue", ...). */
const char *ember_jv_type_name(ember_jv v);
/* Jinja truthiness as @huggingface/jinja has it: empty strings, lists and dicts, 0,
 * false, none and undefined are false; a namespace is always true. */
bool ember_jv_truthy(ember_jv v);
/* `==`: JavaScript's loose equality of the values (1 == 1.0 == true, "1" == 1, none ==
 * undefined); lists and dicts are equal only to themselves. */
bool ember_jv_loose_eq(ember_jv a, ember_jv b);
/* `in` over a list, unique, equalto: JavaScript's === (no conversions; 1 === 1.0). */
bool ember_jv_strict_eq(ember_jv a, ember_jv b);
/* Ordering for sort and dictsort: numbers (and booleans) by value, strings (lower-cased
 * unless case_sensitive), none equal to none; anything else is a failure. */
bool ember_jv_compare(ember_jctx *c, ember_jv a, ember_jv b, bool case_sensitive, int *out);

/* ---- numbers and text ------------------------------------------------------------------- */

/* JavaScript's Number.prototype.toString(): the shortest digits that read back as v. */
void ember_jnum_js(double v, char buf[40]);
/* Appends what @huggingface/jinja prints for a float: "2.0" for integral values, else as
 * JavaScript writes it. */
void ember_jnum_float_text(double v, ember_sbuf *b);

/* The next code point of s[*i..n) (U+FFFD for a bad byte), advancing *i. */
uint32_t ember_jutf8_next(const char *s, size_t n, size_t *i);
/* JavaScript's \s: ASCII whitespace and Unicode's space separators, U+FEFF and the
 * line and paragraph separators. */
bool ember_jis_space(uint32_t cp);
/* The bytes of s[0..n) left after JavaScript's trimStart / trimEnd. */
size_t ember_jspace_prefix(const char *s, size_t n);
size_t ember_jspace_suffix(const char *s, size_t n);

#endif
