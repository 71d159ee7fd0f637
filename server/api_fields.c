/* api_fields.c — the request fields Ember knows and does not honour: OpenAI's, and the
 * samplers of llama.cpp's and vLLM's servers. A client that sends one and gets a 200 would
 * take the answer for what it asked (an insertion, audio, mirostat sampling): each is
 * refused with a 400 naming it, unless its value asks for nothing (null, false, 0, "", or
 * the one value that is the default). Fields Ember does not know at all are ignored, as
 * vLLM does, and listed (api_ignored) so that a client can see what had no effect. The
 * whole table, honoured fields too, is in docs/server.md. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"

enum { CHAT = 1, COMPLETION = 2, BOTH = 3 };
enum { NUL,      /* null or false (an object there, even {}, asks for the feature) */
       OFF,      /* or 0, "", [] or {} */
       TEXT,     /* or ["text"] */
       ONE };    /* or 1 (a sampler whose neutral value is 1) */

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
    /* llama.cpp's server's samplers */
    {"mirostat", BOTH, OFF, "mirostat sampling is not supported: use temperature, top_p, top_k or min_p"},
    {"typical_p", BOTH, ONE, "locally typical sampling is not supported"},
    {"tfs_z", BOTH, ONE, "tail-free sampling is not supported"},
    {"dynatemp_range", BOTH, OFF, "dynamic temperature is not supported"},
    {"xtc_probability", BOTH, OFF, "XTC sampling is not supported"},
    {"dry_multiplier", BOTH, OFF, "DRY sampling is not supported: use repetition_penalty or frequency_penalty"},
    {"n_probs", BOTH, OFF, "use 'logprobs' (and chat's 'top_logprobs')"},
    /* vLLM's */
    {"use_beam_search", BOTH, OFF, "beam search is not supported"},
    {"min_tokens", BOTH, OFF, "a minimum length is not supported"},
    {"stop_token_ids", BOTH, OFF, "stop token ids are not supported: use 'stop' strings"},
    {"prompt_logprobs", BOTH, NUL, "use /v1/completions with 'echo' and 'logprobs'"},
    {"guided_json", BOTH, NUL, "vLLM's guided decoding fields are not supported: use 'response_format' or 'json_schema'"},
    {"guided_regex", BOTH, NUL, "vLLM's guided decoding fields are not supported: use 'grammar'"},
    {"guided_choice", BOTH, NUL, "vLLM's guided decoding fields are not supported: use 'grammar'"},
    {"guided_grammar", BOTH, NUL, "vLLM's guided decoding fields are not supported: use 'grammar'"},
};

/* The fields Ember reads or takes as asking for nothing (docs/server.md's table), besides
 * those of REFUSED: any other is ignored and listed. */
static const struct {
    const char *key;
    int kinds;
} KNOWN[] = {
    {"model", BOTH}, {"messages", CHAT}, {"prompt", COMPLETION}, {"max_tokens", BOTH},
    {"max_completion_tokens", BOTH}, {"temperature", BOTH}, {"top_p", BOTH}, {"seed", BOTH}, {"stop", BOTH},
    {"stream", BOTH}, {"stream_options", BOTH}, {"n", BOTH}, {"best_of", COMPLETION}, {"presence_penalty", BOTH},
    {"frequency_penalty", BOTH}, {"logit_bias", BOTH}, {"logprobs", BOTH}, {"top_logprobs", CHAT},
    {"echo", COMPLETION}, {"response_format", BOTH}, {"json_schema", BOTH}, {"grammar", BOTH}, {"tools", CHAT},
    {"tool_choice", CHAT}, {"parallel_tool_calls", CHAT}, {"top_k", BOTH}, {"min_p", BOTH},
    {"repetition_penalty", BOTH}, {"ignore_eos", BOTH}, {"truncate_prompt_tokens", BOTH}, {"user", BOTH},
    {"service_tier", BOTH}, {"metadata", CHAT}, {"safety_identifier", BOTH}, {"prompt_cache_key", BOTH},
};

/* Whether v asks for nothing beyond the default. */
static bool harmless(const cJSON *v, int allowed)
{
    if (cJSON_IsNull(v) || cJSON_IsFalse(v)) return true;
    if (allowed == NUL) return false;
    if (allowed == ONE) return cJSON_IsNumber(v) && v->valuedouble == 1;
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

static bool known(const char *key, int k)
{
    for (size_t i = 0; i < sizeof KNOWN / sizeof *KNOWN; i++)
        if ((KNOWN[i].kinds & k) && !strcmp(KNOWN[i].key, key)) return true;
    for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++)
        if ((REFUSED[i].kinds & k) && !strcmp(REFUSED[i].key, key)) return true;
    return false;
}

void api_ignored(const cJSON *o, api_kind kind, char *out, size_t cap)
{
    int k = kind == API_CHAT ? CHAT : COMPLETION;
    size_t at = 0;
    const cJSON *it;
    out[0] = 0;
    cJSON_ArrayForEach(it, o) {
        if (!it->string || known(it->string, k)) continue;
        size_t need = strlen(it->string) + (at ? 2 : 0);
        if (at + need + 4 >= cap) { /* room for "..." stays */
            snprintf(out + at, cap - at, "%s...", at ? ", " : "");
            return;
        }
        size_t from = at + (at ? 2 : 0);
        at += (size_t)snprintf(out + at, cap - at, "%s%s", at ? ", " : "", it->string);
        for (size_t i = from; i < at; i++) /* it goes into a header: no control bytes, no commas */
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", out[i])) out[i] = '?';
    }
}
