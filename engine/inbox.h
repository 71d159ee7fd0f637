/* inbox.h — the thread-safe front of an engine (inbox.c): requests submitted but not yet
 * taken by the stepping thread, the ids of every request not yet finished with their
 * cancel flags, the pending count, the last stats snapshot and the worker thread's flags.
 * One mutex guards it and is held only for these few moves, never across a step, so
 * that submit, cancel, pending and stats return in microseconds whatever the GPU is
 * doing. Everything else of the engine belongs to the thread that steps it.
 * Library-internal. */
#ifndef EMBER_INBOX_H
#define EMBER_INBOX_H

#include "request.h"

typedef struct ember_inbox ember_inbox;

ember_status ember_inbox_create(ember_inbox **out, ember_err *err);
/* Frees the inbox; requests still in it must have been taken. */
void ember_inbox_free(ember_inbox *q);

/* Adds r (then owned by the engine) with the next id, returned in *id. Fails with the
 * status the inbox was closed with, or EMBER_ERR_OUT_OF_MEMORY (r stays the caller's). */
ember_status ember_inbox_push(ember_inbox *q, request *r, ember_request_id *id);
/* Refuses every later push with why: the device was lost (EMBER_ERR_DEVICE_LOST), so
 * nothing would ever run, or the engine is being destroyed (EMBER_ERR_SHUTTING_DOWN), so
 * nothing would ever be taken. The last reason given stands. */
void ember_inbox_close(ember_inbox *q, ember_status why);
/* Takes the requests pushed since the last call, oldest first (linked by r->next).
 * *cancels is set when a cancel arrived since the last call. */
request *ember_inbox_take(ember_inbox *q, bool *cancels);
/* Marks request id cancelled; false when no such request is pending. */
bool ember_inbox_cancel(ember_inbox *q, ember_request_id id);
bool ember_inbox_cancelled(ember_inbox *q, ember_request_id id);
/* Request id finished (its done callback returned): it is no longer pending. */
void ember_inbox_done(ember_inbox *q, ember_request_id id);
uint32_t ember_inbox_pending(ember_inbox *q);

/* The stats snapshot: published by the stepping thread, read by anyone. Reading adds the
 * requests still in the inbox to requests_waiting. */
void ember_inbox_publish(ember_inbox *q, const ember_engine_stats *st);
void ember_inbox_stats(ember_inbox *q, ember_engine_stats *st);

/* Copies an error message to dst under the lock (dst: the engine's last error). */
void ember_inbox_store_error(ember_inbox *q, ember_err *dst, const ember_err *src);
/* Copies src's message into buf (cap > 0 bytes, cut to fit) under the same lock. */
void ember_inbox_copy_error(ember_inbox *q, const ember_err *src, char *buf, size_t cap);

/* Worker thread: worker_begin returns false when one runs already; wait_work blocks
 * while nothing is pending (and at most timeout_ms more when timeout_ms > 0: pending work
 * that could not run waits for a submit, a cancel or the time) and returns false once a
 * stop was asked; stop asks; worker_end is the worker's last call. wait_idle blocks
 * while requests are pending and a worker runs. */
bool ember_inbox_worker_begin(ember_inbox *q);
bool ember_inbox_wait_work(ember_inbox *q, uint32_t timeout_ms);
void ember_inbox_stop(ember_inbox *q);
void ember_inbox_worker_end(ember_inbox *q);
void ember_inbox_wait_idle(ember_inbox *q);

#endif
