/* test_grammar.c — GBNF grammars (engine/grammar): every syntax form parsed and matched
 * against texts it must take and texts it must refuse, whole and split into "tokens" at
 * every byte (a token may end inside a UTF-8 character); allows() leaves the matcher as
 * it was; a long text keeps the matcher's memory bounded; and every refused grammar names
 * the line, the column and the reason. No device needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/grammar/grammar.h"
#include "engine/grammar/grammar_match.h"
#include "testutil.h"

static ember_grammar *parse(const char *text)
{
    ember_grammar *g = NULL;
    ember_err err = {{0}};
    ember_status s = ember_grammar_parse(text, strlen(text), NULL, &g, &err);
    CHECKF(s == EMBER_OK, "parse '%s': %s", text, err.msg);
    return g;
}

/* Whether the grammar takes text whole, fed in pieces of `piece` bytes (0: whole). */
static bool takes(const ember_grammar *g, const char *text, size_t piece)
{
    ember_gmatch *m = NULL;
    ember_err err = {{0}};
    if (ember_gmatch_create(g, &m, &err) != EMBER_OK) return false;
    size_t n = strlen(text), step = piece ? piece : (n ? n : 1);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        bool allowed = ember_gmatch_allows(m, (const uint8_t *)text + i, k);
        ok = ember_gmatch_accept(m, (const uint8_t *)text + i, k);
        CHECKF(allowed == ok, "allows and accept disagree on '%s' at %zu", text, i);
    }
    ok = ok && ember_gmatch_complete(m);
    ember_gmatch_free(m);
    return ok;
}

typedef struct gcase {
    const char *grammar;
    const char *yes[6], *no[6];
} gcase;

static const gcase CASES[] = {
    {"root ::= \"hello\"", {"hello"}, {"hell", "hello!", "Hello", ""}},
    {"root ::= \"a\" | \"bc\" | \"\"", {"a", "bc", ""}, {"b", "abc", "ac"}},
    {"root ::= [a-c] [^a-c] [xyz0-9]", {"ad0", "cZy"}, {"aa0", "ad", "dd0"}},
    {"root ::= . .", {"ab", "\xC3\xA9!", "\n\t"}, {"a", "abc"}},
    {"root ::= \"x\"* \"y\"+ \"z\"?", {"y", "xxyy", "xyz", "yyyz"}, {"", "x", "xz", "yzz"}},
    {"root ::= \"ab\"{2} [0-9]{1,3} \"-\"{2,}", {"abab1--", "abab123----"}, {"ab1--", "abab1234--", "abab1-"}},
    {"root ::= (\"a\" | \"b\" \"c\")* \"!\"", {"!", "a!", "bcabc!"}, {"b!", "ab", ""}},
    {"root ::= item (\",\" item)*\nitem ::= [0-9]+", {"1", "12,3,456"}, {"", "1,", ",1", "1,,2"}},
    {"# balanced parentheses\nroot ::= p\np ::= \"(\" p \")\" p | \"\"  # empty too\n",
     {"", "()", "(())()", "((()))"},
     {"(", ")(", "(()"}},
    {"root ::= \"caf\\u00e9\" [\\x41-\\x43] [α-ω]", {"café\x41α", "caf\xC3\xA9" "Cω"}, {"cafe", "caféDα", "caféAa"}},
    {"root ::= \"a\"\n     | \"b\"\nother ::= \"c\"", {"a", "b"}, {"c", "ab"}},
    {"root ::= [ \\t\\n]* \"\\\"\" ([^\"\\\\] | \"\\\\\" [\"\\\\nt])* \"\\\"\"",
     {"\"\"", " \"a\\\"b\"", "\"\\\\\\n\""},
     {"\"", "\"a\\x\"", "a"}},
    {"root ::= x{0,2} \"!\"\nx ::= \"a\" | \"bb\"", {"!", "a!", "abb!", "bbbb!"}, {"aaa!", "b!"}},
};

static void test_cases(void)
{
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        ember_grammar *g = parse(CASES[c].grammar);
        if (!g) continue;
        for (int i = 0; i < 6 && CASES[c].yes[i]; i++)
            for (size_t piece = 0; piece <= 3; piece++)
                CHECKF(takes(g, CASES[c].yes[i], piece), "grammar %zu takes '%s' (pieces of %zu)", c,
                       CASES[c].yes[i], piece);
        for (int i = 0; i < 6 && CASES[c].no[i]; i++)
            for (size_t piece = 0; piece <= 1; piece++)
                CHECKF(!takes(g, CASES[c].no[i], piece), "grammar %zu refuses '%s' (pieces of %zu)", c,
                       CASES[c].no[i], piece);
        ember_grammar_free(g);
    }
}

/* A UTF-8 character split over tokens: its first byte is allowed only where a class can
 * take a character it begins. */
