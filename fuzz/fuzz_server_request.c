/* fuzz_server_request.c — the server's request parsing (server/api.c, api_parse_body:
 * the JSON body of /v1/chat/completions or /v1/completions turned into a request, with
 * no model or engine), then what the server does with the result without a model: a
 * chat's messages rendered through a chat template, a refusal's JSON, and a response
 * chunk carrying the prompt. Or /v1/embeddings' body (server/api_embeddings.c) and the
 * response to it.
 *
 * Input: byte 0: bit 0 completion (else chat), bits 1-3 the chat template, bit 4
 * embeddings (then the others are unused); the rest is the body. Checks what api.h
 * promises of an accepted request: every limit within its range, token ids below the
 * vocabulary, stop strings non-empty and in the descriptor, a chat's roles known and
 * contents present, embeddings' inputs each a non-empty text or non-empty ids; and that
 * every JSON produced parses back. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "engine/chat/chat_template.h"
#include "server/api.h"
#include "util.h"

static void check_json(char *s, const char *prefix)
{
    FUZZ_CHECK(s != NULL, "no JSON");
    size_t k = strlen(prefix);
    FUZZ_CHECK(strncmp(s, prefix, k) == 0, "does not start with '%s'", prefix);
    cJSON *o = cJSON_Parse(s + k);
    FUZZ_CHECK(cJSON_IsObject(o), "does not parse back: %.200s", s);
    cJSON_Delete(o);
    free(s);
}

static void check_request(const api_limits *lim, api_kind kind, const api_request *r)
{
    const ember_request_desc *d = &r->desc;
    FUZZ_CHECK(d->max_tokens >= 1 && d->max_tokens <= lim->ctx_len, "max_tokens %u", d->max_tokens);
    FUZZ_CHECK(d->truncate_prompt_tokens < lim->ctx_len, "truncate_prompt_tokens %u", d->truncate_prompt_tokens);
    FUZZ_CHECK(d->sampling.temperature >= 0 && d->sampling.temperature <= 2, "temperature");
    FUZZ_CHECK(d->sampling.top_p >= 0 && d->sampling.top_p <= 1, "top_p");
    FUZZ_CHECK(d->sampling.min_p >= 0 && d->sampling.min_p <= 1, "min_p");
    for (int i = 0; i < EMBER_MAX_STOP; i++) {
        FUZZ_CHECK(d->stop[i] == r->stop[i], "stop %d", i);
        FUZZ_CHECK(!r->stop[i] || r->stop[i][0], "empty stop string %d", i);
    }
    if (kind == API_COMPLETION) {
        FUZZ_CHECK((r->prompt != NULL) != (r->tokens != NULL), "prompt and tokens");
        FUZZ_CHECK(d->prompt == r->prompt && d->tokens == r->tokens && d->n_tokens == r->n_tokens, "desc");
        for (size_t i = 0; i < r->n_tokens; i++) FUZZ_CHECK(r->tokens[i] < lim->n_vocab, "token %u", r->tokens[i]);
        return;
    }
    /* a chat with tools or their results keeps its messages as JSON (ember_chat_apply_json) */
    FUZZ_CHECK((r->n_messages >= 1) != (r->messages_json != NULL) && !r->prompt, "messages");
    FUZZ_CHECK(!r->tools_json || r->messages_json, "tools without JSON messages");
    for (size_t i = 0; i < r->n_messages; i++) {
        const char *role = r->messages[i].role;
        FUZZ_CHECK(role && r->messages[i].content, "message %zu", i);
        FUZZ_CHECK(!strcmp(role, "system") || !strcmp(role, "user") || !strcmp(role, "assistant"), "role %s", role);
    }
}

/* An embeddings body: its inputs as api.h promises them, and the response to them (every
 * vector 1/sqrt(dim): of unit norm) whole in both encodings. */
