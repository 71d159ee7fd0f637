/* job.h — one generation request between the engine and its HTTP connection (job.c): its
 * samples (n, or best_of of which the n most likely are returned), each one engine
 * request. The engine's callbacks (on the engine's worker thread) append text; the
 * connection's thread reads the response out of it, as Server-Sent Events or as one JSON
 * body, blocking until there is something to send. The connection and each submitted
 * sample hold the job, and the last to let go frees it. */
#ifndef EMBER_SERVER_JOB_H
#define EMBER_SERVER_JOB_H

#include <stdbool.h>
#include <sys/types.h>

#include "api.h"
#include "metrics.h"

typedef struct job job;

/* A job of n_samples samples returning n_best of them (1 <= n_best <= n_samples <=
 * API_MAX_SAMPLES; a stream needs them equal), for the connection (one owner). */
job *job_create(const api_format *f, bool stream, bool include_usage, uint32_t n_samples, uint32_t n_best,
                srv_metrics *metrics);
/* Points desc's callbacks at sample i of j (the log-probabilities' too when asked for, or
 * when samples are ranked; the prompt's with echo; model gives their tokens' text) and
 * counts the engine e as an owner: call just before ember_submit, and job_submitted
 * after it (the request's id, or 0 when it failed, which gives the engine's ownership
 * back). */
void job_attach(job *j, uint32_t i, ember_request_desc *desc, ember_engine *e, ember_model *model, bool logprobs,
                bool echo);
/* Every sample's text starts with text[0..len) (completions' echo); before job_attach. */
bool job_echo(job *j, const char *text, size_t len);
void job_submitted(job *j, uint32_t i, ember_request_id id);
/* The connection is closed (response sent, or the client went away): the samples not yet
 * finished are cancelled, freeing their KV blocks; then the connection lets go. */
void job_closed(job *j, ember_engine *e);

/* Ends the samples not yet finished with error why (the server is stopping): a stream
 * gets its error event and [DONE], a whole response its "error"; they are cancelled in
 * the engine. */
void job_end(job *j, const api_error *why);

/* Up to max bytes of the response; waits (at most about a second, then writes a
 * keep-alive that the formats ignore) when nothing is ready. -1 after the last byte. */
ssize_t job_read(job *j, char *buf, size_t max);

#endif
