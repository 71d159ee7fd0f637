/* hparams.h — a model's hyper-parameters read from its <arch>.* keys (hparams.c):
 * the keys every family shares, then the family's own (arch.c), with the keys that change
 * the computation and that the family does not read refused by name. Used by model.c. */
#ifndef EMBER_HPARAMS_H
#define EMBER_HPARAMS_H

#include "arch.h"

/* Fills hp from g's keys for family a, checking the relations the forward passes rely
 * on (head counts divide, head_dim and rope_dim fit, ...). n_vocab is left to the loader,
 * which needs the embedding's shape. */
ember_status ember_hparams_read(const ember_gguf *g, const ember_arch *a, ember_hparams *hp, ember_err *err);

/* "<arch>.<name>" in a buffer that lives until the end of the enclosing expression. */
typedef struct ember_keyname { char s[96]; } ember_keyname;
ember_keyname ember_key(const char *arch, const char *name);

/* A string from the file made printable and at most 64 bytes, for a message. */
void ember_printable(ember_gguf_str s, char out[72]);

#endif
