/* inbox.c — the engine's thread-safe front (inbox.h). The live ids are kept sorted (ids
 * only grow), so a cancel is a binary search. */
#include "platform/os_thread.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "inbox.h"

typedef struct live {
    ember_request_id id;
    bool cancelled;
} live;

struct ember_inbox {
    ember_mutex mu;
    ember_cond work, idle;
    request *head, *tail;        /* pushed, not yet taken */
    uint32_t n_queued;
    live *live;                  /* every pending request, by id */
    uint32_t n_live, cap_live;
    bool cancels;                /* a cancel since the last take */
    ember_request_id next_id;
    ember_engine_stats stats;
    bool worker, stop;
    ember_status closed;         /* EMBER_OK, or why no request is taken any more */
};

ember_status ember_inbox_create(ember_inbox **out, ember_err *err)
{
    ember_inbox *q = ember_calloc(1, sizeof *q);
    *out = q;
    if (!q) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_mutex_init(&q->mu);
    ember_cond_init(&q->work);
    ember_cond_init(&q->idle);
    q->next_id = 1;
    return EMBER_OK;
}

void ember_inbox_free(ember_inbox *q)
{
    if (!q) return;
    ember_cond_destroy(&q->work);
    ember_cond_destroy(&q->idle);
    ember_mutex_destroy(&q->mu);
    ember_free(q->live);
    ember_free(q);
}

/* Grows the live table; false when memory ran out (the caller then fails the submit). */
static bool reserve_live(ember_inbox *q)
{
    if (q->n_live < q->cap_live) return true;
    uint32_t cap = q->cap_live ? 2 * q->cap_live : 64;
    live *l = ember_realloc(q->live, cap * sizeof *l);
    if (!l) return false;
    q->live = l;
    q->cap_live = cap;
    return true;
}

ember_status ember_inbox_push(ember_inbox *q, request *r, ember_request_id *id)
{
    ember_mutex_lock(&q->mu);
    ember_status s = q->closed ? q->closed : reserve_live(q) ? EMBER_OK : EMBER_ERR_OUT_OF_MEMORY;
    if (s == EMBER_OK) {
        *id = r->id = q->next_id++;
        q->live[q->n_live++] = (live){*id, false};
        r->next = NULL;
        if (q->tail) q->tail->next = r;
        else q->head = r;
        q->tail = r;
        q->n_queued++;
        ember_cond_signal(&q->work);
    }
    ember_mutex_unlock(&q->mu);
    return s;
}

void ember_inbox_close(ember_inbox *q, ember_status why)
{
    ember_mutex_lock(&q->mu);
    q->closed = why;
    ember_mutex_unlock(&q->mu);
}

request *ember_inbox_take(ember_inbox *q, bool *cancels)
{
    ember_mutex_lock(&q->mu);
    request *r = q->head;
    q->head = q->tail = NULL;
    q->n_queued = 0;
    *cancels = q->cancels;
    q->cancels = false;
    ember_mutex_unlock(&q->mu);
    return r;
}

/* Index of id in the live table, or n_live. Called with the lock held. */
static uint32_t find_live(const ember_inbox *q, ember_request_id id)
{
    uint32_t lo = 0, hi = q->n_live;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (q->live[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < q->n_live && q->live[lo].id == id ? lo : q->n_live;
}

bool ember_inbox_cancel(ember_inbox *q, ember_request_id id)
{
    ember_mutex_lock(&q->mu);
    uint32_t i = find_live(q, id);
    bool found = i < q->n_live;
    if (found) {
        q->live[i].cancelled = true;
        q->cancels = true;
        ember_cond_signal(&q->work);
    }
    ember_mutex_unlock(&q->mu);
    return found;
}

bool ember_inbox_cancelled(ember_inbox *q, ember_request_id id)
{
    ember_mutex_lock(&q->mu);
    uint32_t i = find_live(q, id);
    bool c = i < q->n_live && q->live[i].cancelled;
    ember_mutex_unlock(&q->mu);
    return c;
}

void ember_inbox_done(ember_inbox *q, ember_request_id id)
{
    ember_mutex_lock(&q->mu);
    uint32_t i = find_live(q, id);
    if (i < q->n_live) {
        memmove(&q->live[i], &q->live[i + 1], (q->n_live - i - 1) * sizeof *q->live);
        q->n_live--;
    }
    if (q->n_live == 0) ember_cond_broadcast(&q->idle);
    ember_mutex_unlock(&q->mu);
}

uint32_t ember_inbox_pending(ember_inbox *q)
{
    ember_mutex_lock(&q->mu);
    uint32_t n = q->n_live;
    ember_mutex_unlock(&q->mu);
    return n;
}

void ember_inbox_publish(ember_inbox *q, const ember_engine_stats *st)
{
    ember_mutex_lock(&q->mu);
    q->stats = *st;
    ember_mutex_unlock(&q->mu);
}

void ember_inbox_stats(ember_inbox *q, ember_engine_stats *st)
{
    ember_mutex_lock(&q->mu);
    *st = q->stats;
    st->requests_waiting += q->n_queued;
    ember_mutex_unlock(&q->mu);
}

void ember_inbox_store_error(ember_inbox *q, ember_err *dst, const ember_err *src)
{
    ember_mutex_lock(&q->mu);
    if (dst != src) *dst = *src;
    ember_mutex_unlock(&q->mu);
}

void ember_inbox_copy_error(ember_inbox *q, const ember_err *src, char *buf, size_t cap)
{
    ember_mutex_lock(&q->mu);
    snprintf(buf, cap, "%s", src->msg);
    ember_mutex_unlock(&q->mu);
}

bool ember_inbox_worker_begin(ember_inbox *q)
{
    ember_mutex_lock(&q->mu);
    bool ok = !q->worker;
    if (ok) q->worker = true, q->stop = false;
    ember_mutex_unlock(&q->mu);
    return ok;
}

bool ember_inbox_wait_work(ember_inbox *q, uint32_t timeout_ms)
{
    ember_mutex_lock(&q->mu);
    while (!q->stop && q->n_live == 0) ember_cond_wait(&q->work, &q->mu);
    if (!q->stop && timeout_ms) ember_cond_wait_ms(&q->work, &q->mu, timeout_ms);
    bool go = !q->stop;
    ember_mutex_unlock(&q->mu);
    return go;
}

void ember_inbox_stop(ember_inbox *q)
{
    ember_mutex_lock(&q->mu);
    q->stop = true;
    ember_cond_broadcast(&q->work);
    ember_mutex_unlock(&q->mu);
}

void ember_inbox_worker_end(ember_inbox *q)
{
    ember_mutex_lock(&q->mu);
    q->worker = false;
    ember_cond_broadcast(&q->idle); /* waiters in wait_idle return: nobody steps now */
    ember_mutex_unlock(&q->mu);
}

void ember_inbox_wait_idle(ember_inbox *q)
{
    ember_mutex_lock(&q->mu);
    while (q->n_live > 0 && q->worker) ember_cond_wait(&q->idle, &q->mu);
    ember_mutex_unlock(&q->mu);
}
