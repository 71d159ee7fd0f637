/* reply_format.c — a structured reply as tags and a line (reply_format.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reply_format.h"

static int is_line(const char *key) { return !strcmp(key, "line") || !strcmp(key, "say"); }

char *reply_format(const char *json, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return NULL;
    }
    size_t cap = len + 64, n = 0;
    char *out = malloc(cap);
    const cJSON *it, *line = NULL;
    cJSON_ArrayForEach(it, o) {
        if (!out) break;
        if (is_line(it->string) && cJSON_IsString(it)) {
            line = it;
            continue;
        }
        char value[96];
        if (cJSON_IsString(it)) snprintf(value, sizeof value, "%s", it->valuestring);
        else if (cJSON_IsNumber(it)) snprintf(value, sizeof value, "%g", it->valuedouble);
        else if (cJSON_IsBool(it)) snprintf(value, sizeof value, "%s", cJSON_IsTrue(it) ? "yes" : "no");
        else continue;
        n += (size_t)snprintf(out + n, cap - n, "%s%s: %s", n ? ", " : "(", it->string, value);
        if (n >= cap) break;
    }
    if (out && n && n + 2 < cap) n += (size_t)snprintf(out + n, cap - n, ") ");
    if (out && line && n < cap) snprintf(out + n, cap - n, "%s", line->valuestring);
    cJSON_Delete(o);
    return out;
}
