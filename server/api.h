/* api.h — the OpenAI request and response formats (api.c): a JSON body checked and turned
 * into what ember_submit takes, and the JSON of responses, stream chunks and errors.
 * Knows nothing of HTTP. */
#ifndef EMBER_SERVER_API_H
#define EMBER_SERVER_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

typedef enum api_kind { API_CHAT, API_COMPLETION } api_kind;

/* A refusal in OpenAI's shape: {"error": {"message", "type", "param", "code"}}. */
typedef struct api_error {
    int status;               /* the HTTP status */
    char message[320];
    const char *type, *param, *code; /* static strings; param and code may be NULL */
} api_error;

/* What requests are checked against. */
typedef struct api_limits {
    const char *model_id;     /* the one model served */
    uint32_t ctx_len, n_vocab;
    uint32_t dim;             /* the model's hidden size: the length of its embeddings */
    ember_speculation spec;   /* the server's speculation (--draft / --ngram), for every request */
} api_limits;

#define API_IGNORED_MAX 200      /* bytes of the list of ignored fields (longer lists end in "...") */

typedef struct api_request {
    api_kind kind;
    bool stream, include_usage;
    char *prompt;             /* the text to submit (a chat rendered through its template) */
    uint32_t *tokens;         /* or a completion prompt given as token ids */
    size_t n_tokens;
    ember_request_desc desc;  /* limits, sampling, stop strings, speculation; no callbacks */
    char *stop[EMBER_MAX_STOP];
    ember_logit_bias *bias;   /* desc.sampling.logit_bias */
    ember_chat_message *messages; /* a chat's messages (roles static, content owned) */
    size_t n_messages;
    char *json_schema, *grammar;  /* structured output: desc.json_schema / desc.grammar */
    /* tools (api_tools.c): the chat then goes through ember_chat_apply_json */
    char *messages_json;          /* a chat's messages as the body gave them */
    char *tools_json, *tool_only; /* the tools; tool_choice's function, or NULL */
    int tool_mode;                /* API_TOOLS_* (tool_choice) */
    bool tool_parallel;           /* parallel_tool_calls */
    bool calls;                   /* the reply may make tool calls (then: in syntax) */
    ember_tool_syntax syntax;
    bool logprobs;                /* chat's logprobs, or completions' logprobs given */
    bool echo;                    /* completions: the prompt comes back before the reply */
    uint32_t top_logprobs;        /* chat's top_logprobs, completions' logprobs (0..20) */
    uint32_t n, best_of;          /* choices returned, samples drawn (best_of >= n) */
    char ignored[API_IGNORED_MAX]; /* the body's fields Ember does not know, ", "-separated */
} api_request;

#define API_MAX_SAMPLES 128       /* n and best_of at most */

enum { API_TOOLS_AUTO, API_TOOLS_NONE, API_TOOLS_REQUIRED };

struct cJSON;
/* A body as a JSON object whose "model", when given, is the one served; NULL with *err
 * filled (400: not JSON, not an object, a string holding \u0000 or a lone surrogate; any "model" name is
 * taken).
 * The object is the caller's (cJSON_Delete). */
struct cJSON *api_parse_object(const api_limits *lim, const char *body, size_t len, api_error *err);

/* Parses a request body: api_parse_body, then for a chat api_render_chat. false with
 * *err filled (a 4xx, or a 500 when the template or memory fails) when it is refused. */
bool api_parse(const api_limits *lim, ember_model *model, api_kind kind, const char *body, size_t len,
               api_request *out, api_error *err);
/* The parse step alone, which needs no model or engine (fuzz/fuzz_server_request.c
 * feeds it arbitrary bodies): checks every field against lim and fills *out; a chat's
 * messages are left in out->messages with out->prompt NULL. On false *out is freed. */
bool api_parse_body(const api_limits *lim, api_kind kind, const char *body, size_t len, api_request *out,
                    api_error *err);
/* Renders r->messages through the model's chat template into r->prompt. On false
 * (a 500) r is left for api_request_free. */
bool api_render_chat(ember_model *model, api_request *r, api_error *err);
void api_request_free(api_request *r);
/* Structured output fields of body o (api_structured.c): response_format, json_schema,
 * grammar, checked and set on out->desc. false with *e filled (a 400). */
struct cJSON;
bool api_structured(const struct cJSON *o, api_request *out, api_error *e);
/* The OpenAI fields of body o that Ember knows and does not honour (api_fields.c): false
 * with *e filled (a 400 naming the first) when one asks for something. */
bool api_unsupported(const struct cJSON *o, api_kind kind, api_error *e);
/* The fields of body o that kind's endpoint does not know, listed into out (", "
 * between; cap bytes): ignored, as vLLM ignores them, and said in a header and the log. */
void api_ignored(const struct cJSON *o, api_kind kind, char *out, size_t cap);
/* tools, tool_choice and parallel_tool_calls of body o (api_tools.c), checked into out. */
bool api_tools(const struct cJSON *o, api_request *out, api_error *e);
/* The grammar (desc.grammar, and its trigger when tool_choice is auto) of the calls a
 * reply to r may make, in the syntax its prompt teaches. */
