/* api_fields.c — the OpenAI request fields Ember knows and does not honour. A client that
 * sends one and gets a 200 would take the answer for what it asked (an insertion, audio,
 * a web search): each is refused with a 400 naming it, unless its value asks for nothing
 * (null, false, 0, "", or the one value that is the default).
 * Fields Ember does not know at all are ignored, as vLLM does. The whole table, honoured
 * fields too, is in docs/server.md. */
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"

enum { CHAT = 1, COMPLETION = 2, BOTH = 3 };
enum { NUL,      /* null or false (an object there, even {}, asks for the feature) */
       OFF,      /* or 0, "", [] or {} */
       TEXT };   /* or ["text"] */

static const struct {
    const char *key;
    int kinds, allowed;
    const char *why;
} REFUSED[] = {
    {"suffix", COMPLETION, OFF, "insertion (a suffix after the completion) is not supported"},
    {"functions", CHAT, OFF, "the deprecated functions API is not supported: use 'tools'"},
    {"function_call", CHAT, OFF, "the deprecated functions API is not supported: use 'tool_choice'"},
    {"audio", CHAT, NUL, "audio output is not supported"},
    {"modalities", CHAT, TEXT, "only [\"text\"] is supported"},
    {"prediction", CHAT, NUL, "predicted outputs are not supported"},
    {"web_search_options", CHAT, NUL, "web search is not supported"},
    {"store", CHAT, OFF, "completions are not stored"},
    {"reasoning_effort", CHAT, OFF, "reasoning effort is not a setting Ember passes to models"},
    {"verbosity", CHAT, OFF, "verbosity is not a setting Ember passes to models"},
};

/* Whether v asks for nothing beyond the default. */
static bool harmless(const cJSON *v, int allowed)
{
    if (cJSON_IsNull(v) || cJSON_IsFalse(v)) return true;
    if (allowed == NUL) return false;
    if (cJSON_IsNumber(v)) return v->valuedouble == 0;
    if (cJSON_IsString(v)) return !v->valuestring[0];
    if ((cJSON_IsArray(v) || cJSON_IsObject(v)) && !v->child) return true;
    const cJSON *first = cJSON_IsArray(v) ? v->child : NULL;
    return allowed == TEXT && first && !first->next && cJSON_IsString(first) && !strcmp(first->valuestring, "text");
}

bool api_unsupported(const cJSON *o, api_kind kind, api_error *e)
{
    int k = kind == API_CHAT ? CHAT : COMPLETION;
    for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, REFUSED[i].key);
        if (!(REFUSED[i].kinds & k) || !v || harmless(v, REFUSED[i].allowed)) continue;
        api_fail(e, 400, "invalid_request_error", REFUSED[i].key, "unsupported_parameter", "'%s': %s",
                 REFUSED[i].key, REFUSED[i].why);
        return false;
    }
    return true;
}
