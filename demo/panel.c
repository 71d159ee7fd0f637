/* panel.c — a conversation and the reply in flight (panel.h). */
#include "panel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- messages ----------------------------------------------------------------------- */

static message *add_message(panel *p, msg_role role)
{
    if (p->n_msgs == p->cap_msgs) {
        int cap = p->cap_msgs ? 2 * p->cap_msgs : 16;
        message *m = realloc(p->msgs, (size_t)cap * sizeof *m);
        if (!m) return NULL;
        p->msgs = m, p->cap_msgs = cap;
    }
    message *m = &p->msgs[p->n_msgs++];
    *m = (message){.role = role};
    return m;
}

/* Appends text, without control characters; a reply's leading blank is dropped. */
void message_append(message *m, const char *s, size_t n)
{
    if (m->len + n + 1 > m->cap) {
        size_t cap = m->cap ? m->cap : 64;
        while (cap < m->len + n + 1) cap *= 2;
        char *t = realloc(m->text, cap);
        if (!t) return;
        m->text = t, m->cap = cap;
    }
    size_t w = text_sanitize(m->text + m->len, s, n);
    if (m->role == MSG_ASSISTANT && m->len == 0) {
        size_t skip = 0;
        while (skip < w && (m->text[skip] == ' ' || m->text[skip] == '\n')) skip++;
        memmove(m->text, m->text + skip, w - skip);
        w -= skip;
    }
    m->len += w;
    m->text[m->len] = 0;
    m->version++;
}

static void add_text_message(panel *p, msg_role role, const char *text)
{
    message *m = add_message(p, role);
    if (m) message_append(m, text, strlen(text));
}

void message_free(message *m)
{
    for (int i = 0; i < m->cap_tex; i++) text_tex_free(&m->line_tex[i]);
    free(m->line_tex);
    free(m->lines);
    free(m->text);
    *m = (message){0};
}

void panel_note(panel *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ember-chat: panel %d (%s): %s\n", p->index + 1, p->who->name, buf);
    add_text_message(p, MSG_NOTE, buf);
}

/* ---- the conversation ------------------------------------------------------------------ */

static void free_turns(panel *p)
{
    for (int i = 0; i < p->n_turns; i++) {
        free(p->turns[i].user);
        free(p->turns[i].reply);
    }
    p->n_turns = 0;
}

/* Remembers a finished turn (it takes p->asked). */
static void keep_turn(panel *p)
{
    if (p->n_turns == p->cap_turns) {
        int cap = p->cap_turns ? 2 * p->cap_turns : 8;
        turn *t = realloc(p->turns, (size_t)cap * sizeof *t);
        if (!t) return;
        p->turns = t, p->cap_turns = cap;
    }
    uint32_t *ids = malloc((p->n_gen ? p->n_gen : 1) * sizeof *ids);
    if (!ids) return;
    if (p->n_gen) memcpy(ids, p->gen, p->n_gen * sizeof *ids);
    p->turns[p->n_turns++] = (turn){p->asked, ids, p->n_gen};
    p->asked = NULL;
}

/* A fresh chat with the system prompt and the kept turns, their replies as the exact ids
 * generated: the rebuilt prompt is token for token the old one, so the prefix cache still
 * serves it. */
static int rebuild_chat(panel *p)
{
    ember_chat_free(p->chat);
    p->chat = NULL;
    ember_status s = ember_chat_create(p->model, NULL, &p->chat);
    if (s == EMBER_OK && p->who->system) s = ember_chat_add(p->chat, "system", p->who->system);
    for (int i = 0; s == EMBER_OK && i < p->n_turns; i++) {
        const uint32_t *ids;
        size_t n;
        s = ember_chat_add(p->chat, "user", p->turns[i].user);
        if (s == EMBER_OK) s = ember_chat_prompt(p->chat, &ids, &n);
        if (s == EMBER_OK) s = ember_chat_add_reply(p->chat, p->turns[i].reply, p->turns[i].n_reply);
    }
    if (s != EMBER_OK) {
        panel_note(p, "the chat cannot be set up: %s", p->chat ? ember_chat_error(p->chat) : "out of memory");
        ember_chat_free(p->chat);
        p->chat = NULL;
        return -1;
    }
    return 0;
}

int panel_init(panel *p, int index, const character *who, event_queue *q)
{
    *p = (panel){.index = index, .who = who, .slot = {q, index}, .follow = 1, .reply_msg = -1};
    if (who->system) add_text_message(p, MSG_SYSTEM, who->system);
    return 0;
}

void panel_open_chat(panel *p, ember_model *model)
{
    p->model = model;
    rebuild_chat(p);
}

void panel_free(panel *p)
{
    for (int i = 0; i < p->n_msgs; i++) message_free(&p->msgs[i]);
    free(p->msgs);
    free_turns(p);
    free(p->turns);
    free(p->asked);
    free(p->gen);
    ember_chat_free(p->chat);
    text_tex_free(&p->title);
    text_tex_free(&p->status);
    text_tex_free(&p->stop);
    *p = (panel){0};
}

