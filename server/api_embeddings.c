/* api_embeddings.c — POST /v1/embeddings' body and response in OpenAI's shapes: `input` a
 * string, an array of strings, an array of token ids or an array of arrays of token ids;
 * `encoding_format` float or base64; `dimensions` only the model's own (Ember does not
 * shorten vectors); `user` accepted. Fields it does not know are ignored, as vLLM does.
 * docs/server.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"

#define SHAPES "a non-empty string, an array of them, an array of token ids, or an array of arrays of token ids"

static bool refuse(api_error *e, const char *param, const char *fmt, unsigned a)
{
    api_fail(e, 400, "invalid_request_error", param, NULL, fmt, a);
    return false;
}

static bool out_of_memory(api_error *e)
{
    api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    return false;
}

/* A field, absent when missing or null. */
static const cJSON *given(const cJSON *o, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    return it && !cJSON_IsNull(it) ? it : NULL;
}

/* ---- the body ------------------------------------------------------------------------------- */

/* A text, copied. An empty one is refused, as OpenAI refuses it: it would embed BOS alone. */
static bool text_input(const cJSON *it, size_t i, api_embed_input *in, api_error *e)
{
    if (!it->valuestring[0]) return refuse(e, "input", "'input[%u]' is an empty string", (unsigned)i);
    return (in->text = strdup(it->valuestring)) != NULL || out_of_memory(e);
}

/* Token ids, each an integer below the vocabulary; at least one. */
static bool ids_input(const api_limits *lim, const cJSON *arr, api_embed_input *in, api_error *e)
{
    int n = cJSON_GetArraySize(arr);
    if (n == 0) return refuse(e, "input", "'input' holds an empty list of token ids", 0);
    if (!(in->tokens = malloc((size_t)n * sizeof *in->tokens))) return out_of_memory(e);
    const cJSON *t;
    cJSON_ArrayForEach(t, arr) {
        double v = cJSON_IsNumber(t) ? t->valuedouble : -1;
        if (!(v >= 0 && v < lim->n_vocab && v == floor(v)))
            return refuse(e, "input", "'input' holds something that is not a token id below %u", lim->n_vocab);
        in->tokens[in->n_tokens++] = (uint32_t)v;
    }
    return true;
}

static bool alloc_inputs(api_embed_request *out, size_t n, api_error *e)
{
    if (!(out->in = calloc(n, sizeof *out->in))) return out_of_memory(e);
    out->n = n;
    return true;
}

/* A list of inputs, all of one kind as OpenAI's schema has it: texts, or arrays of ids. */
static bool input_list(const api_limits *lim, const cJSON *list, api_embed_request *out, api_error *e)
{
    int n = cJSON_GetArraySize(list);
    if (n > API_MAX_EMBED_INPUTS) return refuse(e, "input", "'input' may hold at most %u inputs", API_MAX_EMBED_INPUTS);
    if (!alloc_inputs(out, (size_t)n, e)) return false;
    bool texts = cJSON_IsString(list->child);
    size_t i = 0;
    for (const cJSON *it = list->child; it; it = it->next, i++) {
        if (texts != cJSON_IsString(it) || (!texts && !cJSON_IsArray(it)))
            return refuse(e, "input", "'input' must be " SHAPES " (item %u is not)", (unsigned)i);
        if (texts ? !text_input(it, i, &out->in[i], e) : !ids_input(lim, it, &out->in[i], e)) return false;
    }
    return true;
}

static bool inputs(const api_limits *lim, const cJSON *input, api_embed_request *out, api_error *e)
{
    if (!input) return refuse(e, "input", "'input' is required: " SHAPES, 0);
    if (cJSON_IsString(input)) return alloc_inputs(out, 1, e) && text_input(input, 0, &out->in[0], e);
    if (!cJSON_IsArray(input) || !input->child) return refuse(e, "input", "'input' must be " SHAPES, 0);
    if (cJSON_IsNumber(input->child)) return alloc_inputs(out, 1, e) && ids_input(lim, input, &out->in[0], e);
    return input_list(lim, input, out, e);
}

static bool encoding(const cJSON *o, api_embed_request *out, api_error *e)
{
    const cJSON *f = given(o, "encoding_format");
    if (!f || (cJSON_IsString(f) && !strcmp(f->valuestring, "float"))) return true;
    if (cJSON_IsString(f) && !strcmp(f->valuestring, "base64")) return out->base64 = true;
    return refuse(e, "encoding_format", "'encoding_format' must be \"float\" or \"base64\"", 0);
}

