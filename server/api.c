/* api.c — see api.h. Parsing follows OpenAI's API reference for /v1/chat/completions and
 * /v1/completions, plus the fields vLLM accepts (top_k, min_p, repetition_penalty,
 * ignore_eos, truncate_prompt_tokens); fields it does not know are ignored, as OpenAI's
 * clients send some the server cannot use. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

void api_fail(api_error *e, int status, const char *type, const char *param, const char *code, const char *fmt, ...)
{
    e->status = status;
    e->type = type;
    e->param = param;
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

static bool bad(api_error *e, const char *param, const char *fmt, const char *a, double lo, double hi)
{
    api_fail(e, 400, "invalid_request_error", param, NULL, fmt, a, lo, hi);
    return false;
}

/* ---- typed fields: absent or null is fine (the default stays) ----------------------- */

static cJSON *field(const cJSON *o, const char *key)
{
    cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return it && !cJSON_IsNull(it) ? it : NULL;
}

static bool number(const cJSON *o, const char *key, double lo, double hi, double *v, api_error *e)
{
    cJSON *it = field(o, key);
    if (!it) return true;
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
        return bad(e, key, "'%s' must be a number", key, 0, 0);
    if (it->valuedouble < lo || it->valuedouble > hi)
        return bad(e, key, "'%s' must be between %g and %g", key, lo, hi);
    *v = it->valuedouble;
    return true;
}

static bool integer(const cJSON *o, const char *key, double lo, double hi, double *v, api_error *e)
{
    cJSON *it = field(o, key);
    if (it && (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble)))
        return bad(e, key, "'%s' must be an integer", key, 0, 0);
    return number(o, key, lo, hi, v, e);
}

static bool boolean(const cJSON *o, const char *key, bool *v, api_error *e)
{
    cJSON *it = field(o, key);
    if (!it) return true;
    if (!cJSON_IsBool(it)) return bad(e, key, "'%s' must be true or false", key, 0, 0);
    *v = cJSON_IsTrue(it);
    return true;
}

/* ---- the prompt ----------------------------------------------------------------------- */

/* A message's content: a string, or an array of parts of which the text parts count. */
static char *content_text(const cJSON *c)
{
    if (cJSON_IsString(c)) return strdup(c->valuestring);
    if (!cJSON_IsArray(c)) return NULL;
    size_t len = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, c) {
        cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsString(t)) return NULL;
        len += strlen(t->valuestring);
    }
    char *s = malloc(len + 1);
    if (!s) return NULL;
    size_t at = 0; /* appended by length: strcat from the start each time is quadratic */
    cJSON_ArrayForEach(p, c) {
        const char *t = cJSON_GetObjectItemCaseSensitive(p, "text")->valuestring;
        size_t n = strlen(t);
        memcpy(s + at, t, n);
        at += n;
    }
    s[at] = 0;
    return s;
}

static const char *role_of(const cJSON *m)
{
    static const char *const roles[] = {"system", "user", "assistant"};
    cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsString(r)) return NULL;
    if (strcmp(r->valuestring, "developer") == 0) return "system"; /* OpenAI's newer name */
    for (size_t i = 0; i < 3; i++)
        if (strcmp(r->valuestring, roles[i]) == 0) return roles[i];
    return NULL;
}

/* What is wrong with message i's role or content parts (a text-only server), or false. */
static bool check_message(const cJSON *m, int i, api_error *e)
{
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role"), *p;
    bool known = false;
    for (size_t k = 0; cJSON_IsString(r) && k < sizeof roles / sizeof *roles; k++) known |= !strcmp(r->valuestring, roles[k]);
    if (!known) {
        api_fail(e, 400, "invalid_request_error", "messages", NULL,
                 "'messages[%d].role' must be one of system, developer, user, assistant, tool (got %s%.40s%s)", i,
                 cJSON_IsString(r) ? "'" : "", cJSON_IsString(r) ? r->valuestring : "none", cJSON_IsString(r) ? "'" : "");
        return false;
    }
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(m, "content")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "type");
        if (!cJSON_IsString(t) || !strcmp(t->valuestring, "text")) continue;
        bool image = !strcmp(t->valuestring, "image_url") || !strcmp(t->valuestring, "input_image");
        api_fail(e, 400, "invalid_request_error", "messages", NULL,
                 "'messages[%d].content' holds a part of type '%.40s': %s", i, t->valuestring,
                 image ? "images are not supported (this server runs a text-only model; send text parts)"
                       : "only text parts are supported");
        return false;
    }
    return true;
}

