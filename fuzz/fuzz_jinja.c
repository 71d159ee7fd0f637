/* fuzz_jinja.c — the Jinja interpreter (engine/chat/jinja.h) on arbitrary templates:
 * the input is the template's source, rendered with a fixed conversation (system, user,
 * assistant with a tool call, tool result; tools; bos and eos) under small limits.
 *
 * Checks: a refusal has a "jinja: ..." message; a rendering has the length returned
 * (NUL-terminated there; a NUL inside comes from the template's own text or a "\x00"
 * escape) and is within max_output; rendering twice gives the same text (a parsed
 * template is not changed by rendering it). */
#include <string.h>

#include "common/alloc.h"
#include "engine/chat/jinja.h"
#include "util.h"

static const char CONTEXT[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"Hi \\u00e9 \\ud83d\\ude00\"},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"call12345\", \"type\": \"function\","
    " \"function\": {\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2.5}}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"call12345\", \"content\": \"3.5\"}, {\"role\": \"user\", \"content\": \"<think>\\nx\\n</think>y\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"add\", \"description\": \"Add\", \"parameters\": {\"type\": \"object\","
    " \"properties\": {\"a\": {\"type\": \"number\", \"description\": \"A\"}}, \"required\": [\"a\"]}}}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"__now\": 1735732800}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ember_jinja *t = NULL;
    ember_err err = {{0}};
    if (ember_jinja_parse((const char *)data, size, &t, &err) != EMBER_OK) {
        FUZZ_CHECK(!t && strncmp(err.msg, "jinja: ", 7) == 0, "refused without a message: '%s'", err.msg);
        return 0;
    }
    ember_jinja_limits lim = {.max_output = 1 << 16, .max_steps = 200000, .max_depth = 16, .max_memory = 16 << 20};
    char *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    ember_status s1 = ember_jinja_render(t, CONTEXT, sizeof CONTEXT - 1, &lim, &a, &la, &err);
    if (s1 == EMBER_OK) {
        FUZZ_CHECK(a[la] == 0 && strlen(a) <= la && la <= lim.max_output, "length %zu, string %zu", la, strlen(a));
    } else {
        FUZZ_CHECK(!a && strncmp(err.msg, "jinja: ", 7) == 0, "failed without a message: '%s'", err.msg);
    }
    ember_status s2 = ember_jinja_render(t, CONTEXT, sizeof CONTEXT - 1, &lim, &b, &lb, &err);
    FUZZ_CHECK(s1 == s2 && (s1 != EMBER_OK || (la == lb && memcmp(a, b, la) == 0)), "two renders differ");
    ember_free(a);
    ember_free(b);
    ember_jinja_free(t);
    return 0;
}