bool api_tool_grammar(api_request *r, ember_tool_syntax syntax, api_error *e);

/* Fills an error (printf-style message). */
void api_fail(api_error *e, int status, const char *type, const char *param, const char *code, const char *fmt, ...);
/* {"error": {...}}; malloc'ed. */
char *api_error_json(const api_error *e);
/* The same as a stream event, "data: {"error": {...}}\n\n", which OpenAI's client
 * libraries raise as an API error mid-stream; malloc'ed. */
char *api_error_event(const api_error *e);

/* What every response of one request repeats. */
typedef struct api_format {
    api_kind kind;
    char id[40];              /* "chatcmpl-N" or "cmpl-N" */
    long long created;        /* Unix seconds */
    const char *model;
    uint32_t n_prompt;
    bool tools;               /* the reply may hold tool calls, in this syntax */
    bool calls_only;          /* tool_choice required or a function: the reply is calls, content null */
    ember_tool_syntax syntax;
} api_format;

/* "stop", "length" (also a full KV pool) or "error" (cancelled requests are "stop"). */
const char *api_finish_reason(ember_finish why);

/* A reply's tool calls (f->tools): the length of its text before them (len when it makes
 * none; 0 with calls_only) and, when it makes some, OpenAI's "tool_calls" array (the
 * caller's, cJSON); calls that do not parse count as text, except with calls_only, where
 * a reply cut short gives the calls it completed. */
struct cJSON *api_tool_calls(const api_format *f, const char *text, size_t len, size_t *content_len);
/* How much of text[0..len) a stream may send as content while the reply may still turn
 * into tool calls: up to the syntax's trigger, less any end that could begin one. */
size_t api_tool_safe_len(const api_format *f, const char *text, size_t len);
/* The stream event holding a reply's tool calls as deltas (index, id, type, function). */
char *api_tool_calls_chunk(const api_format *f, uint32_t index, struct cJSON *calls);
/* One choice of a non-streamed response: its text, why it ended and its "logprobs"
 * (NULL: null; owned from here on). NULL when memory ran out. */
struct cJSON *api_choice(const api_format *f, uint32_t index, const char *text, size_t len, ember_finish why,
                         struct cJSON *logprobs);
/* The whole non-streamed response around the array of its choices (owned from here on),
 * with usage counting the prompt once and n_gen generated tokens; malloc'ed. With err (a
 * request that failed after its 200 was sent) it also holds an "error" object saying why. */
char *api_response(const api_format *f, struct cJSON *choices, uint32_t n_gen, const api_error *err);
/* One Server-Sent Event "data: {...}\n\n" of a stream, for choice index: role (chat's
 * first chunk), text (may be empty), finish (NULL until the last chunk) and the
 * log-probabilities of the tokens it covers (NULL: null); with usage, the chunk of
 * stream_options.include_usage (no choices). malloc'ed. */
char *api_chunk(const api_format *f, uint32_t index, bool role, const char *text, size_t len, const char *finish,
                struct cJSON *logprobs);
/* The "logprobs" object of a choice (api_logprobs.c) for the tokens lp[0..n), in the
 * kind's shape; *offset is the text_offset of lp[0] (completions) and advances past
 * them. NULL when memory ran out. api_response and api_chunk take it (NULL: null) and
 * own it from then on. */
struct cJSON *api_logprobs(api_kind kind, ember_model *model, const ember_logprobs *lp, size_t n, size_t *offset);
char *api_usage_chunk(const api_format *f, uint32_t n_gen);
/* {"object": "list", "data": [model]} with its context length and vocabulary; malloc'ed. */
char *api_models(const api_limits *lim, long long created);

/* POST /tokenize and /detokenize (api_tokens.c): the response body (malloc'ed), or NULL
 * with *err filled. */
char *api_tokenize(const api_limits *lim, ember_model *model, const char *body, size_t len, api_error *err);
char *api_detokenize(const api_limits *lim, ember_model *model, const char *body, size_t len, api_error *err);

/* POST /v1/embeddings (api_embeddings.c). One input: a text (submitted with BOS, as a
 * completion prompt) or token ids. */
typedef struct api_embed_input {
    char *text;
    uint32_t *tokens;
    size_t n_tokens;
} api_embed_input;

typedef struct api_embed_request {
    api_embed_input *in;
    size_t n;                 /* 1 .. API_MAX_EMBED_INPUTS */
    bool base64;              /* encoding_format "base64": little-endian float32 bytes */
} api_embed_request;

#define API_MAX_EMBED_INPUTS 2048

/* Parses an embeddings body (OpenAI's: input, model, encoding_format, dimensions, user;
 * other fields ignored); needs no model. On false *err is filled (400 naming the field,
 * 500 out of memory) and *out freed. */
bool api_parse_embeddings(const api_limits *lim, const char *body, size_t len, api_embed_request *out,
                          api_error *err);
void api_embed_request_free(api_embed_request *r);
/* The response to r: n vectors of lim->dim floats, one after the other in v, and usage
 * counting n_prompt tokens; malloc'ed, NULL when memory ran out. */
char *api_embeddings_response(const api_limits *lim, const api_embed_request *r, const float *v, uint64_t n_prompt);

#endif