/* Every message's role and parts, checked before either way of rendering them. */
static bool check_messages(const cJSON *msgs, api_error *e)
{
    const cJSON *m;
    int i = 0;
    cJSON_ArrayForEach(m, msgs) if (!check_message(m, i++, e)) return false;
    return true;
}

/* A chat's messages into out->messages (roles static, content owned), not yet rendered. */
static bool chat_messages(const cJSON *msgs, api_request *out, api_error *e)
{
    int n = cJSON_IsArray(msgs) ? cJSON_GetArraySize(msgs) : 0;
    if (n == 0) return bad(e, "messages", "'%s' must be a non-empty array of {role, content}", "messages", 0, 0);
    if (!check_messages(msgs, e)) return false;
    if (!(out->messages = calloc((size_t)n, sizeof *out->messages))) {
        api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        return false;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, msgs) {
        ember_chat_message *m = &out->messages[out->n_messages++];
        m->role = role_of(it);
        m->content = content_text(cJSON_GetObjectItemCaseSensitive(it, "content"));
        if (!m->role || !m->content)
            return bad(e, "messages", "each of '%s' needs a role (system, developer, user, assistant or tool) and "
                       "text content", "messages", 0, 0);
    }
    return true;
}

/* Whether a chat needs ember_chat_apply_json: tools, a tool's result, an assistant's
 * calls (the plain path stays as it was for every other chat). */
static bool needs_json(const cJSON *o)
{
    const cJSON *m, *tools = field(o, "tools");
    if (tools && !cJSON_IsNull(tools)) return true;
    cJSON_ArrayForEach(m, field(o, "messages")) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
        if ((cJSON_IsString(r) && !strcmp(r->valuestring, "tool")) || field(m, "tool_calls")) return true;
    }
    return false;
}

/* The messages as the body gave them, for ember_chat_apply_json (which checks them). */
static bool json_messages(const cJSON *msgs, api_request *out, api_error *e)
{
    if (!cJSON_IsArray(msgs) || !cJSON_GetArraySize(msgs))
        return bad(e, "messages", "'%s' must be a non-empty array of {role, content}", "messages", 0, 0);
    if (!check_messages(msgs, e)) return false;
    if (!(out->messages_json = cJSON_PrintUnformatted(msgs))) {
        api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        return false;
    }
    return true;
}

/* A chat with tools (or their results): through ember_chat_apply_json, then the grammar
 * of the calls in the syntax the prompt taught. */
static bool render_json(ember_model *model, api_request *r, api_error *e)
{
    size_t len = 0;
    ember_tool_syntax syntax;
    const char *tools = r->tool_mode == API_TOOLS_NONE ? NULL : r->tools_json;
    ember_status s = ember_chat_apply_json(model, NULL, r->messages_json, tools, 1, NULL, 0, &len, &syntax);
    if (s == EMBER_OK && !(r->prompt = malloc(len + 1))) s = EMBER_ERR_OUT_OF_MEMORY;
    if (s == EMBER_OK) s = ember_chat_apply_json(model, NULL, r->messages_json, tools, 1, r->prompt, len + 1, &len, &syntax);
    if (s != EMBER_OK) {
        if (s == EMBER_ERR_INVALID_ARG) api_fail(e, 400, "invalid_request_error", "messages", NULL, "%s", ember_model_error(model));
        else api_fail(e, 500, "server_error", NULL, NULL, "the chat template failed");
        return false;
    }
    r->desc.prompt = r->prompt;
    r->desc.parse_special = 1;
    return api_tool_grammar(r, syntax, e);
}

