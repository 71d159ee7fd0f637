/* fingerprint.h — a number that tells two model files apart, for KV states (a state is
 * only meaningful for the weights that computed it). Library-internal. */
#ifndef EMBER_FINGERPRINT_H
#define EMBER_FINGERPRINT_H

#include <stdint.h>

#include "gguf.h"

/* The hash of the file's header (every metadata key and value and the tensor table:
 * names, types, shapes, offsets) and of samples of every tensor's bytes (its first,
 * middle and last 64). Not the hash of every weight: that would read the whole file
 * (gigabytes) at every save and restore. The samples tell a fine-tune with the same
 * shapes and metadata from its base (its weights differ everywhere); a file that
 * differs only between the samples is not told apart. */
uint64_t ember_gguf_fingerprint(const ember_gguf *g);

#endif