static void embeddings(const api_limits *lim, const char *body, size_t len)
{
    api_embed_request r;
    api_error e;
    memset(&e, 0, sizeof e);
    if (!api_parse_embeddings(lim, body, len, &r, &e)) {
        FUZZ_CHECK(e.status >= 400 && e.status < 600 && e.message[0], "a refusal without status or message");
        FUZZ_CHECK(r.n == 0 && !r.in, "a refused request not freed");
        check_json(api_error_json(&e), "");
        return;
    }
    FUZZ_CHECK(r.n >= 1 && r.n <= API_MAX_EMBED_INPUTS, "%zu inputs", r.n);
    for (size_t i = 0; i < r.n; i++) {
        const api_embed_input *in = &r.in[i];
        FUZZ_CHECK(!in->text != !in->tokens, "input %zu: text and tokens", i);
        FUZZ_CHECK(in->text ? in->text[0] != 0 : in->n_tokens > 0, "input %zu empty", i);
        for (size_t k = 0; k < in->n_tokens; k++) FUZZ_CHECK(in->tokens[k] < lim->n_vocab, "token %u", in->tokens[k]);
    }
    float *v = malloc(r.n * lim->dim * sizeof *v);
    for (size_t i = 0; v && i < r.n * lim->dim; i++) v[i] = 0.35355339f;
    if (v) check_json(api_embeddings_response(lim, &r, v, 7), "");
    free(v);
    api_embed_request_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    if (data[0] & 16) {
        api_limits lim = {.model_id = "stories260K", .ctx_len = 512, .n_vocab = 512, .dim = 8};
        embeddings(&lim, (const char *)data + 1, size - 1);
        return 0;
    }
    static const char *const TEMPLATES[] = {"chatml", "llama2", "llama3", "llama3.1", "mistral", "zephyr", "gemma", "phi3"};
    api_kind kind = data[0] & 1 ? API_COMPLETION : API_CHAT;
    const char *tmpl = TEMPLATES[(data[0] >> 1) & 7];
    api_limits lim = {.model_id = "stories260K", .ctx_len = 512, .n_vocab = 512};
    api_request r;
    api_error e;
    memset(&e, 0, sizeof e);
    if (!api_parse_body(&lim, kind, (const char *)data + 1, size - 1, &r, &e)) {
        FUZZ_CHECK(e.status >= 400 && e.status < 600 && e.message[0], "a refusal without status or message");
        check_json(api_error_json(&e), "");
        return 0;
    }
    check_request(&lim, kind, &r);
    const char *text = r.prompt ? r.prompt : "";
    if (kind == API_CHAT) {
        ember_chat_template t;
        ember_err err = {{0}};
        FUZZ_CHECK(ember_chat_template_init(&t, tmpl, NULL, 0, NULL, NULL, &err) == EMBER_OK, "%s", err.msg);
        char *out = NULL;
        size_t len = 0;
        ember_status s = r.messages_json ? ember_chat_render_json(&t, r.messages_json, strlen(r.messages_json),
                                                                  r.tools_json, r.tools_json ? strlen(r.tools_json) : 0,
                                                                  true, &out, &len, &err)
                                         : ember_chat_render(&t, r.messages, r.n_messages, 0, true, &out, &len, &err);
        if (s == EMBER_OK) FUZZ_CHECK(strlen(out) <= len, "rendered length");
        else FUZZ_CHECK(err.msg[0], "refused without a message");
        ember_free(out);
        ember_chat_template_free(&t);
        text = r.messages_json ? "" : r.messages[0].content;
    }
    api_format f = {.kind = kind, .id = "cmpl-1", .created = 1, .model = lim.model_id, .n_prompt = 3};
    if (fuzz_valid_utf8(text, strlen(text))) /* generated text always is (detok.h) */
        check_json(api_chunk(&f, 0, kind == API_CHAT, text, strlen(text), NULL, NULL), "data: ");
    api_request_free(&r);
    return 0;
}