bool api_render_chat(ember_model *model, api_request *r, api_error *e)
{
    if (r->messages_json) return render_json(model, r, e);
    size_t len = 0;
    bool ok = ember_chat_apply(model, NULL, r->messages, r->n_messages, 1, NULL, 0, &len) == EMBER_OK &&
              (r->prompt = malloc(len + 1)) &&
              ember_chat_apply(model, NULL, r->messages, r->n_messages, 1, r->prompt, len + 1, &len) == EMBER_OK;
    if (!ok) {
        api_fail(e, 500, "server_error", NULL, NULL, "the chat template failed");
        return false;
    }
    r->desc.prompt = r->prompt;
    r->desc.parse_special = 1; /* the template's control tokens */
    return true;
}

/* A completion prompt: a string, one string in an array, or an array of token ids. */
static bool completion_prompt(const api_limits *lim, const cJSON *p, api_request *out, api_error *e)
{
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
        p = cJSON_GetArrayItem(p, 0);
    if (cJSON_IsString(p)) return (out->prompt = strdup(p->valuestring)) != NULL;
    int n = cJSON_IsArray(p) ? cJSON_GetArraySize(p) : 0;
    if (n == 0) return bad(e, "prompt", "'%s' must be a string or a non-empty array of token ids", "prompt", 0, 0);
    if (!(out->tokens = malloc((size_t)n * sizeof *out->tokens))) return false;
    const cJSON *t;
    cJSON_ArrayForEach(t, p) {
        if (!cJSON_IsNumber(t) || t->valuedouble < 0 || t->valuedouble >= lim->n_vocab ||
            t->valuedouble != floor(t->valuedouble))
            return bad(e, "prompt", "'%s' holds something that is not a token id below %g", "prompt", lim->n_vocab, 0);
        out->tokens[out->n_tokens++] = (uint32_t)t->valuedouble;
    }
    return true;
}

/* ---- sampling and limits ---------------------------------------------------------------- */

static bool stops(const cJSON *o, api_request *out, api_error *e)
{
    cJSON *s = field(o, "stop");
    if (!s) return true;
    /* An empty string is refused as in the array form: it was accepted here and then
     * silently dropped by the engine (found by fuzz_server_request). */
    if (cJSON_IsString(s) && !s->valuestring[0])
        return bad(e, "stop", "'%s' must hold non-empty strings", "stop", 0, 0);
    if (cJSON_IsString(s)) return (out->desc.stop[0] = out->stop[0] = strdup(s->valuestring)) != NULL;
    int n = cJSON_IsArray(s) ? cJSON_GetArraySize(s) : -1;
    if (n < 0 || n > EMBER_MAX_STOP)
        return bad(e, "stop", "'%s' must be a string or an array of at most %g strings", "stop", EMBER_MAX_STOP, 0);
    for (int i = 0; i < n; i++) {
        cJSON *it = cJSON_GetArrayItem(s, i);
        if (!cJSON_IsString(it) || !it->valuestring[0])
            return bad(e, "stop", "'%s' must hold non-empty strings", "stop", 0, 0);
        out->desc.stop[i] = out->stop[i] = strdup(it->valuestring);
    }
    return true;
}

static bool sampling(const cJSON *o, const api_limits *lim, api_request *out, api_error *e)
{
    double temp = 1.0, top_p = 1.0, top_k = 0, min_p = 0, rep = 1.0, pres = 0, freq = 0, seed = 0;
    double max = lim->ctx_len;
    bool ok = number(o, "temperature", 0, 2, &temp, e) && number(o, "top_p", 0, 1, &top_p, e) &&
              integer(o, "top_k", -1, 1 << 20, &top_k, e) && number(o, "min_p", 0, 1, &min_p, e) &&
              number(o, "repetition_penalty", 0.01, 10, &rep, e) && number(o, "presence_penalty", -2, 2, &pres, e) &&
              number(o, "frequency_penalty", -2, 2, &freq, e) && integer(o, "seed", -9.2e18, 9.2e18, &seed, e) &&
              integer(o, "max_completion_tokens", 1, lim->ctx_len, &max, e) &&
              integer(o, "max_tokens", out->echo ? 0 : 1, lim->ctx_len, &max, e); /* 0: only the echo */
    if (!ok) return false;
    ember_sampling *s = &out->desc.sampling;
    *s = (ember_sampling){.temperature = (float)temp, .top_k = top_k > 0 ? (uint32_t)top_k : 0,
                          .top_p = (float)top_p, .min_p = (float)min_p, .repetition_penalty = (float)rep,
                          .presence_penalty = (float)pres, .frequency_penalty = (float)freq,
                          .seed = (uint64_t)(long long)seed};
    out->desc.max_tokens = (uint32_t)max;
    out->desc.prompt_only = max == 0;
    return true;
}

