/* test_tool_calls.c — tool calls in the four syntaxes models are taught (ember.h
 * ember_tool_calls_grammar / ember_tool_calls_parse), without a device: each grammar
 * takes well-formed calls to the tools with arguments that follow their schemas and
 * refuses the rest (another function, a wrong type, a missing required argument, two
 * calls where one is allowed); a reply is split into its text and its calls, the
 * arguments exactly as written; what cannot be made is refused with the tool named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "testutil.h"

static const char *TOOLS =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"The weather.\","
    "  \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", \"maxLength\": 20},"
    "  \"unit\": {\"enum\": [\"C\", \"F\"]}}, \"required\": [\"city\"], \"additionalProperties\": false}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"add\", \"parameters\": {\"type\": \"object\","
    "  \"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": {\"type\": \"integer\"}}, \"required\": [\"a\", \"b\"],"
    "  \"additionalProperties\": false}}}]";

static char *grammar(ember_tool_syntax s, const char *only, int parallel)
{
    size_t len = 0;
    char err[256];
    if (ember_tool_calls_grammar(s, TOOLS, only, parallel, NULL, 0, &len, err, sizeof err) != EMBER_OK) {
        CHECKF(0, "syntax %d: %s", (int)s, err);
        return NULL;
    }
    char *g = malloc(len + 1);
    CHECK(g && ember_tool_calls_grammar(s, TOOLS, only, parallel, g, len + 1, &len, err, sizeof err) == EMBER_OK);
    return g;
}

static int follows(const char *g, const char *text)
{
    ember_grammar_match m;
    char err[256];
    if (!g || ember_grammar_check(g, NULL, text, strlen(text), &m, err, sizeof err) != EMBER_OK) {
        CHECKF(0, "%s", err);
        return -1;
    }
    return m.complete;
}

typedef struct sample {
    ember_tool_syntax s;
    const char *one, *two, *bad[4];
} sample;

static const sample S[] = {
    {EMBER_TOOLS_HERMES, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"C\"}}\n</tool_call>",
     "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": -2}}</tool_call>\n<tool_call>{\"name\": \"get_weather\", "
     "\"arguments\": {\"city\": \"Rome\"}}</tool_call>",
     {"<tool_call>{\"name\": \"sub\", \"arguments\": {\"a\": 1, \"b\": 2}}</tool_call>",
      "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": \"1\", \"b\": 2}}</tool_call>",
      "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1}}</tool_call>",
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": \"K\"}}</tool_call>"}},
    {EMBER_TOOLS_MISTRAL, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
     "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}, \"id\": \"abc123XYZ\"}, {\"name\": \"add\", "
     "\"arguments\": {\"a\": 3, \"b\": 4}}]",
     {"[TOOL_CALLS][{\"arguments\": {\"a\": 1, \"b\": 2}, \"name\": \"add\"}]",
      "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}, \"id\": \"short\"}]",
      "[TOOL_CALLS]{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}"}},
    {EMBER_TOOLS_LLAMA3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", NULL,
     {"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}", "{ \"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}"}},
    {EMBER_TOOLS_JSON, "{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 10, \"b\": 20}}]}",
     "{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 10, \"b\": 20}}, {\"name\": \"get_weather\", "
     "\"arguments\": {\"city\": \"Lima\"}}]}",
     {"{\"tool_calls\": []}", "{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 1.5, \"b\": 2}}]}"}},
};

static void test_grammars(void)
{
    for (size_t i = 0; i < sizeof S / sizeof *S; i++) {
        char *par = grammar(S[i].s, NULL, 1), *single = grammar(S[i].s, NULL, 0), *only = grammar(S[i].s, "add", 1);
        const char *trig = ember_tool_syntax_trigger(S[i].s);
        CHECKF(follows(par, S[i].one) == 1 && !strncmp(S[i].one, trig, strlen(trig)), "syntax %zu: one call", i);
        CHECKF(follows(single, S[i].one) == 1, "syntax %zu: one call, not parallel", i);
        if (S[i].two) {
            CHECKF(follows(par, S[i].two) == 1, "syntax %zu: two calls", i);
            CHECKF(follows(single, S[i].two) == 0, "syntax %zu: two calls where one is allowed", i);
        }
        CHECKF(follows(only, S[i].one) == (strstr(S[i].one, "\"add\"") ? 1 : 0), "syntax %zu: only add", i);
        /* only the second tool: no empty call sneaks in where the first one was */
        char empty[160];
        snprintf(empty, sizeof empty, "%s%s", trig, S[i].s == EMBER_TOOLS_HERMES ? "</tool_call>" :
                 S[i].s == EMBER_TOOLS_MISTRAL ? "[]" : S[i].s == EMBER_TOOLS_JSON ? ": []}" : "");
        CHECKF(follows(only, empty) == 0, "syntax %zu: only add takes an empty call", i);
        for (int k = 0; k < 4 && S[i].bad[k]; k++)
            CHECKF(follows(par, S[i].bad[k]) == 0, "syntax %zu takes '%s'", i, S[i].bad[k]);
        free(par), free(single), free(only);
    }
}

