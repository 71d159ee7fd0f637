/* recipe.h — what the hyper-parameters make of one layer and of attention (recipe.c):
 * local or global, RoPE or none, base, scale and YaRN ramp, the query scale and
 * temperature, the same numbers for both forward passes. */
#ifndef EMBER_RECIPE_H
#define EMBER_RECIPE_H

#include "hyperparams.h"

void ember_layer_attn_of(const ember_hparams *hp, uint32_t layer, ember_layer_attn *out);
/* The multiplier of q.k (hp->attn_scale, or 1/sqrt(head_dim)). */
float ember_attn_scale(const ember_hparams *hp);
/* mistral3's attention temperature: the factor queries at position pos are multiplied by
 * (1 without it). */
float ember_attn_temp(const ember_hparams *hp, uint32_t pos);

/* The factor positions are multiplied by before RoPE: 1 / rope_scale, or 1 when
 * rope_scale is 0 or 1. */
float ember_rope_pos_scale(const ember_hparams *hp);

#endif