/* A logit_bias key: a token id in decimal, below n_vocab. */
static bool token_key(const char *key, uint32_t n_vocab, uint32_t *id)
{
    if (!key || !*key || strlen(key) > 10) return false;
    unsigned long long v = 0;
    for (const char *c = key; *c; c++) {
        if (*c < '0' || *c > '9') return false;
        v = v * 10 + (unsigned)(*c - '0');
    }
    *id = (uint32_t)v;
    return v < n_vocab;
}

/* OpenAI's logit_bias: {"token id": bias in [-100, 100]}, added to the token's logit (as
 * vLLM and llama.cpp do: -100 all but bans a token, 100 all but forces it). */
static bool logit_bias(const cJSON *o, const api_limits *lim, api_request *out, api_error *e)
{
    cJSON *b = field(o, "logit_bias");
    if (!b) return true;
    if (!cJSON_IsObject(b)) return bad(e, "logit_bias", "'%s' must be an object of token ids to numbers", "logit_bias", 0, 0);
    int n = cJSON_GetArraySize(b);
    if (n > EMBER_MAX_LOGIT_BIAS)
        return bad(e, "logit_bias", "'%s' may hold at most %g tokens", "logit_bias", EMBER_MAX_LOGIT_BIAS, 0);
    if (n == 0) return true;
    if (!(out->bias = malloc((size_t)n * sizeof *out->bias))) {
        api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
        return false;
    }
    uint32_t k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, b) {
        uint32_t id;
        if (!token_key(it->string, lim->n_vocab, &id))
            return bad(e, "logit_bias", "'%s' keys must be token ids below %g", "logit_bias", lim->n_vocab, 0);
        if (!cJSON_IsNumber(it) || !(it->valuedouble >= -100 && it->valuedouble <= 100))
            return bad(e, "logit_bias", "'%s' values must be numbers in [%g, %g]", "logit_bias", -100, 100);
        out->bias[k++] = (ember_logit_bias){id, (float)it->valuedouble};
    }
    out->desc.sampling.logit_bias = out->bias;
    out->desc.sampling.n_logit_bias = k;
    return true;
}

/* vLLM's truncate_prompt_tokens: N keeps the last N prompt tokens (cut by the engine after
 * tokenizing, so the BOS goes, or a chat's template start). -1, vLLM's "the model's
 * length", is the context less one, the longest prompt the engine takes (the reply needs a
 * position); max_tokens is not taken off, as its default, the whole context, would leave no
 * prompt. N of the context or more cannot make a prompt fit; 0 is refused as vLLM refuses
 * it (off is null or absent). */
static bool truncation(const cJSON *o, const api_limits *lim, api_request *out, api_error *e)
{
    const char *key = "truncate_prompt_tokens";
    cJSON *it = field(o, key);
    if (!it) return true;
    double most = (double)lim->ctx_len - 1;
    double n = cJSON_IsNumber(it) && it->valuedouble == floor(it->valuedouble) ? it->valuedouble : 0;
    if (n == -1) n = most;
    if (n < 1 || n > most)
        return bad(e, key, "'%s' must be -1 (as many as fit) or an integer between %g and %g", key, 1, most);
    out->desc.truncate_prompt_tokens = (uint32_t)n;
    return true;
}

static bool options(const cJSON *o, api_request *out, api_error *e)
{
    bool ignore_eos = false;
    if (!boolean(o, "stream", &out->stream, e) || !boolean(o, "ignore_eos", &ignore_eos, e)) return false;
    out->desc.ignore_eos = ignore_eos;
    cJSON *so = field(o, "stream_options");
    if (so && !cJSON_IsObject(so)) return bad(e, "stream_options", "'%s' must be an object", "stream_options", 0, 0);
    return !so || boolean(so, "include_usage", &out->include_usage, e);
}

