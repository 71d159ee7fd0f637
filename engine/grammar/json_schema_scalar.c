/* json_schema_scalar.c — a view's strings and numbers as GBNF (json_schema_scalar.h). */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "decimal_range.h"
#include "json_schema_scalar.h"
#include "regex.h"

/* ---- strings ---------------------------------------------------------------------- */

bool ember_schema_count_kw(conv *c, const view *v, const char *k, long *out)
{
    const ember_json *x = ember_schema_kw(c, v, k);
    if (!x) return !c->failed;
    char *end;
    double d = x->kind == EJ_NUMBER ? strtod(x->str, &end) : -1;
    if (d < 0 || d != (double)(long)d) return ember_schema_fail(c, "%s must be a non-negative integer", k);
    *out = (long)d;
    return true;
}

bool ember_schema_string_body(conv *c, const view *v, ember_sbuf *b)
{
    /* RFC 3339 dates and times as strict validators take them: real days of each month
     * (29 February in leap years only), years 0001-9999, seconds 00-59 (no leap second),
     * an upper-case T; an e-mail address of the common form (local part and labels of
     * letters, digits and . _ + -, at most 32 characters each, 2-4 labels) */
    static const char *const DAY = "(\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])";
    static const char *const LEAP = "([0-9]{2} (\"0\" [48] | [2468] [048] | [13579] [26]) | (\"0\" [48] | [2468] [048] | "
                                    "[13579] [26]) \"00\")";
    static const char *const FORMATS[][2] = {
        {"date", NULL},
        {"time", "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,9})? "
                 "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])"},
        {"date-time", NULL},
        {"uuid", "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}"},
        {"email", "[a-zA-Z0-9_+] ([a-zA-Z0-9._+-]{0,30} [a-zA-Z0-9_+-])? \"@\" [a-zA-Z0-9] ([a-zA-Z0-9-]{0,30} "
                  "[a-zA-Z0-9])? (\".\" [a-zA-Z0-9] ([a-zA-Z0-9-]{0,30} [a-zA-Z0-9])?){1,3}"}};
    const ember_json *fmt = ember_schema_kw(c, v, "format"), *pat = ember_schema_kw(c, v, "pattern");
    long lo = 0, hi = -1;
    if (!ember_schema_count_kw(c, v, "minLength", &lo) || !ember_schema_count_kw(c, v, "maxLength", &hi)) return false;
    bool lengths = ember_schema_kw(c, v, "minLength") || ember_schema_kw(c, v, "maxLength");
    if ((fmt && (pat || lengths)) || (pat && lengths))
        return ember_schema_fail(c, "%s", fmt ? "format beside pattern, minLength or maxLength is not supported"
                                 : "pattern beside minLength or maxLength is not supported");
    if (fmt) {
        ember_sbuf date = {0};
        ember_sbuf_printf(&date, "((\"000\" [1-9] | \"00\" [1-9] [0-9] | \"0\" [1-9] [0-9]{2} | [1-9] [0-9]{3}) \"-\" "
                          "((\"0\" [13578] | \"1\" [02]) \"-\" (%s | \"29\" | \"30\" | \"31\") | (\"0\" [469] | \"11\") \"-\" "
                          "(%s | \"29\" | \"30\") | \"02-\" %s) | %s \"-02-29\")", DAY, DAY, DAY, LEAP);
        if (date.oom) return ember_schema_fail(c, "%s", "out of memory");
        for (size_t i = 0; fmt->kind == EJ_STRING && i < sizeof FORMATS / sizeof *FORMATS; i++) {
            if (strcmp(fmt->str, FORMATS[i][0])) continue;
            ember_sbuf_puts(b, "\"\\\"\" ");
            if (FORMATS[i][1]) ember_sbuf_puts(b, FORMATS[i][1]);
            else if (i == 0) ember_sbuf_puts(b, date.s);
            else ember_sbuf_printf(b, "%s \"T\" %s", date.s, FORMATS[1][1]);
            ember_sbuf_puts(b, " \"\\\"\"");
            ember_free(date.s);
            return true;
        }
        ember_free(date.s);
        return ember_schema_fail(c, "format '%s' is not supported (date, time, date-time, uuid, email are)",
                    fmt->kind == EJ_STRING ? fmt->str : "?");
    }
    if (pat) {
        if (pat->kind != EJ_STRING) return ember_schema_fail(c, "%s", "pattern must be a string");
        ember_sbuf_puts(b, "\"\\\"\" ");
        size_t mark = ember_schema_push(c, "pattern");
        if (ember_regex_to_gbnf(pat->str, pat->len, b, c->err) != EMBER_OK) {
            ember_fail_ctx(c->err, EMBER_ERR_INVALID_ARG, "json schema: at %s", c->path);
            return c->failed = true, false;
        }
        ember_schema_pop(c, mark);
        ember_sbuf_puts(b, " \"\\\"\"");
        return true;
    }
    if (hi >= 0 && hi < lo) return ember_schema_fail(c, "%s", "maxLength is below minLength");
    if (lo > MAX_CHARS) return ember_schema_fail(c, "%s", "minLength above 1000 is not supported");
    ember_schema_prim_char(c);
    if (!lengths) ember_sbuf_puts(b, ember_schema_prim(c, "string"));
    else if (hi < 0) ember_sbuf_printf(b, "\"\\\"\" char{%ld,} \"\\\"\"", lo);
    else ember_sbuf_printf(b, "\"\\\"\" char{%ld,%ld} \"\\\"\"", lo, hi > MAX_CHARS ? MAX_CHARS : hi);
    return true;
}

