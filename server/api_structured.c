/* api_structured.c — structured output in a request body: OpenAI's response_format
 * ({"type": "text" | "json_object" | "json_schema"}) and the fields llama.cpp's server
 * takes (grammar: GBNF text; json_schema: a schema object). Each is checked here, so a
 * schema or grammar Ember refuses is a 400 naming the field and the reason, before the
 * request is queued. docs/server.md, docs/grammar.md. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"

static bool refuse(api_error *e, const char *param, const char *why)
{
    api_fail(e, 400, "invalid_request_error", param, NULL, "%s", why);
    return false;
}

/* The schema of response_format into *schema (malloc'd JSON text; NULL for "text"). */
static bool response_format(const cJSON *rf, char **schema, api_error *e)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
    if (!cJSON_IsObject(rf) || !cJSON_IsString(type))
        return refuse(e, "response_format", "'response_format' must be an object with a 'type'");
    if (!strcmp(type->valuestring, "text")) return true;
    if (!strcmp(type->valuestring, "json_object")) return (*schema = strdup("{\"type\": \"object\"}")) != NULL;
    if (strcmp(type->valuestring, "json_schema"))
        return refuse(e, "response_format", "'response_format.type' must be text, json_object or json_schema");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
    const cJSON *s = cJSON_IsObject(js) ? cJSON_GetObjectItemCaseSensitive(js, "schema") : NULL;
    if (!cJSON_IsObject(s) && !cJSON_IsBool(s))
        return refuse(e, "response_format", "'response_format.json_schema.schema' must be a JSON Schema");
    return (*schema = cJSON_PrintUnformatted(s)) != NULL;
}

/* Whether schema (or grammar) is one Ember enforces; the reason in e when not. */
static bool check(const char *schema, const char *grammar, const char *param, api_error *e)
{
    char why[300];
    size_t len;
    ember_grammar_match m;
    ember_status s = schema ? ember_json_schema_to_grammar(schema, NULL, 0, &len, why, sizeof why)
                            : ember_grammar_check(grammar, NULL, "", 0, &m, why, sizeof why);
    return s == EMBER_OK || refuse(e, param, why);
}

bool api_structured(const cJSON *o, api_request *out, api_error *e)
{
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(o, "response_format");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(o, "json_schema");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "grammar");
    rf = cJSON_IsNull(rf) ? NULL : rf, js = cJSON_IsNull(js) ? NULL : js, g = cJSON_IsNull(g) ? NULL : g;
    const char *param = rf ? "response_format" : "json_schema";
    if (rf && !response_format(rf, &out->json_schema, e)) return false;
    if (js && !(cJSON_IsObject(js) || cJSON_IsBool(js))) return refuse(e, "json_schema", "'json_schema' must be a JSON Schema");
    if (g && !cJSON_IsString(g)) return refuse(e, "grammar", "'grammar' must be GBNF text");
    if ((out->json_schema != NULL) + (js != NULL) + (g != NULL) > 1)
        return refuse(e, g ? "grammar" : "json_schema", "give one of 'response_format', 'json_schema' and 'grammar'");
    if (js && !(out->json_schema = cJSON_PrintUnformatted(js))) return refuse(e, NULL, "out of memory");
    if (g && !(out->grammar = strdup(g->valuestring))) return refuse(e, NULL, "out of memory");
    if (!out->json_schema && !out->grammar) return true;
    if (!check(out->json_schema, out->grammar, g ? "grammar" : param, e)) return false;
    out->desc.json_schema = out->json_schema;
    out->desc.grammar = out->grammar;
    return true;
}
