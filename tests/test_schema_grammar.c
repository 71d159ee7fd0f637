/* test_schema_grammar.c — JSON Schemas as grammars (engine/grammar/json_schema.c, regex.c,
 * json.c), without a device: integer and number bounds checked on every value of a
 * range and around it; patterns on strings that must and must not match (as JSON writes
 * them, escapes included); every refusal names its place and its keyword; the JSON
 * reader's errors say line and column; and ember_grammar_check / ember_json_schema_to_grammar
 * (the public calls) agree with the matcher. The JSON-Schema-Test-Suite and generated
 * outputs are tests/test_json_schema.py's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_match.h"
#include "engine/grammar/json.h"
#include "engine/grammar/json_schema.h"
#include "testutil.h"

/* Whether the grammar of schema takes text; -1 when the schema is refused. */
static int takes(const char *schema, const char *text)
{
    char *gbnf = NULL;
    ember_err err = {{0}};
    if (ember_json_schema_to_gbnf(schema, strlen(schema), &gbnf, &err) != EMBER_OK) return -1;
    ember_grammar_match m = {0};
    char msg[512];
    ember_status s = ember_grammar_check(gbnf, NULL, text, strlen(text), &m, msg, sizeof msg);
    CHECKF(s == EMBER_OK, "the grammar of %s does not parse: %s", schema, msg);
    ember_free(gbnf);
    return m.complete;
}

/* Integer bounds: every value from lo - 30 to hi + 30 (and a few far ones) is taken
 * exactly when it is in range, for ranges across zero, digit counts and exclusive ends. */
static void test_integers(void)
{
    static const struct {
        long long lo, hi;
        int has_lo, has_hi;
    } R[] = {{-5, 120, 1, 1}, {0, 9, 1, 1}, {7, 7, 1, 1}, {-1000, -999, 1, 1}, {95, 1005, 1, 1},
             {-37, 0, 1, 1}, {1, 0, 1, 0}, {0, -3, 0, 1}, {123, 0, 1, 0}, {0, 4567, 0, 1}};
    for (size_t i = 0; i < sizeof R / sizeof *R; i++) {
        char schema[256], text[32];
        snprintf(schema, sizeof schema, "{\"type\": \"integer\"%s%lld%s%lld}", R[i].has_lo ? ", \"minimum\": " : ", \"x\": ",
                 R[i].lo, R[i].has_hi ? ", \"maximum\": " : ", \"y\": ", R[i].hi);
        if (!R[i].has_lo || !R[i].has_hi) { /* drop the placeholder keys */
            snprintf(schema, sizeof schema, "{\"type\": \"integer\"");
            if (R[i].has_lo) snprintf(schema + strlen(schema), 64, ", \"minimum\": %lld", R[i].lo);
            if (R[i].has_hi) snprintf(schema + strlen(schema), 64, ", \"maximum\": %lld", R[i].hi);
            strcat(schema, "}");
        }
        long long from = (R[i].has_lo ? R[i].lo : R[i].hi) - 30, to = (R[i].has_hi ? R[i].hi : R[i].lo) + 30;
        int wrong = 0;
        for (long long x = from; x <= to; x++) {
            snprintf(text, sizeof text, "%lld", x);
            int want = (!R[i].has_lo || x >= R[i].lo) && (!R[i].has_hi || x <= R[i].hi);
            wrong += takes(schema, text) != want;
        }
        static const char *far[] = {"123456789012", "-123456789012", "0123", "-0", "1.0", "+1", "1e3"};
        for (size_t k = 0; k < sizeof far / sizeof *far; k++) {
            long long x = strtoll(far[k], NULL, 10);
            int want = strcmp(far[k], "0123") && strcmp(far[k], "1.0") && strcmp(far[k], "+1") &&
                       strcmp(far[k], "1e3") && strcmp(far[k], "-0") && (!R[i].has_lo || x >= R[i].lo) &&
                       (!R[i].has_hi || x <= R[i].hi);
            wrong += takes(schema, far[k]) != want;
        }
        CHECKF(wrong == 0, "%s: %d values taken or refused wrongly", schema, wrong);
    }
    /* exclusive bounds, draft 4 and draft 6 forms, and a bound that is not an integer */
    CHECK(takes("{\"type\":\"integer\",\"exclusiveMinimum\":3,\"exclusiveMaximum\":6}", "4") == 1);
    CHECK(takes("{\"type\":\"integer\",\"exclusiveMinimum\":3,\"exclusiveMaximum\":6}", "3") == 0);
    CHECK(takes("{\"type\":\"integer\",\"exclusiveMinimum\":3,\"exclusiveMaximum\":6}", "6") == 0);
    CHECK(takes("{\"type\":\"integer\",\"minimum\":3,\"exclusiveMinimum\":true}", "3") == 0);
    CHECK(takes("{\"type\":\"integer\",\"minimum\":3,\"exclusiveMinimum\":true}", "4") == 1);
    CHECK(takes("{\"type\":\"integer\",\"minimum\":2.5}", "2") == 0 && takes("{\"type\":\"integer\",\"minimum\":2.5}", "3") == 1);
}

