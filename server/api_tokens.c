/* api_tokens.c — POST /tokenize and /detokenize, in the two shapes clients send:
 * llama.cpp's server ({"content", "add_special", "parse_special", "with_pieces"} ->
 * {"tokens"}; {"tokens"} -> {"content"}) and vLLM's ({"prompt", "add_special_tokens"} ->
 * {"count", "max_model_len", "tokens"}; {"tokens"} -> {"prompt"}). A response carries the
 * keys of both. docs/server.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"

/* Fields of the other request shapes that Ember does not take: refused by name rather
 * than ignored (vLLM's chat form of /tokenize; its token strings). */
static const char *const REFUSED[][2] = {
    {"messages", "a chat's messages are not tokenized here: render them first (POST /tokenize takes "
                 "'content' or 'prompt')"},
    {"add_generation_prompt", "it belongs to 'messages', which /tokenize does not take"},
    {"chat_template", "it belongs to 'messages', which /tokenize does not take"},
    {"tools", "it belongs to 'messages', which /tokenize does not take"},
    {"return_token_strs", "not supported: 'with_pieces' gives each token's text"},
};

static bool refuse(api_error *e, const char *param, const char *why)
{
    api_fail(e, 400, "invalid_request_error", param, NULL, "'%s': %s", param, why);
    return false;
}

/* A boolean field: *v stays when it is absent or null. */
static bool flag(const cJSON *o, const char *key, bool *v, api_error *e)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it || cJSON_IsNull(it)) return true;
    if (!cJSON_IsBool(it)) return refuse(e, key, "must be true or false");
    *v = cJSON_IsTrue(it);
    return true;
}

/* Item i of list key, a token id, checked against the vocabulary. */
static bool token_id(const api_limits *lim, const cJSON *it, const char *key, int i, uint32_t *id, api_error *e)
{
    double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
    if (v < 0 || v >= lim->n_vocab || v != (double)(uint32_t)v) {
        api_fail(e, 400, "invalid_request_error", key, NULL, "'%s[%d]' must be a token id below %u", key, i,
                 lim->n_vocab);
        return false;
    }
    *id = (uint32_t)v;
    return true;
}

typedef struct ids {
    uint32_t *v;
    size_t n, cap;
} ids;

static bool room(ids *t, size_t more)
{
    if (t->n + more <= t->cap) return true;
    size_t cap = t->cap ? t->cap : 64;
    while (cap < t->n + more) cap *= 2;
    uint32_t *v = realloc(t->v, cap * sizeof *v);
    if (!v) return false;
    t->v = v, t->cap = cap;
    return true;
}

/* Appends the tokens of text (flags: EMBER_TOKENIZE_*). */
static bool add_text(ember_model *model, const char *text, int flags, ids *t, api_error *e)
{
    size_t n = 0, len = strlen(text);
    ember_status s = ember_tokenize(model, text, len, flags, NULL, 0, &n);
    if (s == EMBER_OK && room(t, n)) s = ember_tokenize(model, text, len, flags, t->v + t->n, n, &n);
    else if (s == EMBER_OK) s = EMBER_ERR_OUT_OF_MEMORY;
    if (s != EMBER_OK) {
        api_fail(e, 500, "server_error", NULL, NULL, "tokenizing failed: %s", ember_model_error(model));
        return false;
    }
    t->n += n;
    return true;
}

/* The input: a string, or (llama.cpp's "content") a list of strings and token ids, BOS
 * only before a list's first string when it comes first. */
static bool input(const api_limits *lim, ember_model *model, const cJSON *in, const char *key, int flags, ids *t,
                  api_error *e)
{
    if (cJSON_IsString(in)) return add_text(model, in->valuestring, flags, t, e);
    if (!cJSON_IsArray(in) || strcmp(key, "content") != 0)
        return refuse(e, key, strcmp(key, "content") ? "must be a string" : "must be a string or a list of strings "
                                                                             "and token ids");
    int i = 0;
    for (const cJSON *it = in->child; it; it = it->next, i++) {
        int f = i == 0 ? flags : flags & ~EMBER_TOKENIZE_ADD_BOS;
        if (cJSON_IsString(it)) {
            if (!add_text(model, it->valuestring, f, t, e)) return false;
        } else if (!room(t, 1) || !token_id(lim, it, key, i, &t->v[t->n], e)) {
            return e->status ? false : (api_fail(e, 500, "server_error", NULL, NULL, "out of memory"), false);
        } else {
            t->n++;
        }
    }
    return true;
}

/* A token's text for with_pieces: a string when it is whole UTF-8, else its bytes as
 * numbers (llama.cpp's form: a piece may be part of a character). */
static cJSON *piece(ember_model *model, uint32_t id)
{
    size_t n = ember_token_to_piece(model, id, NULL, 0);
    char *raw = malloc(n + 1), *text = malloc(3 * n + 4); /* each byte may become U+FFFD */
    cJSON *out = NULL;
    if (raw && text) {
        ember_token_to_piece(model, id, raw, n);
        size_t k = ember_detokenize(model, &id, 1, 1, text, 3 * n + 3);
        if (k == n && memcmp(raw, text, n) == 0) {
            text[k] = 0;
            out = cJSON_CreateString(text);
        } else {
            out = cJSON_CreateArray();
            for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(out, cJSON_CreateNumber((unsigned char)raw[i]));
        }
    }
    free(raw);
    free(text);
    return out;
}

