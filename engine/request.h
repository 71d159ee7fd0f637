/* request.h — one request inside the engine (library-internal): its tokens, its place
 * in the KV cache, its sampler and the text it has produced. Shared by engine.c,
 * scheduler.c and text_out.c. */
#ifndef EMBER_REQUEST_H
#define EMBER_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "ember.h"
#include "engine/cpu/reference.h"
#include "sampler.h"
#include "engine/tokenizer/detok.h"
#include "engine/tokenizer/tokenizer.h"

typedef enum request_state {
    REQ_WAITING,
    REQ_RUNNING,
    REQ_RETIRED, /* a padding row let go of, waiting to be freed (ember_sched_reap) */
} request_state;

typedef struct text_out {
    char *text;                 /* generated text so far (valid UTF-8) */
    size_t len, cap;
    size_t sent;                /* bytes already handed to the token callback */
    char *stop[EMBER_MAX_STOP]; /* owned copies */
    uint32_t n_stop;
    bool final;                 /* finished: nothing is held back any more */
    ember_detok detok;
} text_out;

typedef struct request {
    ember_request_id id;
    request_state state;
    bool cancelled;
    /* what was asked */
    uint32_t max_tokens;
    bool ignore_eos, greedy;
    ember_token_cb on_token;
    ember_done_cb on_done;
    void *user;
    ember_sampler *sampler;
    text_out out;
    /* the sequence: prompt, then generated tokens */
    uint32_t *tokens;
    uint32_t n_prompt, n_tokens, cap;
    uint32_t n_computed;        /* tokens whose K/V are in the cache */
    /* its KV blocks */
    uint32_t *blocks;           /* block table, max_blocks_per_seq entries */
    uint64_t *hashes;           /* chained hash of each published full block */
    uint32_t n_blocks, n_published;
    uint32_t slot;              /* row in the forward pass's block tables while running */
    uint64_t admitted;          /* admission counter (newest = largest) */
    ember_ref *ref;             /* CPU backend: the reference pass with its own cache */
    uint64_t hash_seed;         /* first parent hash of its block chain (see engine.c) */
    /* static batching: finished (delivered) but still computing as its batch's padding */
    bool padding;
    uint32_t pad_token;         /* its next input: the last token it produced */
    /* static batching with padded prompts: the tokens it had to compute when admitted
     * (its prompt, or more after a preemption) and the padding rows computed after them */
    uint32_t n_prefill, n_pad_rows;
    /* speculative decoding */
    uint32_t spec_k, spec_k_max, spec_ngram;
    bool spec_adaptive, spec_draft; /* spec_draft: proposals come from the draft model */
    uint32_t n_draft;           /* drafts placed after tokens[n_tokens] for this step */
    uint32_t draft_computed;    /* tokens whose K/V the draft model holds */
    ember_sampler *draft_sampler; /* draws the draft's tokens (sampling requests) */
    float *q;                   /* spec_k_max rows of draft probabilities */
    ember_ref *draft_ref;       /* CPU backend: the draft's reference pass */
    /* timing */
    double t_submit, t_first_sched, t_first_token, t_last_token;
    ember_request_metrics m;
    struct request *next;       /* in the waiting queue */
} request;

#endif
