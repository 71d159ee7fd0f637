/* panel.h — one conversation: its character, its ember_chat (the conversation as token
 * ids, so that each turn's prompt extends the last and the engine's prefix cache serves
 * the earlier turns), the messages shown, and the reply in flight. Only the UI thread
 * touches a panel; the engine's callbacks reach it through the event queue. */
#ifndef PANEL_H
#define PANEL_H

#include "chat_text.h"
#include "ember.h"
#include "events.h"
#include "font.h"
#include "options.h"
#include "stats.h"

typedef enum msg_role {
    MSG_SYSTEM,     /* the character's system prompt, shown at the top */
    MSG_USER,
    MSG_ASSISTANT,
    MSG_NOTE,       /* what went wrong, or that a reply was stopped */
    MSG_INFO,       /* a remark, not an error: old turns dropped, the context's end */
} msg_role;

typedef struct message {
    msg_role role;
    char *text;
    size_t len, cap;
    unsigned version;          /* bumped when the text changes */
    /* The view's copy (chat_ui.c): wrapped lines with a texture each, redone when the
     * version or the width changed. */
    unsigned wrapped_version;
    int wrapped_width;
    wrap_line *lines;
    int n_lines, cap_lines;
    text_tex *line_tex;
    int cap_tex;
    int width, height;         /* of the bubble, in px */
    int y;                     /* its top in the panel's content, for clicks */
    double flash_until_ms;     /* copied to the clipboard: highlighted until then */
} message;

/* Appends text to a message, without control characters (a reply's leading blanks are
 * dropped). */
void message_append(message *m, const char *s, size_t n);
/* Frees a message's text, lines and textures. */
void message_free(message *m);

/* What every reply is asked for (from the options); the app's, outlives the panels. */
typedef struct reply_opts {
    uint32_t max_tokens;
    ember_speculation spec;
    uint32_t progress;         /* --progress N: a stderr line every N tokens streamed; 0 = none */
} reply_opts;

typedef struct panel {
    int index;
    const character *who;
    const reply_opts *ro;
    request_slot slot;         /* the callbacks' user pointer: must not move */
    ember_model *model;
    ember_chat *chat;          /* NULL when it could not be set up (a note says why) */
    message *msgs;
    int n_msgs, cap_msgs;
    /* the reply in flight */
    int busy;
    ember_request_id request;
    uint32_t *gen;             /* the ids generated so far */
    size_t n_gen, cap_gen;
    int reply_msg;             /* its message */
    int turns_ended;           /* turns that ended since start (replies, failures) */
    int n_asked;               /* replies submitted since start: "reply N" on stderr */
    rate_meter meter;
    double last_tok_s, last_ttft_ms;
    /* --sessions (panel_file.c) */
    int restore;               /* a loaded chat: its KV state goes with the next prompt */
    int saving;                /* a save's request is in flight: EV_STATE, then EV_DONE */
    char *save_path;           /* where that save goes */
    void *save_state;          /* the state it received (EV_STATE) */
    size_t save_len;
    int saved_at_quit;         /* the save made while quitting has ended */
    /* the view (chat_ui.c) */
    int scroll, follow, content_h;
    text_tex title, status, stop;
    int title_x1, status_x0, status_x1; /* where the last frame drew them (for --verbose) */
} panel;

/* 0 on success, -1 when memory ran out. */
int panel_init(panel *p, int index, const character *who, const reply_opts *ro, event_queue *q);
/* Creates the panel's chat once the model is there, fitted to the model's context with
 * room for a reply of max_tokens (older turns are dropped as needed); a failure becomes a
 * note. */
void panel_open_chat(panel *p, ember_model *model);
void panel_free(panel *p);
/* Adds a note line, in red: something went wrong or was stopped (also printed on stderr,
 * for headless runs: "ember-chat: panel N (NAME): TEXT"). */
void panel_note(panel *p, const char *fmt, ...);
/* Adds a remark that is no error, in grey and in brackets (on stderr too, as
 * "ember-chat: panel N (NAME): [TEXT]"). */
void panel_info(panel *p, const char *fmt, ...);
/* Sends a user message: adds it to the chat and submits the conversation; when the
 * conversation outgrew the context the chat dropped its oldest turns, and the panel says
 * so. A failure (the message alone does not fit the context, ...) becomes a note and the
 * message is taken back (ember_chat_take_back). 1 when a reply is on its way. */
int panel_send(panel *p, ember_engine *e, const char *text, gen_stats *g, double now_ms);
/* Stops the reply in flight (it ends with EMBER_FINISH_CANCELLED, through the queue). */
void panel_cancel(panel *p, ember_engine *e);
/* Forgets the conversation (Ctrl+L): a new chat; not while a reply is in flight. */
void panel_clear(panel *p);
/* Shows the chat's own messages instead of the panel's (a loaded conversation; notes
 * and remarks are not part of a chat). */
void panel_show_chat(panel *p);

/* ---- saving and restoring (panel_file.c, --sessions) ---- */

/* Loads the conversation saved at path into the panel, if the file exists (0: it does
 * not); the messages are shown, and the KV state goes with the next prompt (unless
 * use_state is 0: a draft model's speculation cannot take one). A file that cannot be
 * loaded is a note, and the panel starts afresh (-1). */
int panel_restore(panel *p, const char *path, int use_state);
/* Starts saving the conversation to path: a prompt-only request for its KV state (one
 * token computed: the prefix cache holds the rest), written when its events come back;
 * without an engine (e NULL) or for an empty conversation, the messages are written at
 * once. 0 when nothing is left in flight, 1 when the save's request is, -1 when it
 * cannot start (a reply or another save is on its way: a note says so). */
int panel_save_start(panel *p, ember_engine *e, const char *path);

/* A save's event (panel_apply hands them over while p->saving): the state is kept, and
 * the done event writes the file. */
void panel_save_event(panel *p, const chat_event *ev, const char *bytes, ember_engine *e);

/* Applies one event from the queue; 1 when it ended the turn. */
int panel_apply(panel *p, const chat_event *ev, const char *text, ember_engine *e, gen_stats *g, double now_ms);

#endif
