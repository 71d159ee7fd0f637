/* constraint.h — a request whose output follows a grammar, as the engine sees it.
 *
 * A request's grammar is parsed on the submitting thread (ember_constraint_create: a bad
 * grammar is refused at submit). On the stepping thread the engine's grammar set
 * (ember_grammars) shares one compiled grammar, its mask cache and the vocabulary trie
 * among every request with the same grammar text; each request keeps only its matcher.
 * Per token: ember_constraint_mask (while the device computes the logits), then
 * ember_constraint_apply on the row and, once a token is drawn, ember_constraint_accept.
 * Library-internal; docs/grammar.md. */
#ifndef EMBER_CONSTRAINT_H
#define EMBER_CONSTRAINT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "engine/tokenizer/token.h"

typedef struct ember_constraint ember_constraint;
typedef struct ember_grammars ember_grammars;

/* The engine's grammar set for tokenizer t (borrowed: it must outlive the set). The
 * vocabulary trie is built when the first constrained request needs a mask. */
ember_status ember_grammars_create(const ember_tokenizer *t, ember_grammars **out, ember_err *err);
/* Frees the set; every constraint bound to it must be freed first. */
void ember_grammars_free(ember_grammars *gs);

/* Parses GBNF text (start rule root, NULL: "root"): refused with the line, column and
 * reason in err. positions: the masks it holds at once, 1 + the most drafts a step may
 * check (1 without speculation). Thread-safe (touches no engine). *out is the caller's. */
ember_status ember_constraint_create(const char *gbnf, const char *root, uint32_t positions,
                                     ember_constraint **out, ember_err *err);
/* Frees c; a bound constraint on the thread that steps its grammar set. */
void ember_constraint_free(ember_constraint *c);

/* Makes the grammar lazy: the text is free until one of the NULL-terminated triggers
 * (copied) appears in it, control tokens' pieces included; from the trigger's first byte
 * on it must follow the grammar, whose sentences begin with a trigger. */
ember_status ember_constraint_set_triggers(ember_constraint *c, const char *const *triggers, ember_err *err);
/* Whether a lazy grammar still waits for its trigger (nothing is masked meanwhile). */
bool ember_constraint_waiting(const ember_constraint *c);

/* Makes mask 0, that of the next token: what c's grammar allows after the tokens accepted
 * so far (end-of-generation tokens where the text is complete). Binds c to gs on its
 * first call. On failure (out of memory, or no token of the vocabulary can continue the
 * text) ember_constraint_failure says why until the next call. */
void ember_constraint_mask(ember_constraint *c, ember_grammars *gs);
/* Why the last mask could not be made; NULL when it was. Valid until c changes. */
const char *ember_constraint_failure(const ember_constraint *c);

/* Drafts (speculative decoding): try_begin makes mask 0 and remembers the state; each
 * try_take of a draft advances the state and makes the mask after it, mask 1, 2, ...:
 * -1 when the grammar refuses the draft here (or it ends generation, or there is no room
 * for another mask: nothing changes, the drafts stop before it), 0 when it takes the
 * draft but allows nothing more after it, or a mask could not be made (the drafts stop
 * after it), 1 when more may follow. try_end goes back to the state before the drafts;
 * the masks stay for the verifier. */
void ember_constraint_try_begin(ember_constraint *c, ember_grammars *gs);
int ember_constraint_try_take(ember_constraint *c, ember_grammars *gs, const ember_tokenizer *t, uint32_t token);
void ember_constraint_try_end(ember_constraint *c);

/* Sets every logit mask pos refuses to -infinity (logits: n_vocab floats), and those of
 * the end-of-generation tokens too unless eog (a request that ignores them: they are no
 * part of its text). A mask that was not made refuses every token. */
void ember_constraint_apply(const ember_constraint *c, uint32_t pos, float *logits, bool eog);
/* Whether mask pos allows token. */
bool ember_constraint_allows(const ember_constraint *c, uint32_t pos, uint32_t token);

typedef enum ember_constraint_after {
    EMBER_CONSTRAINT_GOES_ON,  /* more text may follow */
    EMBER_CONSTRAINT_ENDED,    /* the grammar is complete and allows nothing more */
    EMBER_CONSTRAINT_REFUSED,  /* the token is not allowed here (c unchanged) */
} ember_constraint_after;

/* Advances c past token (its bytes in t; an end-of-generation token ends the text where
 * it is complete). */
ember_constraint_after ember_constraint_accept(ember_constraint *c, const ember_tokenizer *t, uint32_t token);

#endif
