/* jinja_lex.h — template source to tokens (jinja_lex.c), exactly as @huggingface/jinja
 * cuts them, whitespace control included: its preprocessing (one trailing newline
 * dropped; lstrip_blocks and trim_blocks, the settings Hugging Face renders chat
 * templates with, applied by its two regular expressions to the whole source;
 * {% generation %} tags removed) and then `{%-`, `-%}`, `{{-`, `-}}`, `{#-`, `-#}`
 * stripping the whitespace next to them. Every token keeps its line and column in the
 * original source. Library-internal. */
#ifndef EMBER_JINJA_LEX_H
#define EMBER_JINJA_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum {
    JT_TEXT,        /* text between tags */
    JT_NUM,         /* 12, 1.5, -3 (a sign that cannot be binary joins the number) */
    JT_STR,         /* a string literal, escapes decoded */
    JT_NAME,        /* identifiers and keywords alike */
    JT_ASSIGN,      /* = */
    JT_LPAREN, JT_RPAREN, JT_LBRACKET, JT_RBRACKET, JT_LBRACE, JT_RBRACE,
    JT_COMMA, JT_DOT, JT_COLON, JT_PIPE,
    JT_OPEN_STMT, JT_CLOSE_STMT, JT_OPEN_EXPR, JT_CLOSE_EXPR,
    JT_ADD,         /* + - ~ */
    JT_MUL,         /* * / // % */
    JT_POW,         /* ** */
    JT_CMP,         /* == != < > <= >= */
    JT_UNARY,       /* a lone + or - before an operand */
    JT_COMMENT,
} ember_jtok_kind;

typedef struct ember_jtok {
    ember_jtok_kind kind;
    const char *s;  /* the token's text (decoded for JT_STR), inside the token list's buffer */
    size_t len;
    uint32_t line, col;
} ember_jtok;

typedef struct ember_jtoks {
    ember_jtok *v;
    size_t n;
    char *buf;      /* the preprocessed source, string literals decoded in place */
} ember_jtoks;

/* Cuts src[0..len) into tokens. Refusals: EMBER_ERR_INVALID_ARG, "jinja: line L, column
 * C: reason". The caller frees the list (also after a failure). */
ember_status ember_jinja_lex(const char *src, size_t len, ember_jtoks *out, ember_err *err);
void ember_jinja_toks_free(ember_jtoks *t);

#endif