static char *print(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

static char *tokens_json(const api_limits *lim, ember_model *model, const ids *t, bool with_pieces)
{
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "tokens");
    for (size_t i = 0; i < t->n; i++) {
        if (!with_pieces) {
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(t->v[i]));
            continue;
        }
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "id", t->v[i]);
        cJSON_AddItemToObject(p, "piece", piece(model, t->v[i]));
        cJSON_AddItemToArray(arr, p);
    }
    cJSON_AddNumberToObject(o, "count", (double)t->n);
    cJSON_AddNumberToObject(o, "max_model_len", lim->ctx_len);
    return print(o);
}

char *api_tokenize(const api_limits *lim, ember_model *model, const char *body, size_t len, api_error *e)
{
    memset(e, 0, sizeof *e);
    cJSON *o = api_parse_object(lim, body, len, e);
    if (!o) return NULL;
    for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++)
        if (cJSON_GetObjectItemCaseSensitive(o, REFUSED[i][0])) {
            refuse(e, REFUSED[i][0], REFUSED[i][1]);
            return cJSON_Delete(o), NULL;
        }
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(o, "content");
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(o, "prompt");
    /* llama.cpp adds no BOS unless asked, vLLM adds the tokenizer's special tokens */
    bool add = prompt && !content, parse = true, with_pieces = false, ok = true;
    if (!content == !prompt)
        ok = refuse(e, content ? "prompt" : "content", content ? "give 'content' or 'prompt', not both"
                                                              : "the text to tokenize is required ('content' or 'prompt')");
    ok = ok && flag(o, "add_special", &add, e) && flag(o, "add_special_tokens", &add, e) &&
         flag(o, "parse_special", &parse, e) && flag(o, "with_pieces", &with_pieces, e);
    int flags = (add ? EMBER_TOKENIZE_ADD_BOS : 0) | (parse ? EMBER_TOKENIZE_PARSE_SPECIAL : 0);
    ids t = {0};
    ok = ok && input(lim, model, content ? content : prompt, content ? "content" : "prompt", flags, &t, e);
    char *out = ok ? tokens_json(lim, model, &t, with_pieces) : NULL;
    if (ok && !out) api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    free(t.v);
    cJSON_Delete(o);
    return out;
}

/* text[0..n) as a JSON string: cJSON takes C strings, and a byte token <0x00> puts a NUL
 * in the text that must come out as \u0000, not end it. malloc'ed. */
static char *json_string(const char *text, size_t n)
{
    char *out = malloc(6 * n + 3), *o = out;
    if (!out) return NULL;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') *o++ = '\\', *o++ = (char)c;
        else if (c < 0x20) o += sprintf(o, "\\u%04x", c);
        else *o++ = (char)c;
    }
    *o++ = '"';
    *o = 0;
    return out;
}

/* The BOS that tokenizing with EMBER_TOKENIZE_ADD_BOS puts first, if the vocabulary has
 * one, and whether it also puts a space before the text (SentencePiece's dummy prefix). */
static bool bos_of(ember_model *model, uint32_t *bos, bool *prefix_space)
{
    uint32_t t[4];
    size_t n = 0, k;
    char text[8];
    if (ember_tokenize(model, "", 0, EMBER_TOKENIZE_ADD_BOS, t, 4, &n) != EMBER_OK || n != 1) return false;
    *bos = t[0];
    *prefix_space = ember_tokenize(model, "a", 1, 0, t, 4, &n) == EMBER_OK && n <= 4 &&
                    (k = ember_detokenize(model, t, n, 1, text, sizeof text)) == 2 && !memcmp(text, " a", 2);
    return true;
}

/* The text of t, less a leading BOS and the space the tokenizer put after it: tokenize
 * with BOS, then detokenize, gives the text back. *n: its length; malloc'ed. */
static char *detok_text(ember_model *model, const ids *t, size_t *n)
{
    uint32_t bos;
    bool space = false, lead = t->n && bos_of(model, &bos, &space) && t->v[0] == bos;
    const uint32_t *v = t->v + lead;
    size_t cnt = t->n - lead;
    *n = ember_detokenize(model, v, cnt, 1, NULL, 0);
    char *text = malloc(*n + 1);
    if (!text) return NULL;
    ember_detokenize(model, v, cnt, 1, text, *n);
    if (lead && space && *n && text[0] == ' ') memmove(text, text + 1, --*n);
    text[*n] = 0;
    return text;
}

char *api_detokenize(const api_limits *lim, ember_model *model, const char *body, size_t len, api_error *e)
{
    memset(e, 0, sizeof *e);
    cJSON *o = api_parse_object(lim, body, len, e);
    if (!o) return NULL;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "tokens");
    ids t = {0};
    bool ok = cJSON_IsArray(in) ? room(&t, (size_t)cJSON_GetArraySize(in) + 1)
                                : refuse(e, "tokens", "a list of token ids is required");
    int i = 0;
    for (const cJSON *it = ok ? in->child : NULL; ok && it; it = it->next, i++)
        ok = token_id(lim, it, "tokens", i, &t.v[t.n++], e);
    char *out = NULL;
    if (ok) { /* control tokens as their text, as llama.cpp's and vLLM's servers give them */
        size_t n;
        char *text = detok_text(model, &t, &n), *js = text ? json_string(text, n) : NULL;
        if (js && (out = malloc(2 * strlen(js) + 32)))
            sprintf(out, "{\"content\":%s,\"prompt\":%s}", js, js);
        free(js);
        free(text);
        if (!out) api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    } else if (!e->status) {
        api_fail(e, 500, "server_error", NULL, NULL, "out of memory");
    }
    free(t.v);
    cJSON_Delete(o);
    return out;
}