/* chat: logprobs (true/false) and top_logprobs (0..20, with logprobs); completions:
 * logprobs (0..20: the sampled token's and that many more) and echo. */
static bool logprobs(const cJSON *o, api_kind kind, api_request *out, api_error *e)
{
    double k = -1;
    if (kind == API_COMPLETION) {
        if (!integer(o, "logprobs", 0, EMBER_MAX_TOP_LOGPROBS, &k, e) || !boolean(o, "echo", &out->echo, e)) return false;
        out->logprobs = k >= 0, out->top_logprobs = k >= 0 ? (uint32_t)k : 0;
        return true;
    }
    if (!boolean(o, "logprobs", &out->logprobs, e) || !integer(o, "top_logprobs", 0, EMBER_MAX_TOP_LOGPROBS, &k, e))
        return false;
    if (k > 0 && !out->logprobs) return bad(e, "top_logprobs", "'%s' needs 'logprobs': true", "top_logprobs", 0, 0);
    out->top_logprobs = k > 0 ? (uint32_t)k : 0;
    return true;
}

/* Any name is taken, as llama.cpp's server takes it: clients often send a fixed default
 * ("gpt-3.5-turbo") and there is one model to serve. Replies carry the served name. */
static bool model_name(const cJSON *o, api_error *e)
{
    cJSON *m = field(o, "model");
    return !m || cJSON_IsString(m) || bad(e, "model", "'%s' must be a string", "model", 0, 0);
}

/* The value of the \uXXXX escape at s (6 bytes), or -1. */
static long escape_at(const char *s, size_t left)
{
    if (left < 6 || s[0] != '\\' || s[1] != 'u') return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* What is wrong with the escapes of the body's strings, or NULL. \u0000: cJSON decodes it
 * into a NUL that would end the C string early, the rest of the prompt or stop string gone
 * without a word. A lone UTF-16 surrogate (\ud800 with no low half) is no character at
 * all; cJSON refuses the whole body for it, which would say only "not a JSON object".
 * Only escapes are looked at (a raw NUL byte is not JSON), each skipped whole so that an
 * escaped backslash followed by "u0000" is text. */
static const char *bad_escape(const char *body, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (body[i] != '\\') continue;
        long v = escape_at(body + i, len - i);
        if (v == 0) return "a string in the body holds \\u0000 (NUL); prompts, messages and stop strings cannot";
        if (v >= 0xDC00 && v <= 0xDFFF)
            return "a string in the body holds a lone UTF-16 low surrogate (\\udc00 to \\udfff) that follows no "
                   "high one: it is not a character (send the text's UTF-8, or a whole surrogate pair)";
        if (v >= 0xD800 && v <= 0xDBFF) {
            long lo = escape_at(body + i + 6, len - i - 6);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return "a string in the body holds a lone UTF-16 high surrogate (\\ud800 to \\udbff) with no low "
                       "surrogate after it: it is not a character (send the text's UTF-8, or a whole surrogate pair)";
            i += 6; /* the pair's high half; the low half is skipped below */
        }
        i++;
    }
    return NULL;
}

cJSON *api_parse_object(const api_limits *lim, const char *body, size_t len, api_error *e)
{
    const char *why = bad_escape(body, len);
    if (why) {
        api_fail(e, 400, "invalid_request_error", NULL, NULL, "%s", why);
        return NULL;
    }
    cJSON *o = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(o)) {
        api_fail(e, 400, "invalid_request_error", NULL, "invalid_json", "the body is not a JSON object");
    } else if (model_name(o, e)) {
        return o;
    }
    cJSON_Delete(o);
    return NULL;
}

/* n, and completions' best_of (at least n; not with stream, as OpenAI): samples of the
 * prompt, which share its KV blocks (http.c). After options (stream). */
