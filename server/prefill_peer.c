/* prefill_peer.c — see prefill_peer.h. The request is POST URL/v1/prefill with
 * {"prompt": [ids]}; the answer, application/octet-stream, is the state's bytes, which
 * the engine checks again at submit (docs/state.md). */
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefill_peer.h"

#define CONNECT_S 5
#define STALL_S 30    /* no byte for this long: the peer is taken for dead */

typedef struct body {
    char *p;
    size_t len, cap, max;
    bool too_big;
} body;

static size_t take(char *p, size_t size, size_t n, void *user)
{
    body *b = user;
    if (b->len + n > b->max) return b->too_big = true, 0;
    if (b->len + n > b->cap) {
        size_t cap = 2 * (b->len + n) + 65536;
        char *q = realloc(b->p, cap < b->max ? cap : b->max);
        if (!q) return 0;
        b->p = q, b->cap = cap < b->max ? cap : b->max;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return n;
}

void prefill_peer_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

/* {"prompt": [ids]}; malloc'ed. */
static char *request_json(const uint32_t *tokens, size_t n)
{
    char *s = malloc(16 + 11 * n), *at = s;
    if (!s) return NULL;
    at += sprintf(at, "{\"prompt\": [");
    for (size_t i = 0; i < n; i++) at += sprintf(at, "%s%u", i ? "," : "", tokens[i]);
    strcpy(at, "]}");
    return s;
}

static struct curl_slist *headers(const prefill_peer *p)
{
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    h = h ? curl_slist_append(h, "Content-Type: application/json") : NULL;
    if (h && p->api_key) {
        char auth[512];
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", p->api_key);
        struct curl_slist *more = curl_slist_append(h, auth);
        if (!more) curl_slist_free_all(h);
        h = more;
    }
    return h;
}

void *prefill_peer_fetch(const prefill_peer *p, const uint32_t *tokens, size_t n, size_t *len, char *msg,
                         size_t cap)
{
    char url[2048], errbuf[CURL_ERROR_SIZE] = "";
    size_t u = strlen(p->url);
    while (u && p->url[u - 1] == '/') u--;
    snprintf(url, sizeof url, "%.*s/v1/prefill", (int)u, p->url);
    CURL *h = curl_easy_init();
    char *req = request_json(tokens, n);
    struct curl_slist *hd = h && req ? headers(p) : NULL;
    body b = {.max = p->max_bytes};
    long status = 0;
    CURLcode rc = CURLE_OUT_OF_MEMORY;
    if (hd) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_S);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)STALL_S);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, take);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    }
    bool ok = rc == CURLE_OK && status == 200;
    if (!ok)
        snprintf(msg, cap, "%s", b.too_big ? "the state is larger than --max-state-mib"
                                 : rc != CURLE_OK ? (errbuf[0] ? errbuf : curl_easy_strerror(rc))
                                                  : "the peer answered with an error");
    if (!ok && rc == CURLE_OK) snprintf(msg, cap, "the peer answered %ld", status);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    free(req);
    if (!ok) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}