/* A number in thousandths: text of at most 3 fraction digits, no exponent. */
static long long thousandths(const char *t)
{
    long long sign = *t == '-' ? -1 : 1, v = 0, f = 0;
    t += *t == '-';
    while (*t >= '0' && *t <= '9') v = v * 10 + (*t++ - '0');
    int k = 0;
    if (*t == '.') for (t++; *t && k < 3; k++) f = f * 10 + (*t++ - '0');
    while (k++ < 3) f *= 10;
    return sign * (v * 1000 + f);
}

/* A decimal bound of up to 2 integer and 3 fraction digits, as JSON text. */
static void random_bound(tu_rng *r, char *out, size_t cap)
{
    long long v = (long long)(tu_next(r) % 40000) - 20000; /* -20.000 .. 19.999 */
    int digits = (int)(tu_next(r) % 4);                    /* fraction digits kept */
    long long scale = digits == 0 ? 1000 : digits == 1 ? 100 : digits == 2 ? 10 : 1;
    v = v / scale * scale;
    snprintf(out, cap, "%s%lld.%03lld", v < 0 ? "-" : "", (v < 0 ? -v : v) / 1000, (v < 0 ? -v : v) % 1000);
}

/* Number bounds: 300 random ranges (inclusive and exclusive ends, fractions, across
 * zero, one side open), each checked on every multiple of 0.125 from -25 to 25 and on
 * 40 random numbers of 3 fraction digits, against exact decimal comparison. */
