/* chat_fit.c — the turns of a conversation and how many of them to drop (chat_fit.h). */
#include <string.h>

#include "chat_fit.h"

size_t ember_chat_n_system(const ember_chat_message *msgs, size_t n)
{
    size_t i = 0;
    while (i < n && strcmp(msgs[i].role, "system") == 0) i++;
    return i;
}

size_t ember_chat_turns(const ember_chat_message *msgs, size_t n, size_t *starts, size_t cap)
{
    size_t first = ember_chat_n_system(msgs, n), k = 0;
    for (size_t i = first; i < n; i++) {
        if (i != first && strcmp(msgs[i].role, "user") != 0) continue;
        if (k < cap) starts[k] = i;
        k++;
    }
    return k;
}

ember_status ember_chat_fewest_drops(size_t n_turns, size_t limit, ember_chat_measure measure, void *user,
                                     size_t *d, size_t *n_tokens)
{
    *d = 0;
    *n_tokens = 0;
    if (n_turns < 2) return EMBER_OK;
    size_t lo = 1, hi = n_turns - 1, len = 0; /* the answer, if any, is in [lo, hi] */
    ember_status s = measure(user, hi, &len);
    if (s != EMBER_OK || len > limit) {
        *n_tokens = len;
        return s;
    }
    size_t best_len = len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((s = measure(user, mid, &len)) != EMBER_OK) return s;
        if (len <= limit) hi = mid, best_len = len;
        else lo = mid + 1;
    }
    *d = hi;
    *n_tokens = best_len;
    return EMBER_OK;
}
