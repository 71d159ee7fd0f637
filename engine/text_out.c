/* text_out.c — see text_out.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "text_out.h"

#include "engine/tokenizer/detok.h"

struct ember_text_out {
    char *text;                 /* generated text so far (valid UTF-8) */
    size_t len, cap;
    size_t sent;                /* bytes already handed to the token callback */
    char *stop[EMBER_MAX_STOP]; /* owned copies */
    uint32_t n_stop;
    bool final;                 /* finished: nothing is held back any more */
    ember_detok detok;
};

ember_status ember_text_create(const char *const *stop, ember_text_out **out, ember_err *err)
{
    ember_text_out *o = *out = ember_calloc(1, sizeof *o);
    if (!o) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_detok_init(&o->detok);
    for (uint32_t i = 0; stop && i < EMBER_MAX_STOP && stop[i]; i++) {
        if (!stop[i][0]) continue;
        if (!(o->stop[o->n_stop] = ember_strdup(stop[i]))) {
            ember_text_free(o);
            *out = NULL;
            return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        }
        o->n_stop++;
    }
    return EMBER_OK;
}

void ember_text_free(ember_text_out *o)
{
    if (!o) return;
    for (uint32_t i = 0; i < o->n_stop; i++) ember_free(o->stop[i]);
    ember_free(o->text);
    ember_free(o);
}

static bool reserve(ember_text_out *o, size_t extra)
{
    if (o->len + extra + 1 <= o->cap) return true;
    size_t cap = o->cap ? o->cap : 256;
    while (cap < o->len + extra + 1) cap *= 2;
    char *t = ember_realloc(o->text, cap);
    if (!t) return false;
    o->text = t;
    o->cap = cap;
    return true;
}

/* Cuts the text at the earliest stop string that ends in the new bytes [from, len). */
static bool find_stop(ember_text_out *o, size_t from)
{
    size_t cut = SIZE_MAX;
    for (uint32_t i = 0; i < o->n_stop; i++) {
        size_t n = strlen(o->stop[i]);
        size_t start = from >= n - 1 ? from - (n - 1) : 0;
        if (start < o->sent) start = o->sent;
        for (size_t p = start; p + n <= o->len && p < cut; p++)
            if (memcmp(o->text + p, o->stop[i], n) == 0) cut = p;
    }
    if (cut == SIZE_MAX) return false;
    o->len = cut;
    o->text[cut] = 0;
    return true;
}

int ember_text_push(ember_text_out *o, const ember_tokenizer *t, uint32_t id)
{
    size_t need = ember_detok_max(t);
    if (!reserve(o, need)) return -1;
    size_t from = o->len;
    o->len += ember_detok_push(&o->detok, t, id, o->text + o->len, o->cap - o->len - 1);
    o->text[o->len] = 0;
    return find_stop(o, from) ? 1 : 0;
}

int ember_text_finish(ember_text_out *o)
{
    if (!reserve(o, 16)) return -1;
    o->len += ember_detok_flush(&o->detok, o->text + o->len, o->cap - o->len - 1);
    o->text[o->len] = 0;
    o->final = true;
    return 0;
}

/* Length of the longest suffix of the unsent text that is a proper prefix of a stop
 * string: it may still become one. */
static size_t held_back(const ember_text_out *o)
{
    size_t hold = 0;
    for (uint32_t i = 0; !o->final && i < o->n_stop; i++) {
        size_t n = strlen(o->stop[i]);
        for (size_t k = n - 1; k > hold; k--)
            if (k <= o->len - o->sent && memcmp(o->text + o->len - k, o->stop[i], k) == 0) {
                hold = k;
                break;
            }
    }
    return hold;
}

size_t ember_text_take(ember_text_out *o, const char **p)
{
    size_t end = o->len - held_back(o);
    *p = o->text ? o->text + o->sent : "";
    size_t n = end > o->sent ? end - o->sent : 0;
    o->sent += n;
    return n;
}