static void test_numbers(void)
{
    tu_rng rng = {7};
    int wrong_total = 0;
    for (int t = 0; t < 300; t++) {
        char lo[32], hi[32], schema[256];
        random_bound(&rng, lo, sizeof lo), random_bound(&rng, hi, sizeof hi);
        if (thousandths(lo) > thousandths(hi)) { char x[32]; memcpy(x, lo, 32), memcpy(lo, hi, 32), memcpy(hi, x, 32); }
        int kind = (int)(tu_next(&rng) % 6); /* which ends, and in or out */
        bool has_lo = kind != 4, has_hi = kind != 5, lo_in = kind % 2 == 0, hi_in = kind < 2 || kind == 3;
        snprintf(schema, sizeof schema, "{\"type\":\"number\"%s%s%s%s%s%s}", has_lo ? (lo_in ? ",\"minimum\":" : ",\"exclusiveMinimum\":") : "",
                 has_lo ? lo : "", has_hi ? (hi_in ? ",\"maximum\":" : ",\"exclusiveMaximum\":") : "", has_hi ? hi : "", "", "");
        char *gbnf = NULL;
        ember_err err = {{0}};
        long long l = thousandths(lo), h = thousandths(hi);
        bool empty = has_lo && has_hi && (l > h || (l == h && !(lo_in && hi_in)));
        ember_status s = ember_json_schema_to_gbnf(schema, strlen(schema), &gbnf, &err);
        if (empty) {
            CHECKF(s == EMBER_ERR_INVALID_ARG, "%s: an empty range was not refused", schema);
            ember_free(gbnf);
            continue;
        }
        ember_grammar *g = NULL;
        CHECKF(s == EMBER_OK && ember_grammar_parse(gbnf, strlen(gbnf), NULL, &g, &err) == EMBER_OK, "%s: %s", schema,
               err.msg);
        int wrong = 0;
        for (int k = -200 - 40; g && k <= 200; k++) {
            char text[32];
            long long v = k >= -200 ? k * 125 : (long long)(tu_next(&rng) % 50000) - 25000;
            int fd = k >= -200 ? 3 : (int)(tu_next(&rng) % 4);
            if (fd == 0 && v % 1000) v -= v % 1000;
            long long a = v < 0 ? -v : v;
            if (fd == 0) snprintf(text, sizeof text, "%s%lld", v < 0 ? "-" : "", a / 1000);
            else snprintf(text, sizeof text, "%s%lld.%03lld", v < 0 ? "-" : "", a / 1000, a % 1000);
            if (!strcmp(text, "-0") || !strcmp(text, "-0.000")) continue; /* Ember writes 0 */
            bool want = (!has_lo || (lo_in ? v >= l : v > l)) && (!has_hi || (hi_in ? v <= h : v < h));
            ember_gmatch *m = NULL;
            ember_gmatch_create(g, &m, &err);
            bool got = ember_gmatch_accept(m, (const uint8_t *)text, strlen(text)) && ember_gmatch_complete(m);
            ember_gmatch_free(m);
            if (got != want && wrong++ < 3) fprintf(stderr, "%s: %s %s\n", schema, text, got ? "taken" : "refused");
        }
        wrong_total += wrong;
        ember_grammar_free(g);
        ember_free(gbnf);
    }
    CHECKF(wrong_total == 0, "number bounds: %d values taken or refused wrongly", wrong_total);
    CHECK(takes("{\"type\":\"number\"}", "-1.5e-7") == 1 && takes("{\"type\":\"number\"}", "1.") == 0);
    CHECK(takes("{\"type\":\"number\",\"minimum\":1e-3}", "0.001") == 1 &&
          takes("{\"type\":\"number\",\"minimum\":1e-3}", "0.0009") == 0);
    CHECK(takes("{\"type\":\"number\",\"minimum\":3,\"exclusiveMinimum\":true}", "3") == 0 &&
          takes("{\"type\":\"number\",\"minimum\":3,\"exclusiveMinimum\":true}", "3.0001") == 1);
}

