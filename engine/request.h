/* request.h — one request inside the engine (library-internal): its tokens, its place
 * in the KV cache and what the engine needs to serve it. The scheduler reads and writes
 * the sequence and KV fields; the sampler and the text are the engine's, reached through
 * pointers so that the scheduler needs none of their headers. */
#ifndef EMBER_REQUEST_H
#define EMBER_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

typedef enum request_state {
    REQ_WAITING,
    REQ_RUNNING,
} request_state;

typedef struct request {
    ember_request_id id;
    request_state state;
    bool cancelled;
    /* what was asked */
    uint32_t max_tokens;
    bool ignore_eos;
    bool greedy;                /* takes the step's arg-max: temperature 0 and no penalty */
    ember_token_cb on_token;
    ember_done_cb on_done;
    ember_logprobs_cb on_logprobs; /* NULL: no log-probabilities */
    uint32_t top_logprobs;
    ember_logprobs_cb on_prompt_logprobs; /* NULL: none for the prompt */
    uint32_t prompt_lp_next;    /* the next prompt position whose log-probability is due (a
                                   preempted request computes its prompt again) */
    bool prompt_only;
    ember_embedding_cb on_embedding; /* NULL: a reply, not an embedding */
    uint32_t pooling;           /* an embedding's ember_pooling: MEAN, CLS or LAST */
    float *embedding;           /* dim floats: the pooled hidden states so far */
    uint32_t embed_next;        /* the next prompt position whose hidden state is due */
    bool every_row;             /* every prompt row is computed, none is taken from the
                                   prefix cache (prompt log-probabilities, embeddings) */
    ember_state_cb on_state;    /* NULL: no state saved */
    bool state_saved;           /* on_state ran */
    uint8_t *restore_rows;      /* desc.state's rows, of the engine's KV type, for
                                   positions 0 .. restore_pos - 1 (kv_state.h's order) */
    uint32_t restore_pos, n_restore; /* the rows' positions; those used (< n_prompt) */
    size_t state_bytes;         /* desc.state_len, for the engine's counters */
    uint32_t restore_from, restore_to; /* set at admission: positions the engine writes
                                          from restore_rows before the step (to 0: none) */
    void *user;
    struct ember_sampler *sampler;  /* draws its tokens (sampler.h) */
    struct ember_text_out *out;     /* the text it produced (text_out.h) */
    struct ember_constraint *constraint; /* its grammar, or NULL (grammar/constraint.h) */
    /* the sequence: prompt, then generated tokens */
    uint32_t *tokens;
    uint32_t n_prompt, n_tokens, cap;
    uint32_t n_computed;        /* tokens whose K/V are in the cache */
    uint32_t n_prefill;         /* tokens it held when last admitted: its prefill (the
                                   prompt, or more when recomputed after a preemption) */
    /* its KV blocks */
    uint32_t *blocks;           /* block table, max_blocks_per_seq entries */
    uint64_t *hashes;           /* chained hash of each published full block */
    uint32_t n_blocks, n_published;
    uint32_t n_local_dropped;   /* blocks [0, n) of it whose local (sliding-window) part it
                                   no longer needs: behind the window (kv_cache.h) */
    uint32_t slot;              /* row in the step's block tables while running */
    uint64_t admitted;          /* admission counter (newest = largest) */
    uint64_t hash_seed;         /* first parent hash of its block chain (see engine.c) */
    uint64_t group;             /* ember_request_desc.prompt_group: 0, or the samples of one
                                   prompt that share its blocks (scheduler.c) */
    /* speculative decoding */
    uint32_t spec_k, spec_k_max, spec_ngram;
    bool spec_adaptive, spec_draft; /* spec_draft: proposals come from the draft model */
    uint32_t n_draft;           /* drafts placed after tokens[n_tokens] for this step */
    uint32_t draft_computed;    /* tokens whose K/V the draft model holds */
    struct ember_sampler *draft_sampler; /* draws the draft's tokens (sampling requests) */
    float *q;                   /* spec_k_max rows of draft probabilities */
    /* timing */
    double t_submit, t_first_sched, t_first_token, t_last_token;
    ember_request_metrics m;
    struct request *next;       /* in the waiting queue */
} request;

/* What a request is checked against when it is made. */
typedef struct ember_request_env {
    const ember_model *model;
    uint32_t kv_block_size, kv_blocks;  /* the largest pool the engine may have */
    uint32_t max_blocks_per_seq;
    bool has_draft;                     /* the engine has a draft model */
    ember_kv_type kv_type;              /* how its pool stores K and V */
} ember_request_env;

/* Makes a request from d (tokenized, checked, samplers made); *out is the caller's, freed
 * with ember_request_free. Thread-safe: reads the model only. */
ember_status ember_request_build(const ember_request_env *env, const ember_request_desc *d, request **out,
                                 ember_err *err);
void ember_request_free(request *r);

#endif
