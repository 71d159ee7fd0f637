/* embed_job.h — one POST /v1/embeddings between the engine and its connection
 * (embed_job.c): an engine request per input, all submitted at once so that the engine
 * batches them, and the connection's thread waiting until every one has finished. The
 * engine's callbacks (on its worker thread) copy each vector in; the connection frees the
 * job only once every done callback has run, so nothing is freed under them. */
#ifndef EMBER_SERVER_EMBED_JOB_H
#define EMBER_SERVER_EMBED_JOB_H

#include "api.h"
#include "metrics.h"

typedef struct embed_job embed_job;

/* A job of n inputs, each a vector of dim floats; NULL when memory ran out. */
embed_job *embed_job_create(size_t n, uint32_t dim, ember_engine *e, srv_metrics *metrics);
/* Points desc's callbacks at input i of j: call just before ember_submit, and
 * embed_job_submitted after it (the request's id, or 0 when it was refused). */
void embed_job_attach(embed_job *j, size_t i, ember_request_desc *desc);
void embed_job_submitted(embed_job *j, size_t i, ember_request_id id);
/* Cancels the submitted requests that have not finished (a later one was refused). */
void embed_job_cancel(embed_job *j);
/* Waits until every submitted request has finished. NULL when all gave their vector;
 * else the first failure (500, or 503 device_lost once the GPU is gone), valid until
 * embed_job_free. */
const api_error *embed_job_wait(embed_job *j);
/* After embed_job_wait: the vectors, input after input, and the prompt tokens of all. */
const float *embed_job_vectors(const embed_job *j);
uint64_t embed_job_prompt_tokens(const embed_job *j);
/* Only after embed_job_wait (or when nothing was submitted). */
void embed_job_free(embed_job *j);

#endif