static bool samples(const cJSON *o, api_kind kind, api_request *out, api_error *e)
{
    double n = 1, best = 0;
    if (!integer(o, "n", 1, API_MAX_SAMPLES, &n, e)) return false;
    if (kind == API_COMPLETION && !integer(o, "best_of", 1, API_MAX_SAMPLES, &best, e)) return false;
    if (best && best < n) return bad(e, "best_of", "'%s' must be at least n (%g)", "best_of", n, 0);
    if (best > n && out->stream) return bad(e, "best_of", "'%s' greater than n cannot be streamed", "best_of", 0, 0);
    out->n = (uint32_t)n;
    out->best_of = best ? (uint32_t)best : out->n;
    return true;
}

bool api_parse_body(const api_limits *lim, api_kind kind, const char *body, size_t len, api_request *out,
                    api_error *e)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
    cJSON *o = api_parse_object(lim, body, len, e);
    bool ok = o != NULL;
    if (ok) api_ignored(o, kind, out->ignored, sizeof out->ignored);
    ok = ok && api_unsupported(o, kind, e) && logprobs(o, kind, out, e) && sampling(o, lim, out, e) && logit_bias(o, lim, out, e) && stops(o, out, e) &&
         options(o, out, e) && samples(o, kind, out, e) && truncation(o, lim, out, e) && api_structured(o, out, e);
    if (ok && kind == API_CHAT) ok = api_tools(o, out, e);
    if (ok && kind == API_CHAT && needs_json(o)) ok = json_messages(field(o, "messages"), out, e);
    else if (ok && kind == API_CHAT) ok = chat_messages(field(o, "messages"), out, e);
    if (ok && kind == API_COMPLETION) ok = completion_prompt(lim, field(o, "prompt"), out, e);
    if (ok && kind == API_COMPLETION && !out->prompt && !out->tokens)
        ok = false, api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    cJSON_Delete(o);
    out->desc.prompt = out->prompt;
    out->desc.tokens = out->tokens;
    out->desc.n_tokens = out->n_tokens;
    out->desc.spec = lim->spec;
    if (!ok) api_request_free(out);
    return ok;
}

bool api_parse(const api_limits *lim, ember_model *model, api_kind kind, const char *body, size_t len,
               api_request *out, api_error *e)
{
    if (!api_parse_body(lim, kind, body, len, out, e)) return false;
    if (kind == API_CHAT && !api_render_chat(model, out, e)) {
        api_request_free(out);
        return false;
    }
    return true;
}

void api_request_free(api_request *r)
{
    free(r->prompt);
    free(r->tokens);
    for (size_t i = 0; i < r->n_messages; i++) free((char *)r->messages[i].content);
    free(r->messages);
    for (int i = 0; i < EMBER_MAX_STOP; i++) free(r->stop[i]);
    free(r->bias);
    free(r->json_schema);
    free(r->grammar);
    free(r->messages_json);
    free(r->tools_json);
    free(r->tool_only);
    memset(r, 0, sizeof *r);
}

/* ---- responses ---------------------------------------------------------------------------- */

static char *print(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

/* err's inner object, {"message", "type", "param", "code"}, added to o as "error". */
static void add_error(cJSON *o, const api_error *e)
{
    cJSON *in = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(in, "message", e->message);
    cJSON_AddStringToObject(in, "type", e->type ? e->type : "invalid_request_error");
    if (e->param) cJSON_AddStringToObject(in, "param", e->param);
    else cJSON_AddNullToObject(in, "param");
    if (e->code) cJSON_AddStringToObject(in, "code", e->code);
    else cJSON_AddNullToObject(in, "code");
}

char *api_error_json(const api_error *e)
{
    cJSON *o = cJSON_CreateObject();
    add_error(o, e);
    return print(o);
}

const char *api_finish_reason(ember_finish why)
{
    /* OpenAI (and vLLM) say "length" for a reply cut by max_tokens or by the context;
     * the KV pool running out ends it short the same way. */
    return why == EMBER_FINISH_LENGTH || why == EMBER_FINISH_CONTEXT || why == EMBER_FINISH_KV_FULL ? "length"
           : why == EMBER_FINISH_ERROR                                                            ? "error"
                                                                                                  : "stop";
}

/* The fields every object of the request starts with. */
static cJSON *head(const api_format *f, const char *object)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", f->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)f->created);
    cJSON_AddStringToObject(o, "model", f->model);
    return o;
}