static void test_parse(void)
{
    char calls[1024], err[256];
    size_t content = 0, n = 0;
    const char *reply = "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n"
                        "</tool_call><tool_call>{\"name\": \"add\", \"arguments\": {\"a\":1,\"b\":2}}</tool_call>";
    CHECK(ember_tool_calls_parse(EMBER_TOOLS_HERMES, reply, strlen(reply), &content, calls, sizeof calls, &n, err,
                                 sizeof err) == EMBER_OK);
    CHECKF(content == 13 && !strcmp(calls, "[{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}, "
                                          "{\"name\": \"add\", \"arguments\": \"{\\\"a\\\":1,\\\"b\\\":2}\"}]") &&
               n == strlen(calls),
           "hermes: %zu '%s'", content, calls);
    const char *mistral = "[{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}, \"id\": \"abc123XYZ\"}]";
    CHECK(ember_tool_calls_parse(EMBER_TOOLS_MISTRAL, mistral, strlen(mistral), &content, calls, sizeof calls, &n,
                                 err, sizeof err) == EMBER_OK);
    CHECKF(content == 0 && strstr(calls, "\"name\": \"add\""), "mistral without its control token: '%s'", calls);
    const char *llama = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}";
    CHECK(ember_tool_calls_parse(EMBER_TOOLS_LLAMA3, llama, strlen(llama), &content, calls, sizeof calls, &n, err,
                                 sizeof err) == EMBER_OK);
    CHECKF(!strcmp(calls, "[{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}]"), "llama: '%s'",
           calls);
    const char *plain = "Just an answer, no call.";
    CHECK(ember_tool_calls_parse(EMBER_TOOLS_JSON, plain, strlen(plain), &content, calls, sizeof calls, &n, err,
                                 sizeof err) == EMBER_OK && n == 0 && content == strlen(plain));
    const char *broken = "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1</tool_call>";
    CHECK(ember_tool_calls_parse(EMBER_TOOLS_HERMES, broken, strlen(broken), &content, calls, sizeof calls, &n, err,
                                 sizeof err) == EMBER_ERR_INVALID_ARG && strstr(err, "do not parse"));
}

static void test_refusals(void)
{
    size_t len;
    char err[256];
    CHECK(ember_tool_calls_grammar(EMBER_TOOLS_HERMES, "[{\"type\": \"function\", \"function\": {\"name\": \"f\", "
                                   "\"parameters\": {\"type\": \"array\", \"uniqueItems\": true}}}]",
                                   NULL, 1, NULL, 0, &len, err, sizeof err) == EMBER_ERR_INVALID_ARG &&
          strstr(err, "tools[0] (f): parameters") && strstr(err, "uniqueItems"));
    CHECK(ember_tool_calls_grammar(EMBER_TOOLS_HERMES, TOOLS, "nope", 1, NULL, 0, &len, err, sizeof err) ==
              EMBER_ERR_INVALID_ARG &&
          strstr(err, "no tool named 'nope'"));
    CHECK(ember_tool_calls_grammar(EMBER_TOOLS_HERMES, "[]", NULL, 1, NULL, 0, &len, err, sizeof err) ==
          EMBER_ERR_INVALID_ARG);
    CHECK(ember_tool_calls_grammar(EMBER_TOOLS_HERMES, "[{\"type\": \"function\", \"function\": {}}]", NULL, 1, NULL,
                                   0, &len, err, sizeof err) == EMBER_ERR_INVALID_ARG &&
          strstr(err, "needs a name"));
}

int main(void)
{
    test_grammars();
    test_parse();
    test_refusals();
    return tu_finish("test_tool_calls");
}