void panel_clear(panel *p)
{
    if (p->busy) {
        panel_note(p, "a reply is on its way; Esc stops it first");
        return;
    }
    for (int i = 0; i < p->n_msgs; i++) message_free(&p->msgs[i]);
    p->n_msgs = 0;
    free_turns(p);
    if (p->who->system) add_text_message(p, MSG_SYSTEM, p->who->system);
    if (p->model) rebuild_chat(p);
    p->scroll = 0, p->follow = 1;
}

/* ---- sending and receiving ---------------------------------------------------------------- */

/* Adds the user message to the chat and submits the whole conversation; the engine error
 * text when it fails. */
static ember_status submit(panel *p, ember_engine *e, const char *text, const reply_opts *ro, char *err, size_t cap)
{
    const uint32_t *ids;
    size_t n;
    ember_status s = ember_chat_add(p->chat, "user", text);
    if (s == EMBER_OK) s = ember_chat_prompt(p->chat, &ids, &n);
    if (s != EMBER_OK) {
        snprintf(err, cap, "%s", ember_chat_error(p->chat));
        return s;
    }
    ember_request_desc d = {
        .tokens = ids,
        .n_tokens = n,
        .max_tokens = ro->max_tokens,
        /* a seed per panel and turn: a rerun of the demo gives the same replies */
        .sampling = {.temperature = p->who->temperature, .top_p = 0.95f,
                     .seed = 1000u * (unsigned)p->index + (unsigned)p->n_turns + 1},
        .spec = ro->spec,
        .on_token = event_on_token,
        .on_done = event_on_done,
        .user = &p->slot,
    };
    s = ember_submit(e, &d, &p->request);
    if (s != EMBER_OK) ember_engine_copy_error(e, err, cap); /* the worker may be failing a step */
    return s;
}

int panel_send(panel *p, ember_engine *e, const char *text, const reply_opts *ro, gen_stats *g, double now_ms)
{
    if (p->busy) {
        panel_note(p, "still answering; wait for the reply or press Esc to stop it");
        return 0;
    }
    add_text_message(p, MSG_USER, text);
    p->follow = 1;
    if (!p->chat) {
        panel_note(p, "no chat in this panel (see the message above)");
        p->turns_ended++;
        return 0;
    }
    char err[512];
    ember_status s = submit(p, e, text, ro, err, sizeof err);
    if (s != EMBER_OK) {
        panel_note(p, "%s: %s%s", ember_status_name(s), err,
                   s == EMBER_ERR_CONTEXT_FULL && p->n_turns ? " (Ctrl+L clears this conversation)" : "");
        rebuild_chat(p); /* take the message back: the next turn starts from the last reply */
        p->turns_ended++;
        return 0;
    }
    free(p->asked);
    p->asked = strdup(text);
    p->busy = 1;
    p->n_gen = 0;
    p->reply_msg = add_message(p, MSG_ASSISTANT) ? p->n_msgs - 1 : -1;
    if (g->first_submit_ms == 0) g->first_submit_ms = now_ms;
    return 1;
}

void panel_cancel(panel *p, ember_engine *e)
{
    /* EMBER_ERR_NOT_FOUND: it ended meanwhile; its done event is already queued. */
    if (p->busy) ember_cancel(e, p->request);
}

static void on_token(panel *p, const chat_event *ev, const char *text, gen_stats *g)
{
    if (p->n_gen == p->cap_gen) {
        size_t cap = p->cap_gen ? 2 * p->cap_gen : 128;
        uint32_t *t = realloc(p->gen, cap * sizeof *t);
        if (!t) return;
        p->gen = t, p->cap_gen = cap;
    }
    p->gen[p->n_gen++] = ev->token;
    if (p->reply_msg >= 0) message_append(&p->msgs[p->reply_msg], text, ev->text_len);
    rate_meter_add(&p->meter, 1);
    g->tokens++;
}

static void on_done(panel *p, const chat_event *ev, ember_engine *e, gen_stats *g, double now_ms)
{
    const ember_request_metrics *m = &ev->m;
    p->busy = 0;
    p->turns_ended++;
    g->last_done_ms = now_ms;
    if (ev->why == EMBER_FINISH_ERROR) {
        char why[512];
        panel_note(p, "the reply failed: %s", ember_engine_copy_error(e, why, sizeof why));
        rebuild_chat(p);
        return;
    }
    g->replies++;
    g->drafted += m->n_drafted;
    g->accepted += m->n_accepted;
    if (m->n_gen > 0) g->last_ttft_ms = p->last_ttft_ms = m->ttft_ms;
    p->last_tok_s = m->e2e_ms > m->ttft_ms && m->n_gen > 1 ? (m->n_gen - 1) * 1000.0 / (m->e2e_ms - m->ttft_ms) : 0;
    /* A stopped reply stays in the conversation as far as it got. */
    if (ember_chat_add_reply(p->chat, p->gen, p->n_gen) != EMBER_OK) {
        panel_note(p, "%s", ember_chat_error(p->chat));
        rebuild_chat(p);
        return;
    }
    keep_turn(p);
    if (ev->why == EMBER_FINISH_CANCELLED) panel_note(p, "stopped after %u tokens", m->n_gen);
}

int panel_apply(panel *p, const chat_event *ev, const char *text, ember_engine *e, gen_stats *g, double now_ms)
{
    if (ev->kind == EV_TOKEN) {
        on_token(p, ev, text, g);
        return 0;
    }
    on_done(p, ev, e, g, now_ms);
    return 1;
}