static void test_split_characters(void)
{
    ember_grammar *g = parse("root ::= [a-z] [é-ë] \"€\"");
    ember_gmatch *m = NULL;
    ember_err err = {{0}};
    if (!g || ember_gmatch_create(g, &m, &err) != EMBER_OK) return;
    CHECK(!ember_gmatch_allows(m, (const uint8_t *)"\xC3", 1)); /* é begins there, but [a-z] is first */
    CHECK(ember_gmatch_accept(m, (const uint8_t *)"a", 1));
    CHECK(ember_gmatch_allows(m, (const uint8_t *)"\xC3", 1));  /* U+00C0-U+00FF meets é-ë */
    CHECK(!ember_gmatch_allows(m, (const uint8_t *)"\xC4", 1)); /* U+0100-U+013F does not */
    CHECK(!ember_gmatch_allows(m, (const uint8_t *)"\xC3\xA8", 2)); /* è */
    CHECK(ember_gmatch_accept(m, (const uint8_t *)"\xC3", 1));
    CHECK(!ember_gmatch_complete(m) && ember_gmatch_open(m));
    CHECK(!ember_gmatch_allows(m, (const uint8_t *)"a", 1)); /* a continuation byte is due */
    CHECK(ember_gmatch_accept(m, (const uint8_t *)"\xAB\xE2\x82", 3)); /* ë, then 2 of €'s 3 bytes */
    CHECK(!ember_gmatch_complete(m));
    CHECK(!ember_gmatch_allows(m, (const uint8_t *)"\xAD", 1)); /* U+20AD */
    CHECK(ember_gmatch_accept(m, (const uint8_t *)"\xAC", 1));
    CHECK(ember_gmatch_complete(m) && !ember_gmatch_open(m));
    CHECK(!ember_gmatch_allows(m, (const uint8_t *)"x", 1));
    CHECK(ember_gmatch_allows(m, (const uint8_t *)"", 0));
    ember_gmatch_free(m);
    ember_grammar_free(g);
}

/* A JSON grammar in the style of llama.cpp's json.gbnf, on documents and near misses. */
static void test_json(void)
{
    static const char *json =
        "root   ::= object\n"
        "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
        "object ::=\n"
        "  \"{\" ws (\n"
        "            string \":\" ws value\n"
        "    (\",\" ws string \":\" ws value)*\n"
        "  )? \"}\" ws\n"
        "array  ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
        "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
        "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
        "ws     ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";
    ember_grammar *g = parse(json);
    if (!g) return;
    static const char *yes[] = {"{}", "{\"a\": 1}", "{\"say\": \"hi \\u00e9\", \"action\": \"give\", \"n\": [1, 2.5, -3e4]}",
                                "{\"x\": {\"y\": [true, false, null, {}]}}", "{\"é\": \"ü\"}"};
    static const char *no[] = {"", "[]", "{\"a\" 1}", "{\"a\": 01}", "{\"a\": tru}", "{\"a\": \"\x01\"}", "{} {}"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        CHECKF(takes(g, yes[i], 0), "json takes %s", yes[i]);
        CHECKF(takes(g, yes[i], 2), "json takes %s in pieces", yes[i]);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) CHECKF(!takes(g, no[i], 1), "json refuses %s", no[i]);
    ember_grammar_free(g);
}

/* 100,000 characters through x* and a nested repetition: accepted, and fast enough that a
 * leak of nodes per character would show as memory (compaction keeps what is reachable). */
static void test_long(void)
{
    ember_grammar *g = parse("root ::= (\"ab\" [0-9]*)* \"!\"");
    ember_gmatch *m = NULL;
    ember_err err = {{0}};
    if (!g || ember_gmatch_create(g, &m, &err) != EMBER_OK) return;
    bool ok = true;
    for (int i = 0; i < 100000 && ok; i++) {
        const char *c = i % 10 == 0 ? "a" : i % 10 == 1 ? "b" : "7";
        ok = ember_gmatch_accept(m, (const uint8_t *)c, 1);
    }
    CHECK(ok && !ember_gmatch_complete(m) && ember_gmatch_accept(m, (const uint8_t *)"!", 1) &&
          ember_gmatch_complete(m));
    ember_gmatch_free(m);
    ember_grammar_free(g);
}

/* Refused grammars: the message names the place and the reason. */
static void test_errors(void)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"root ::= \"a", "line 1, column 10: a string literal is not closed"},
        {"root ::= foo", "line 1, column 10: rule 'foo' is not defined"},
        {"root ::= x\nx ::= x \"a\"", "rule 'x' is left-recursive"},
        {"root ::= y\ny ::= \"b\"? y \"a\"", "rule 'y' is left-recursive"},
        {"root := \"a\"", "line 1, column 6: expected '::='"},
        {"root ::= [z-a]", "line 1, column 10: the range U+7A-U+61 runs backwards"},
        {"root ::= \"\\q\"", "line 1, column 11: unknown escape '\\q'"},
        {"a ::= \"x\"", "no rule named 'root'"},
        {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
        {"root ::= \"a\"{3,2}", "line 1, column 13: {3,2}: the maximum is below the minimum"},
        {"root ::= \"a\"{2000}", "a repetition count above 1000"},
        {"root ::= (\"a\" | \"b\"", "line 1, column 10: a group is not closed"},
        {"root ::= [ab", "line 1, column 10: a character class is not closed"},
        {"root ::= []", "an empty character class matches nothing"},
        {"root ::= \"a\" )", "line 1, column 14: unexpected ')'"},
        {"root ::= \"\\u12\"", "'\\u' needs 4 hex digits"},
        {"root ::= \"a\" ; \"b\"", "unexpected ';'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ember_grammar *g = NULL;
        ember_err err = {{0}};
        ember_status s = ember_grammar_parse(bad[i].text, strlen(bad[i].text), NULL, &g, &err);
        CHECKF(s == EMBER_ERR_INVALID_ARG && !g && strstr(err.msg, bad[i].want), "'%s': status %d, '%s' (want '%s')",
               bad[i].text, (int)s, err.msg, bad[i].want);
        ember_grammar_free(g);
    }
    /* another start rule by name */
    ember_grammar *g = NULL;
    ember_err err = {{0}};
    const char *two = "root ::= \"a\"\nanswer ::= \"yes\" | \"no\"";
    CHECK(ember_grammar_parse(two, strlen(two), "answer", &g, &err) == EMBER_OK && g);
    if (g) CHECK(takes(g, "no", 0) && !takes(g, "a", 0));
    ember_grammar_free(g);
}

int main(void)
{
    test_cases();
    test_split_characters();
    test_json();
    test_long();
    test_errors();
    return tu_finish("test_grammar");
}