/* Patterns: unanchored unless anchored, classes and escapes, JSON's escapes in the text. */
static void test_patterns(void)
{
    static const struct {
        const char *pattern, *yes[4], *no[4];
    } P[] = {
        {"^[a-z]+-[0-9]{2,3}$", {"\"ab-12\"", "\"x-999\""}, {"\"ab-1\"", "\"Ab-12\"", "\"ab-1234\"", "\" ab-12\""}},
        {"cat", {"\"cat\"", "\"a cat!\"", "\"catcat\""}, {"\"ca t\"", "\"\""}},
        {"^(yes|no)$", {"\"yes\"", "\"no\""}, {"\"yesno\"", "\"maybe\""}},
        {"^a|b$", {"\"ax\"", "\"xb\"", "\"a\""}, {"\"xa\"", "\"bx\""}},
        {"^\\\\d{3}\\\\s\\\\w+$", {"\"123 ab_9\"", "\"000 x\""}, {"\"12 ab\"", "\"123 a-b\""}},
        {"^[^\\\"\\\\\\\\]*$", {"\"plain\"", "\"\""}, {"\"a\\\"b\"", "\"a\\\\b\""}},
        {"^q\\\"$", {"\"q\\\"\""}, {"\"q\"", "\"q\\\\\""}},
        {"^\\\\n?x$", {"\"x\"", "\"\\nx\""}, {"\"\\tx\""}},
        {"^.{2}$", {"\"ab\"", "\"\xC3\xA9\xE2\x82\xAC\""}, {"\"a\"", "\"a\\n\"", "\"abc\""}},
        {"^(?:ab)+c?$", {"\"ab\"", "\"ababc\""}, {"\"abc c\"", "\"a\""}},
        {"^[\\\\u00e0-\\\\u00ff]+$", {"\"\xC3\xA0\xC3\xBF\""}, {"\"a\"", "\"\xC4\x80\""}},
    };
    for (size_t i = 0; i < sizeof P / sizeof *P; i++) {
        char schema[256];
        snprintf(schema, sizeof schema, "{\"type\":\"string\",\"pattern\":\"%s\"}", P[i].pattern);
        for (int k = 0; k < 4 && P[i].yes[k]; k++)
            CHECKF(takes(schema, P[i].yes[k]) == 1, "pattern %s refuses %s", P[i].pattern, P[i].yes[k]);
        for (int k = 0; k < 4 && P[i].no[k]; k++)
            CHECKF(takes(schema, P[i].no[k]) == 0, "pattern %s takes %s", P[i].pattern, P[i].no[k]);
    }
}

/* What is refused names the place in the schema and the keyword or construct. */
static void test_refusals(void)
{
    static const struct {
        const char *schema, *want;
    } R[] = {
        {"{\"type\":\"array\",\"uniqueItems\":true}", "at /: keyword 'uniqueItems' is not supported"},
        {"{\"properties\":{\"a\":{\"not\":{}}}}", "at /properties/a: keyword 'not' is not supported"},
        {"{\"items\":{\"multipleOf\":2}}", "at /items: keyword 'multipleOf' is not supported"},
        {"{\"patternProperties\":{\"^x\":{}}}", "keyword 'patternProperties' is not supported"},
        {"{\"if\":{},\"then\":{}}", "keyword 'if' is not supported"},
        {"{\"minProperties\":1}", "keyword 'minProperties' is not supported"},
        {"{\"type\":\"string\",\"format\":\"hostname\"}", "format 'hostname' is not supported"},
        {"{\"type\":\"string\",\"pattern\":\"(?=a)b\"}", "at /pattern: pattern \"(?=a)b\", at 2: lookaround"},
        {"{\"type\":\"string\",\"pattern\":\"\\\\bword\"}", "word boundaries"},
        {"{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", "backreferences are not supported"},
        {"{\"type\":\"string\",\"pattern\":\"a{2000}\"}", "a repetition count above 1000"},
        {"{\"oneOf\":[{\"type\":\"string\"},{\"maxLength\":2}]}", "at /oneOf/1: oneOf: Ember can only enforce oneOf"},
        {"{\"$ref\":\"http://example.com/s.json\"}", "only references within the schema"},
        {"{\"$ref\":\"#/$defs/missing\"}", "points at nothing"},
        {"{\"type\":\"strin\"}", "type must be a type name"},
        {"false", "the schema false matches nothing"},
        {"{\"type\":\"string\",\"pattern\":\"a\",\"maxLength\":3}", "pattern beside minLength or maxLength"},
        {"{\"allOf\":[{\"maxLength\":2},{\"maxLength\":3}]}", "allOf: its schemas give 'maxLength' different values"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\"],\"allOf\":[{\"additionalProperties\":false}]}",
         "at /properties/a: a required property that additionalProperties false forbids"},
        {"{\"enum\":[1,2],\"type\":\"string\"}", "enum or const leaves no value of the allowed types"},
        {"{\"type\": \"object\",\n \"properties\": {\"a\": }}", "not JSON: line 2, column 22: a number needs digits"},
        {"{\"a\": \"\\ud800\"}", "not JSON: line 1, column 14: a lone surrogate"},
    };
    for (size_t i = 0; i < sizeof R / sizeof *R; i++) {
        char *gbnf = NULL;
        ember_err err = {{0}};
        ember_status s = ember_json_schema_to_gbnf(R[i].schema, strlen(R[i].schema), &gbnf, &err);
        CHECKF(s == EMBER_ERR_INVALID_ARG && !gbnf && strstr(err.msg, R[i].want), "%s: '%s' (want '%s')", R[i].schema,
               err.msg, R[i].want);
        ember_free(gbnf);
    }
}