static void usage(cJSON *o, const api_format *f, uint32_t n_gen)
{
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", f->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", f->n_prompt + n_gen);
}

/* text[0..len) as a JSON string value (cJSON wants a NUL-terminated copy). */
static cJSON *add_text(cJSON *o, const char *key, const char *text, size_t len)
{
    char *s = malloc(len + 1);
    if (!s) return NULL;
    memcpy(s, text, len);
    s[len] = 0;
    cJSON *it = cJSON_AddStringToObject(o, key, s);
    free(s);
    return it;
}

/* A choice's "logprobs": the object given (owned from here on), else null. */
static void add_logprobs(cJSON *choice, cJSON *logprobs)
{
    if (logprobs) cJSON_AddItemToObject(choice, "logprobs", logprobs);
    else cJSON_AddNullToObject(choice, "logprobs");
}

cJSON *api_choice(const api_format *f, uint32_t index, const char *text, size_t len, ember_finish why,
                  cJSON *logprobs)
{
    cJSON *c = cJSON_CreateObject(), *calls = NULL;
    if (!c) {
        cJSON_Delete(logprobs);
        return NULL;
    }
    cJSON_AddNumberToObject(c, "index", index);
    if (f->kind == API_CHAT) {
        cJSON *m = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        size_t content = len;
        calls = why != EMBER_FINISH_ERROR ? api_tool_calls(f, text, len, &content) : NULL;
        if ((calls || f->calls_only) && !content) cJSON_AddNullToObject(m, "content");
        else add_text(m, "content", text, content);
        if (calls) cJSON_AddItemToObject(m, "tool_calls", calls);
    } else {
        add_text(c, "text", text, len);
    }
    add_logprobs(c, logprobs);
    cJSON_AddStringToObject(c, "finish_reason", calls ? "tool_calls" : api_finish_reason(why));
    return c;
}

char *api_response(const api_format *f, cJSON *choices, uint32_t n_gen, const api_error *err)
{
    cJSON *o = head(f, f->kind == API_CHAT ? "chat.completion" : "text_completion");
    cJSON_AddItemToObject(o, "choices", choices ? choices : cJSON_CreateArray());
    usage(o, f, n_gen);
    if (err) add_error(o, err);
    return print(o);
}

/* "data: JSON\n\n" around a printed object. */
static char *event(char *json)
{
    if (!json) return NULL;
    size_t n = strlen(json);
    char *s = malloc(n + 9);
    if (s) snprintf(s, n + 9, "data: %s\n\n", json);
    cJSON_free(json);
    return s;
}

char *api_error_event(const api_error *e) { return event(api_error_json(e)); }

char *api_chunk(const api_format *f, uint32_t index, bool role, const char *text, size_t len, const char *finish,
                cJSON *logprobs)
{
    bool chat = f->kind == API_CHAT;
    cJSON *o = head(f, chat ? "chat.completion.chunk" : "text_completion");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", index);
    if (chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (role) cJSON_AddStringToObject(d, "role", "assistant");
        if (len || (!role && !finish)) add_text(d, "content", text, len);
    } else {
        add_text(c, "text", text, len);
    }
    add_logprobs(c, logprobs);
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), c);
    return event(print(o));
}

char *api_usage_chunk(const api_format *f, uint32_t n_gen)
{
    cJSON *o = head(f, f->kind == API_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON_AddArrayToObject(o, "choices");
    usage(o, f, n_gen);
    return event(print(o));
}

char *api_models(const api_limits *lim, long long created)
{
    cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON_AddStringToObject(m, "id", lim->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)created);
    cJSON_AddStringToObject(m, "owned_by", "ember");
    cJSON_AddNumberToObject(m, "max_model_len", lim->ctx_len); /* as vLLM reports it */
    cJSON_AddNumberToObject(m, "vocab_size", lim->n_vocab);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "data"), m);
    return print(o);
}
