/* jinja_ast.h — the parsed template: a tree of nodes made by jinja_parse.c and walked
 * by jinja_eval.c. Statements and expressions share one node type, as in
 * @huggingface/jinja, whose tree this mirrors (an expression at the statement level is
 * evaluated and printed). Types only. */
#ifndef EMBER_JINJA_AST_H
#define EMBER_JINJA_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    /* statements */
    JN_TEXT,        /* s: text printed as it is */
    JN_IF,          /* a: test; kids: body; kids2: else (an elif is an IF alone in kids2) */
    JN_FOR,         /* a: target (NAME or TUPLE); b: iterable; c: loop filter or NULL;
                       kids: body; kids2: else */
    JN_SET,         /* a: target (NAME, TUPLE or MEMBER); b: value, or NULL with kids: a block */
    JN_MACRO,       /* s: name; kids2: parameters (NAME or KWARG with default); kids: body */
    JN_CALLBLOCK,   /* a: the CALL; kids2: caller's parameters; kids: caller's body */
    JN_FILTERBLOCK, /* a: the filter (a FILTER node without operand); kids: body */
    JN_BREAK,
    JN_CONTINUE,
    JN_COMMENT,
    /* expressions */
    JN_NAME,        /* s */
    JN_INT,         /* i */
    JN_FLOAT,       /* f */
    JN_STR,         /* s, len */
    JN_LIST,        /* kids */
    JN_TUPLE,       /* kids */
    JN_DICT,        /* kids: keys; kids2: values */
    JN_BINARY,      /* op: ember_jop; a, b */
    JN_NOT,         /* a */
    JN_SIGN,        /* op: '-' or '+'; a */
    JN_MEMBER,      /* a: object; b: property (an expression, a SLICE, or NAME/INT after a dot);
                       op: 1 for [ ] */
    JN_SLICE,       /* a: start, b: stop, c: step (each may be NULL) */
    JN_CALL,        /* a: callee; kids: arguments (KWARG, SPREAD, KWSPREAD among them) */
    JN_FILTER,      /* a: operand; s: name; op: 1 when written with ( ); kids: arguments */
    JN_TEST,        /* a: operand; s: name; op: 1 for `is not`; kids: arguments */
    JN_TERNARY,     /* a: condition; b: value when true; c: value when false */
    JN_SELECT,      /* `b if a` without else: a: condition; b: value (undefined otherwise) */
    JN_KWARG,       /* s: name; a: value */
    JN_SPREAD,      /* *a */
    JN_KWSPREAD,    /* **a */
} ember_jnode_kind;

typedef enum {
    JOP_ADD, JOP_SUB, JOP_CAT, JOP_MUL, JOP_DIV, JOP_FLOORDIV, JOP_MOD, JOP_POW,
    JOP_EQ, JOP_NE, JOP_LT, JOP_GT, JOP_LE, JOP_GE, JOP_IN, JOP_NOT_IN, JOP_AND, JOP_OR,
} ember_jop;

/* Macros and call blocks: which of the special names their body reads. */
enum { JMACRO_VARARGS = 1, JMACRO_KWARGS = 2, JMACRO_CALLER = 4 };

struct ember_jstr;
typedef struct ember_jnode ember_jnode;
struct ember_jnode {
    ember_jnode_kind kind;
    int op;
    uint32_t line, col;
    uint32_t depth;          /* of the subtree: the evaluator's recursion is bounded by it */
    const char *s;
    size_t len;
    const struct ember_jstr *str; /* s as a template string (JN_STR, JN_NAME, JN_KWARG): made once */
    int64_t i;
    double f;
    ember_jnode *a, *b, *c;
    ember_jnode **kids, **kids2;
    uint32_t n, n2;
};

#endif