/* The public calls: the grammar text they give is the one the requests use, and a check
 * says where a text stops following it. */
static void test_public_calls(void)
{
    const char *schema = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}";
    size_t len = 0;
    char err[256];
    CHECK(ember_json_schema_to_grammar(schema, NULL, 0, &len, err, sizeof err) == EMBER_OK && len > 0);
    char *buf = malloc(len + 1);
    size_t len2 = 0;
    CHECK(buf && ember_json_schema_to_grammar(schema, buf, len + 1, &len2, err, sizeof err) == EMBER_OK && len2 == len);
    ember_grammar_match m;
    const char *text = "{\"n\": 12x}";
    CHECK(buf && ember_grammar_check(buf, NULL, text, strlen(text), &m, err, sizeof err) == EMBER_OK);
    CHECK(!m.complete && m.taken == 8);
    CHECK(buf && ember_grammar_check(buf, NULL, "{\"n\": 12}", 9, &m, err, sizeof err) == EMBER_OK && m.complete);
    CHECK(ember_grammar_check("root ::= [", NULL, "", 0, &m, err, sizeof err) == EMBER_ERR_INVALID_ARG &&
          strstr(err, "line 1, column 10"));
    CHECK(ember_json_schema_to_grammar("{\"not\":{}}", NULL, 0, &len, err, sizeof err) == EMBER_ERR_INVALID_ARG &&
          strstr(err, "keyword 'not'"));
    free(buf);
}

/* The JSON reader: escapes decoded, nesting kept, strictness. */
static void test_json_reader(void)
{
    const char *text = " {\"a\\u00e9\": [1, -2.5e3, \"x\\ud83d\\ude00\\n\", true, null, {}], \"b\": \"\"} ";
    ember_json_doc *doc = NULL;
    const ember_json *root;
    ember_err err = {{0}};
    CHECK(ember_json_parse(text, strlen(text), &doc, &root, &err) == EMBER_OK);
    const ember_json *a = root ? ember_json_get(root, "a\xC3\xA9") : NULL;
    CHECK(a && a->kind == EJ_ARRAY && a->n == 6 && !strcmp(a->items[1].str, "-2.5e3"));
    CHECK(a && a->items[2].len == 6 && !memcmp(a->items[2].str, "x\xF0\x9F\x98\x80\n", 6));
    CHECK(a && a->items[3].kind == EJ_TRUE && a->items[4].kind == EJ_NULL && a->items[5].kind == EJ_OBJECT);
    ember_json_free(doc);
    static const char *bad[] = {"[1,]", "{\"a\" 1}", "01", "[1] 2", "\"\x01\"", "nul", "{\"a\":1,}", "[NaN]", "\"\\x\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        doc = NULL;
        CHECKF(ember_json_parse(bad[i], strlen(bad[i]), &doc, &root, &err) == EMBER_ERR_INVALID_ARG &&
                   strstr(err.msg, "line 1, column"),
               "'%s' parsed", bad[i]);
        ember_json_free(doc);
    }
}

int main(void)
{
    test_integers();
    test_numbers();
    test_patterns();
    test_refusals();
    test_public_calls();
    test_json_reader();
    return tu_finish("test_schema_grammar");
}