/* OpenAI's newer models shorten their vectors on request; Ember's come whole. */
static bool dimensions(const api_limits *lim, const cJSON *o, api_error *e)
{
    const cJSON *d = given(o, "dimensions");
    if (!d || (cJSON_IsNumber(d) && d->valuedouble == lim->dim)) return true;
    return refuse(e, "dimensions", "'dimensions': only the model's own size %u is supported", lim->dim);
}

bool api_parse_embeddings(const api_limits *lim, const char *body, size_t len, api_embed_request *out, api_error *e)
{
    memset(out, 0, sizeof *out);
    cJSON *o = api_parse_object(lim, body, len, e);
    bool ok = o && encoding(o, out, e) && dimensions(lim, o, e) && inputs(lim, given(o, "input"), out, e);
    cJSON_Delete(o);
    if (!ok) api_embed_request_free(out);
    return ok;
}

void api_embed_request_free(api_embed_request *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->in[i].text);
        free(r->in[i].tokens);
    }
    free(r->in);
    memset(r, 0, sizeof *r);
}

/* ---- the response --------------------------------------------------------------------------- */

/* A vector as a JSON array, each number with the 9 significant digits that give the float
 * back exactly: cJSON's own numbers would cost a node and 17 digits each. */
static char *float_array(const float *v, uint32_t dim)
{
    size_t cap = (size_t)dim * 16 + 3; /* "-1.17549435e-38," is the longest */
    char *s = malloc(cap);
    if (!s) return NULL;
    size_t at = 0;
    s[at++] = '[';
    for (uint32_t i = 0; i < dim; i++) /* never NaN (unit norm); JSON has none to write */
        at += (size_t)snprintf(s + at, cap - at, "%s%.9g", i ? "," : "", isfinite(v[i]) ? (double)v[i] : 0.0);
    s[at++] = ']';
    s[at] = 0;
    return s;
}

/* The vector's float32 bytes, little-endian whatever the host, in base64 as a JSON string
 * (OpenAI's encoding_format "base64", which its clients decode). */
static char *base64_string(const float *v, uint32_t dim)
{
    static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = (size_t)dim * 4;
    unsigned char *b = malloc(n);
    char *s = malloc(4 * ((n + 2) / 3) + 3);
    if (!b || !s) {
        free(b);
        free(s);
        return NULL;
    }
    for (uint32_t i = 0; i < dim; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++) b[4 * i + k] = (unsigned char)(u >> (8 * k));
    }
    size_t at = 0;
    s[at++] = '"';
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
        for (int k = 0; k < 4; k++) s[at++] = i + (size_t)k <= n ? ALPHABET[(w >> (18 - 6 * k)) & 63] : '=';
    }
    s[at++] = '"';
    s[at] = 0;
    free(b);
    return s;
}

static bool add_embedding(cJSON *data, size_t index, const float *v, uint32_t dim, bool base64)
{
    cJSON *d = cJSON_CreateObject();
    char *raw = base64 ? base64_string(v, dim) : float_array(v, dim);
    bool ok = d && raw && cJSON_AddStringToObject(d, "object", "embedding") &&
              cJSON_AddNumberToObject(d, "index", (double)index) && cJSON_AddRawToObject(d, "embedding", raw);
    free(raw);
    if (ok) cJSON_AddItemToArray(data, d);
    else cJSON_Delete(d);
    return ok;
}

char *api_embeddings_response(const api_limits *lim, const api_embed_request *r, const float *v, uint64_t n_prompt)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *data = o && cJSON_AddStringToObject(o, "object", "list") ? cJSON_AddArrayToObject(o, "data") : NULL;
    bool ok = data != NULL;
    for (size_t i = 0; ok && i < r->n; i++) ok = add_embedding(data, i, v + i * lim->dim, lim->dim, r->base64);
    cJSON *u = ok && cJSON_AddStringToObject(o, "model", lim->model_id) ? cJSON_AddObjectToObject(o, "usage") : NULL;
    ok = u && cJSON_AddNumberToObject(u, "prompt_tokens", (double)n_prompt) &&
         cJSON_AddNumberToObject(u, "total_tokens", (double)n_prompt);
    char *s = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}
