/* chat_state.h — what an ember_chat holds: shared by chat.c (its calls) and chat_save.c
 * (the same as bytes). Library-internal. */
#ifndef EMBER_CHAT_STATE_H
#define EMBER_CHAT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat_template.h"
#include "common/error.h"
#include "ember.h"

struct ember_chat {
    ember_err err;
    ember_model *model;
    ember_chat_template tmpl;
    bool tmpl_ok;
    ember_chat_message *msgs;  /* role: a static string; content: owned */
    size_t n_msgs, cap_msgs;
    uint32_t *ids;             /* the conversation; past base_ids, the pending prompt */
    size_t n_ids, cap_ids;
    size_t base_msgs, base_ids; /* fixed part: the messages through the last reply, their ids
                                  (none after a drop: the next prompt renders all afresh) */
    size_t replied_msgs;       /* the messages through the last reply, drop or not */
    uint32_t base_last;        /* ids[base_ids - 1] as the reply left it: extend may write over it */
    bool reply_eog;            /* the last reply ended with an end-of-generation token */
    bool prompted;             /* ids end with a prompt for the messages after base_msgs */
    ember_chat_fit fit;
    ember_chat_message *dropped; /* what the last prompt dropped (content owned) */
    size_t n_dropped;
    uint32_t dropped_turns;
    uint64_t dropped_total;
    void *kv_state;            /* a loaded chat's KV state (chat_save.c), or NULL */
    size_t kv_len;
};

#endif
