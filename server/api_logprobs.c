/* api_logprobs.c — OpenAI's logprobs objects from the engine's ember_logprobs (docs/server.md):
 * chat's {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
 * "bytes"}]}], "refusal": null} and completions' {"tokens", "token_logprobs",
 * "top_logprobs": [{token: logprob}], "text_offset"}. A token's string is its text when
 * that is whole UTF-8; else chat gives it with U+FFFD (its "bytes" are exact) and
 * completions, whose top lists key tokens by string, give "bytes:\xNN..." as vLLM does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"

typedef struct piece {
    char *raw;      /* the token's bytes (control tokens: their text) */
    size_t n;
    char *text;     /* as a string: whole UTF-8, or with U+FFFD */
    bool whole;     /* text == raw */
} piece;

static bool piece_of(ember_model *model, uint32_t id, piece *p)
{
    p->n = ember_token_to_piece(model, id, NULL, 0);
    p->raw = malloc(p->n + 1);
    p->text = malloc(3 * p->n + 4);
    if (!p->raw || !p->text) return false;
    ember_token_to_piece(model, id, p->raw, p->n);
    size_t k = ember_detokenize(model, &id, 1, 1, p->text, 3 * p->n + 3);
    p->text[k] = 0;
    p->whole = k == p->n && memcmp(p->raw, p->text, k) == 0;
    return true;
}

static void piece_free(piece *p)
{
    free(p->raw);
    free(p->text);
}

/* Code points in a string of whole UTF-8: what text_offset counts, as Python's len does. */
static size_t code_points(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* completions' key for a token: its text, or "bytes:\xNN..." when that is not whole. */
static char *key_of(const piece *p)
{
    if (p->whole) return strdup(p->text);
    char *k = malloc(6 + 4 * p->n + 1);
    if (!k) return NULL;
    size_t at = (size_t)sprintf(k, "bytes:");
    for (size_t i = 0; i < p->n; i++) at += (size_t)sprintf(k + at, "\\x%02x", (unsigned char)p->raw[i]);
    return k;
}

/* {"token", "logprob", "bytes"} of chat. */
static cJSON *chat_entry(const piece *p, float logprob)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "token", p->text);
    cJSON_AddNumberToObject(o, "logprob", logprob);
    cJSON *bytes = cJSON_AddArrayToObject(o, "bytes");
    for (size_t i = 0; i < p->n; i++) cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)p->raw[i]));
    return o;
}

static bool chat_token(ember_model *model, const ember_logprobs *lp, cJSON *content)
{
    piece p;
    bool ok = piece_of(model, lp->chosen.token, &p);
    cJSON *e = ok ? chat_entry(&p, lp->chosen.logprob) : NULL, *top = e ? cJSON_AddArrayToObject(e, "top_logprobs") : NULL;
    piece_free(&p);
    for (uint32_t j = 0; top && j < lp->n_top; j++) {
        ok = piece_of(model, lp->top[j].token, &p);
        if (ok) cJSON_AddItemToArray(top, chat_entry(&p, lp->top[j].logprob));
        piece_free(&p);
    }
    if (e) cJSON_AddItemToArray(content, e);
    return ok && e;
}

/* One position of completions' arrays. */
static bool completion_token(ember_model *model, const ember_logprobs *lp, cJSON *o, size_t *offset)
{
    piece p;
    bool ok = piece_of(model, lp->chosen.token, &p);
    char *key = ok ? key_of(&p) : NULL;
    bool first = isnan(lp->chosen.logprob); /* an echoed prompt's first token: nothing predicts it */
    if (key) {
        cJSON_AddItemToArray(cJSON_GetObjectItem(o, "tokens"), cJSON_CreateString(key));
        cJSON_AddItemToArray(cJSON_GetObjectItem(o, "token_logprobs"),
                             first ? cJSON_CreateNull() : cJSON_CreateNumber(lp->chosen.logprob));
        cJSON_AddItemToArray(cJSON_GetObjectItem(o, "text_offset"), cJSON_CreateNumber((double)*offset));
        *offset += code_points(p.text);
    }
    /* the top ones and, as OpenAI always gives it, the chosen one */
    cJSON *top = first ? cJSON_CreateNull() : cJSON_CreateObject();
    for (uint32_t j = 0; key && !first && j <= lp->n_top; j++) {
        const ember_token_logprob *t = j < lp->n_top ? &lp->top[j] : &lp->chosen;
        piece q;
        char *k = piece_of(model, t->token, &q) ? key_of(&q) : NULL;
        if (k && !cJSON_GetObjectItemCaseSensitive(top, k)) cJSON_AddNumberToObject(top, k, t->logprob);
        ok = ok && k;
        free(k);
        piece_free(&q);
    }
    cJSON_AddItemToArray(cJSON_GetObjectItem(o, "top_logprobs"), top);
    free(key);
    piece_free(&p);
    return ok;
}

cJSON *api_logprobs(api_kind kind, ember_model *model, const ember_logprobs *lp, size_t n, size_t *offset)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL;
    if (kind == API_CHAT) {
        cJSON *content = cJSON_AddArrayToObject(o, "content");
        for (size_t i = 0; ok && i < n; i++) ok = chat_token(model, &lp[i], content);
        cJSON_AddNullToObject(o, "refusal");
    } else {
        static const char *const keys[] = {"tokens", "token_logprobs", "top_logprobs", "text_offset"};
        for (size_t i = 0; i < 4; i++) cJSON_AddArrayToObject(o, keys[i]);
        for (size_t i = 0; ok && i < n; i++) ok = completion_token(model, &lp[i], o, offset);
    }
    if (!ok) cJSON_Delete(o);
    return ok ? o : NULL;
}
