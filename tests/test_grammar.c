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
#include "engine/grammar/mask_cache.h"
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

/* Bytes no UTF-8 text holds are refused, even where a class would take the character they
 * spell: a lead byte whose every completion lies outside the class, overlong forms,
 * surrogates, code points past U+10FFFF. */
static void test_utf8_rules(void)
{
    ember_grammar *ab = parse("root ::= [ab]+"), *any = parse("root ::= .+");
    ember_gmatch *m = NULL, *n = NULL;
    ember_err err = {{0}};
    if (!ab || !any || ember_gmatch_create(ab, &m, &err) != EMBER_OK || ember_gmatch_create(any, &n, &err) != EMBER_OK)
        return;
    static const char *never[] = {"\xF0", "\xE0", "\xC2", "\x80", "\xC0\x80"};
    for (size_t i = 0; i < sizeof never / sizeof *never; i++)
        CHECKF(!ember_gmatch_allows(m, (const uint8_t *)never[i], strlen(never[i])), "[ab] took byte %zu", i);
    static const char *bad[] = {"\xE0\x80", "\xE0\x9F\xBF", "\xF0\x80\x80\x80", "\xF0\x8F", "\xED\xA0\x80",
                                "\xF4\x90", "\xF5\x80\x80\x80", "\xC1\xBF"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECKF(!ember_gmatch_allows(n, (const uint8_t *)bad[i], strlen(bad[i])), ". took ill-formed bytes %zu", i);
    static const char *good[] = {"\xE0\xA0\x80", "\xF0\x90\x80\x80", "\xED\x9F\xBF", "\xF4\x8F\xBF\xBF", "\xC2\x80"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        CHECKF(ember_gmatch_allows(n, (const uint8_t *)good[i], strlen(good[i])), ". refused well-formed bytes %zu", i);
    ember_gmatch_free(m);
    ember_gmatch_free(n);
    ember_grammar_free(ab);
    ember_grammar_free(any);
}

/* A JSON grammar in the style of llama.cpp's json.gbnf. */
static const char *JSON =
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

/* The JSON grammar on documents and near misses. */
static void test_json(void)
{
    ember_grammar *g = parse(JSON);
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

/* A made-up vocabulary: every printable ASCII byte, pieces of JSON, characters split
 * into their bytes, random strings over JSON's characters, a control token (no bytes) and
 * an end-of-generation token last. */
enum { N_RANDOM = 600 };
typedef struct vocab {
    ember_vtrie_piece p[128 + 32 + N_RANDOM];
    char text[N_RANDOM][8];
    uint32_t n, eog;
} vocab;

static void make_vocab(vocab *v)
{
    static char ascii[96];
    static const char *fixed[] = {"{\"", "\":", "\": ", "\",", "\"}", "true", "false", "null", "12", "-3", ".5",
                                  "e+", "\\u", "00e9", "\xC3", "\xA9", "\xC3\xA9", "\xE2\x82", "\xAC", "\xE2\x82\xAC",
                                  "\n  ", "}}", "]}", "[{", " [", "\"\"", "ab\"", "\xFF", "\x80" "a",
                                  /* lead bytes after which UTF-8 allows fewer continuations */
                                  "\xE0", "\xED", "\xF0", "\xF4", "\xE1", "\xF1", "\x80", "\x8F", "\x90", "\x9F",
                                  "\xA0", "\xBF", "\xE0\xA0", "\xED\x9F\xBF", "\xF0\x90\x80",
                                  "\xE2\x82\xAC" "a", "\xC4\x80" "b!", "a\xC3\xA9\xC3\xA9", "!\xE2\x82\xAC!",
                                  "\xD0", "\xD0\x90", "\xD0\x90" "1", "\xC3\xA9" "2",
                                  /* across a chain's end into another chain (test_masks) */
                                  "a<", "a<abc", "<abc>", "<ab", "baaaab", "aaaa"};
    const char *alphabet = "{}[]\":, abe0129-.\\nu\xC3\xA9\xE0\xED\xF0\xF4\x80\x90\xA0\xBF";
    tu_rng rng = {1234};
    v->n = 0;
    for (int c = 32; c < 127; c++) ascii[c - 32] = (char)c;
    for (int c = 32; c < 127; c++) v->p[v->n++] = (ember_vtrie_piece){(const uint8_t *)ascii + c - 32, 1, 0};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        v->p[v->n++] = (ember_vtrie_piece){(const uint8_t *)fixed[i], (uint32_t)strlen(fixed[i]), 0};
    for (int i = 0; i < N_RANDOM; i++) {
        uint32_t len = 1 + (uint32_t)(tu_next(&rng) % 6);
        for (uint32_t k = 0; k < len; k++) v->text[i][k] = alphabet[tu_next(&rng) % strlen(alphabet)];
        v->p[v->n++] = (ember_vtrie_piece){(const uint8_t *)v->text[i], len, 0};
    }
    v->p[v->n++] = (ember_vtrie_piece){NULL, 0, 0}; /* a control token */
    v->eog = v->n;
    v->p[v->n++] = (ember_vtrie_piece){NULL, 0, 1};
}

static bool bit(const uint32_t *bits, uint32_t t) { return bits[t / 32] >> (t % 32) & 1; }

/* Random walks through grammar g over the made-up vocabulary: at every step the mask is
 * exactly the tokens ember_gmatch_allows takes (and the end-of-generation token exactly
 * where the text is complete), states with equal keys have equal masks, and each walk,
 * drawn from its masks, ends in a text the grammar takes. Returns the walks that ended
 * with the end-of-generation token. */
static int check_masks(const char *grammar, int walks, int max_tokens)
{
    vocab *v = calloc(1, sizeof *v);
    ember_vtrie *t = NULL;
    ember_err err = {{0}};
    ember_grammar *g = parse(grammar);
    ember_gmask_cache *cache = NULL;
    make_vocab(v);
    CHECK(ember_vtrie_build(v->p, v->n, &t, &err) == EMBER_OK);
    ember_gmask_vocab *shared = NULL; /* the JSON string characters' sets, made once per vocabulary */
    CHECK(!t || ember_gmask_vocab_create(t, &shared, &err) == EMBER_OK);
    CHECK(!g || !t || ember_gmask_cache_create(g, t, shared, 0, &cache, &err) == EMBER_OK);
    enum { MAX_KEYS = 256, KEY_LEN = 64 };
    static size_t key_len[MAX_KEYS];
    static uint32_t keys[MAX_KEYS][KEY_LEN], masks[MAX_KEYS][(sizeof v->p / sizeof *v->p + 31) / 32];
    uint32_t n_keys = 0, bits[(sizeof v->p / sizeof *v->p + 31) / 32], ended = 0, key[KEY_LEN];
    tu_rng rng = {99};
    for (int w = 0; g && t && w < walks; w++) {
        ember_gmatch *m = NULL;
        char text[4096];
        size_t len = 0;
        if (ember_gmatch_create(g, &m, &err) != EMBER_OK) break;
        for (int k = 0; k < max_tokens; k++) {
            uint32_t n_allowed = 0, seen = 0, n_cached = 0;
            CHECK(ember_gmatch_mask(m, t, bits, &n_allowed));
            /* the cache's automaton gives the same mask as the walk of the matcher */
            const uint32_t *cached = cache ? ember_gmask_get(cache, m, &n_cached) : NULL;
            CHECKF(cached && n_cached == n_allowed && !memcmp(cached, bits, sizeof bits), "walk %d token %d: the "
                   "cache's mask differs", w, k);
            for (uint32_t id = 0; id < v->n; id++) {
                bool want = id == v->eog ? ember_gmatch_complete(m)
                                         : v->p[id].len && ember_gmatch_allows(m, v->p[id].bytes, v->p[id].len);
                CHECKF(bit(bits, id) == want, "walk %d token %d: mask says %d for token %u, allows %d", w, k,
                       bit(bits, id), id, want);
                seen += want;
            }
            CHECK(seen == n_allowed);
            size_t kl = ember_gmatch_key(m, key, KEY_LEN);
            uint32_t i = 0;
            /* equal but for the pending character's bits, which the last number holds */
            while (kl <= KEY_LEN && i < n_keys && (key_len[i] != kl || memcmp(keys[i], key, (kl - 1) * sizeof *key))) i++;
            if (kl <= KEY_LEN && i < n_keys) CHECKF(!memcmp(masks[i], bits, sizeof bits), "walk %d: equal keys, masks differ", w);
            else if (kl <= KEY_LEN && n_keys < MAX_KEYS) {
                memset(keys[n_keys], 0, sizeof keys[n_keys]);
                key_len[n_keys] = kl;
                memcpy(keys[n_keys], key, kl * sizeof *key), memcpy(masks[n_keys++], bits, sizeof bits);
            }
            if (n_allowed == 0) break;
            uint32_t pick = (uint32_t)(tu_next(&rng) % n_allowed), id = 0;
            for (;; id++) if (bit(bits, id) && pick-- == 0) break;
            if (id == v->eog) {
                text[len] = 0;
                CHECKF(takes(g, text, 0), "walk %d ended on '%s', which the grammar refuses", w, text);
                ended++;
                break;
            }
            CHECK(ember_gmatch_accept(m, v->p[id].bytes, v->p[id].len));
            if (len + v->p[id].len < sizeof text) memcpy(text + len, v->p[id].bytes, v->p[id].len), len += v->p[id].len;
        }
        ember_gmatch_free(m);
    }
    if (cache) {
        ember_gmask_counts k = ember_gmask_cache_counts(cache);
        printf("masks: %d walks, %u ended; %llu masks made, %llu shared; %llu transitions run, %llu taken over: %s\n",
               walks, ended, (unsigned long long)k.masks_made, (unsigned long long)k.masks_shared,
               (unsigned long long)k.transitions, (unsigned long long)k.derived, grammar);
    }
    ember_gmask_cache_free(cache);
    ember_gmask_vocab_free(shared);
    ember_vtrie_free(t);
    ember_grammar_free(g);
    free(v);
    return (int)ended;
}

/* The trie holds every token with bytes once, under its bytes, in depth-first order. */
static void test_trie(void)
{
    vocab *v = calloc(1, sizeof *v);
    ember_vtrie *t = NULL;
    ember_err err = {{0}};
    make_vocab(v);
    if (ember_vtrie_build(v->p, v->n, &t, &err) != EMBER_OK) {
        CHECKF(0, "trie: %s", err.msg);
        free(v);
        return;
    }
    uint32_t found = 0, with_bytes = 0, path[16];
    for (uint32_t id = 0; id < v->n; id++) with_bytes += v->p[id].len > 0;
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        uint32_t d = t->depth[i];
        CHECK(d >= 1 && d <= t->max_depth && t->end[i] > i && t->end[i] <= t->n_nodes);
        if (d > 16) continue;
        path[d - 1] = t->byte[i];
        for (uint32_t k = t->tok_first[i]; k < t->tok_first[i] + t->tok_n[i]; k++, found++) {
            const ember_vtrie_piece *p = &v->p[t->ids[k]];
            bool same = p->len == d;
            for (uint32_t j = 0; same && j < d; j++) same = p->bytes[j] == path[j];
            CHECKF(same, "token %u is under the wrong path", t->ids[k]);
        }
    }
    CHECK(found == with_bytes && t->n_eog == 1 && t->eog[0] == v->eog);
    ember_vtrie_free(t);
    free(v);
}

static void test_masks(void)
{
    CHECK(check_masks(JSON, 40, 60) > 0);
    CHECK(check_masks("root ::= [a-e]+ (\",\" [a-e]+)* \"!\"", 20, 30) > 0);
    CHECK(check_masks("root ::= \"é\" [^a-z]{1,3} \"€\" | \"null\"", 30, 20) > 0);
    CHECK(check_masks("root ::= p\np ::= \"[\" p \"]\" p | \"\"", 30, 40) > 0);
    /* a bounded string: each count its own state, masked from plain tokens by length */
    CHECK(check_masks("root ::= \"<\" [^<>]{0,7} \">\" [a-z]{2}", 40, 20) > 0);
    /* plain ASCII where longer characters are refused, or lead elsewhere */
    CHECK(check_masks("root ::= \"<\" [ -;=?-~]{0,9} \">\"", 40, 20) > 0);
    CHECK(check_masks("root ::= \"<\" ([ -;=?-~] | [\\x80-\\U0010FFFF] \"!\"){0,4} \">\"", 40, 20) > 0);
    /* longer characters plain at one step of the chain and not the next; some plain and
     * others not */
    CHECK(check_masks("root ::= \"<\" ([^<>] [^<>\\x80-\\U0010FFFF]){0,4} \">\"", 40, 20) > 0);
    CHECK(check_masks("root ::= \"<\" ([^<>\\u0100-\\U0010FFFF] | [\\u0100-\\U0010FFFF] \"!\"){0,6} \">\"", 40, 20) > 0);
    /* a lead byte that one stack's class covers and another's misses (C3: U+00C0-U+00FF)
     * and one both cover (D0): the cache must tell their pending states apart */
    CHECK(check_masks("root ::= ([\\u0400-\\u04FF] \"1\" | [\\u0080-\\u04FF] \"2\")+", 60, 12) > 0);
    /* every longer character alike for one stack, only those from U+E000 for another */
    CHECK(check_masks("root ::= \"<\" ([^<>!] | [\\uE000-\\U0010FFFF] \"!\"){0,6} \">\"", 60, 20) > 0);
    /* Long bounded repetitions, whose transitions the cache takes over from one count up
     * and whose masks it shares once no token can use the counts up (rep_chain.h): the
     * tokens here are at most 8 bytes, so from a count of 11 on. A string met again and
     * again, entered afresh after a comma; two chains in one stack; a lower bound and an x
     * of two bytes; x that may match nothing; a chain entered after a rule that may match
     * nothing; the same chain nested in itself; escapes. */
    CHECK(check_masks("root ::= s (\",\" s){0,3}\ns ::= \"\\\"\" [^\"\\\\]{0,40} \"\\\"\"", 60, 60) > 0);
    CHECK(check_masks("root ::= \"<\" (\"ab\" | [c-e]){2,30} \">\" [a-z]{0,25}", 60, 40) > 0);
    CHECK(check_masks("root ::= ([a-c]? [d-f]?){0,30} \"!\"", 40, 40) > 0);
    CHECK(check_masks("root ::= w \"x\"{0,20} w \"<\" [^<>]{0,50} \">\"\nw ::= [ ]{0,6}", 60, 40) > 0);
    CHECK(check_masks("root ::= \"a\"{0,30} \"<\" [a-e]{0,3} \">\"", 80, 30) > 0); /* "<" enters a chain */
    CHECK(check_masks("root ::= (\"a\"{0,4} \"b\"){0,30} \"!\"", 60, 30) > 0);  /* x opens a chain */
    /* JSON's string characters: the vocabulary's shared sets */
    CHECK(check_masks("root ::= \"\\\"\" [^\"\\\\\\x00-\\x1F]{0,40} \"\\\"\" \"!\"", 60, 30) > 0);
    CHECK(check_masks("root ::= i\ni ::= [0-9]{1,20} | \"[\" (i (\",\" i){0,12})? \"]\"", 60, 40) > 0);
    CHECK(check_masks("root ::= \"{\" (\"\\\"\" ([^\"\\\\] | \"\\\\\" [\"\\\\nu]){0,50} \"\\\": \" [0-9]{1,3} \",\"){1,4} \"}\"", 60, 60) > 0);
}

int main(void)
{
    test_cases();
    test_split_characters();
    test_utf8_rules();
    test_json();
    test_long();
    test_errors();
    test_trie();
    test_masks();
    return tu_finish("test_grammar");
}