/* ---- numbers ---------------------------------------------------------------------- */

/* A bound of an integer: inclusive, rounded inward. */
static bool int_bound(conv *c, const view *v, bool upper, bool *has, long long *out)
{
    const ember_json *inc = ember_schema_kw(c, v, upper ? "maximum" : "minimum"), *exc = ember_schema_kw(c, v, upper ? "exclusiveMaximum"
                                                                                           : "exclusiveMinimum");
    *has = false;
    if (c->failed) return false;
    const ember_json *x = exc && exc->kind == EJ_NUMBER ? exc : inc;
    bool exclusive = (exc && exc->kind == EJ_NUMBER) || (exc && exc->kind == EJ_TRUE); /* draft 4: a boolean */
    if (exc && exc->kind == EJ_NUMBER && inc) return ember_schema_fail(c, "%s", "both an inclusive and an exclusive bound on "
                                                                   "one side is not supported");
    if (!x) return true;
    if (x->kind != EJ_NUMBER) return ember_schema_fail(c, "%s", "a bound must be a number");
    double d = strtod(x->str, NULL);
    if (d > 9e15 || d < -9e15) return ember_schema_fail(c, "%s", "bounds beyond 15 digits are not supported");
    double r = upper ? __builtin_floor(d) : __builtin_ceil(d);
    long long k = (long long)r;
    if (exclusive && r == d) k += upper ? -1 : 1;
    *has = true, *out = k;
    return true;
}

/* Integers lo..hi (either side open): a sign and naturals for each side of zero. */
static void integer_range(ember_sbuf *o, bool has_lo, long long lo, bool has_hi, long long hi)
{
    const char *sep = "";
    ember_sbuf_puts(o, "(");
    if (!has_lo || lo < 0) { /* the negatives: magnitudes max(1, -hi) .. -lo */
        uint64_t from = has_hi && hi < 0 ? (uint64_t)(-hi) : 1, to = has_lo ? (uint64_t)(-lo) : UINT64_MAX;
        ember_sbuf_puts(o, "\"-\" ");
        ember_naturals(o, from, to);
        sep = " | ";
    }
    if (!has_hi || hi >= 0) {
        ember_sbuf_puts(o, sep);
        ember_naturals(o, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi ? (uint64_t)hi : UINT64_MAX);
    }
    ember_sbuf_puts(o, ")");
}

/* A bound of a number (not an integer) as an exact decimal: the inclusive keyword's, or
 * the exclusive one's (draft 4: a boolean beside the inclusive). false: a failure. */
static bool decimal_bound(conv *c, const view *v, bool upper, bool *has, ember_decimal *d)
{
    const ember_json *inc = ember_schema_kw(c, v, upper ? "maximum" : "minimum");
    const ember_json *exc = ember_schema_kw(c, v, upper ? "exclusiveMaximum" : "exclusiveMinimum");
    *has = false;
    if (c->failed) return false;
    if (exc && exc->kind == EJ_NUMBER && inc)
        return ember_schema_fail(c, "%s", "both an inclusive and an exclusive bound on one side is not supported");
    const ember_json *x = exc && exc->kind == EJ_NUMBER ? exc : inc;
    if (!x) return true;
    if (x->kind != EJ_NUMBER || !ember_decimal_parse(x->str, d))
        return ember_schema_fail(c, "%s", "a bound must be a number of at most 15 integer and 31 fraction digits");
    d->inclusive = !((exc && exc->kind == EJ_NUMBER) || (exc && exc->kind == EJ_TRUE));
    *has = true;
    return true;
}

bool ember_schema_number_body(conv *c, const view *v, bool integer, ember_sbuf *b)
{
    bool has_lo, has_hi;
    long long lo, hi;
    if (integer) {
        if (!int_bound(c, v, false, &has_lo, &lo) || !int_bound(c, v, true, &has_hi, &hi)) return false;
        if (has_lo && has_hi && hi < lo) return ember_schema_fail(c, "%s", "maximum is below minimum");
        if (!has_lo && !has_hi) return ember_sbuf_puts(b, ember_schema_prim(c, "integer")), true;
        return integer_range(b, has_lo, lo, has_hi, hi), true;
    }
    ember_decimal dlo, dhi;
    if (!decimal_bound(c, v, false, &has_lo, &dlo) || !decimal_bound(c, v, true, &has_hi, &dhi)) return false;
    if (!has_lo && !has_hi) return ember_sbuf_puts(b, ember_schema_prim(c, "number")), true;
    return ember_decimal_range(b, has_lo ? &dlo : NULL, has_hi ? &dhi : NULL) ||
           ember_schema_fail(c, "%s", "the bounds leave no number");
}

