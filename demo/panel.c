/* panel.c — a conversation and the reply in flight (panel.h). */
#include "panel.h"
#include "reply_format.h"

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

static void add_note(panel *p, msg_role role, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    const char *open = role == MSG_INFO ? "[" : "", *close = role == MSG_INFO ? "]" : "";
    fprintf(stderr, "ember-chat: panel %d (%s): %s%s%s\n", p->index + 1, p->who->name, open, buf, close);
    message *m = add_message(p, role);
    if (!m) return;
    message_append(m, open, strlen(open));
    message_append(m, buf, strlen(buf));
    message_append(m, close, strlen(close));
}

void panel_note(panel *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_note(p, MSG_NOTE, fmt, ap);
    va_end(ap);
}

void panel_info(panel *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_note(p, MSG_INFO, fmt, ap);
    va_end(ap);
}

/* ---- the conversation ------------------------------------------------------------------ */

/* A new conversation: a chat with the system prompt, fitted to the model's context with
 * room for a reply of max_tokens, so that it drops its oldest turns instead of filling
 * up. On failure a note, and no chat. */
static void new_chat(panel *p)
{
    ember_chat_free(p->chat);
    p->chat = NULL;
    ember_chat_fit fit = {.overflow = EMBER_CHAT_DROP_OLDEST, .max_tokens = p->ro->max_tokens};
    ember_status s = ember_chat_create(p->model, NULL, &p->chat);
    if (s == EMBER_OK) s = ember_chat_set_fit(p->chat, &fit);
    if (s == EMBER_OK && p->who->system) s = ember_chat_add(p->chat, "system", p->who->system);
    if (s != EMBER_OK) {
        panel_note(p, "the chat cannot be set up: %s", p->chat ? ember_chat_error(p->chat) : "out of memory");
        ember_chat_free(p->chat);
        p->chat = NULL;
    }
}

int panel_init(panel *p, int index, const character *who, const reply_opts *ro, event_queue *q)
{
    *p = (panel){.index = index, .who = who, .ro = ro, .slot = {q, index}, .follow = 1, .reply_msg = -1};
    if (who->system) add_text_message(p, MSG_SYSTEM, who->system);
    return 0;
}

void panel_open_chat(panel *p, ember_model *model)
{
    p->model = model;
    new_chat(p);
}

void panel_free(panel *p)
{
    free(p->save_path);
    free(p->save_state);
    for (int i = 0; i < p->n_msgs; i++) message_free(&p->msgs[i]);
    free(p->msgs);
    free(p->gen);
    ember_chat_free(p->chat);
    text_tex_free(&p->title);
    text_tex_free(&p->status);
    text_tex_free(&p->stop);
    *p = (panel){0};
}

static void clear_messages(panel *p)
{
    for (int i = 0; i < p->n_msgs; i++) message_free(&p->msgs[i]);
    p->n_msgs = 0;
    p->scroll = 0, p->follow = 1;
}

void panel_clear(panel *p)
{
    if (p->busy || p->saving) {
        panel_note(p, p->busy ? "a reply is on its way; Esc stops it first" : "wait for the save to end");
        return;
    }
    clear_messages(p);
    if (p->who->system) add_text_message(p, MSG_SYSTEM, p->who->system);
    if (p->model) new_chat(p); /* its count of dropped turns starts again from 0 */
    p->restore = 0;
}

/* A structured character's reply is shown as its tags and its line (show_structured). */
static void show_reply(panel *p, const char *text)
{
    char *shown = p->who->schema ? reply_format(text, strlen(text)) : NULL;
    add_text_message(p, MSG_ASSISTANT, shown ? shown : text);
    free(shown);
}

void panel_show_chat(panel *p)
{
    ember_chat_info info;
    ember_chat_get_info(p->chat, &info);
    clear_messages(p);
    for (size_t i = 0; i < info.n_messages; i++) {
        const ember_chat_message *m = &info.messages[i];
        if (strcmp(m->role, "assistant") == 0) show_reply(p, m->content);
        else add_text_message(p, strcmp(m->role, "system") == 0 ? MSG_SYSTEM : MSG_USER, m->content);
    }
}

/* ---- sending and receiving ---------------------------------------------------------------- */

/* Says in the panel that the prompt just made dropped old turns, if it did: they stay on
 * screen, but the model no longer sees them. */
static void note_dropped(panel *p)
{
    ember_chat_info info;
    ember_chat_get_info(p->chat, &info);
    if (info.dropped_turns == 1)
        panel_info(p, "dropped the oldest turn to fit the context of %u tokens", info.n_ctx);
    else if (info.dropped_turns > 1)
        panel_info(p, "dropped the %u oldest turns to fit the context of %u tokens", info.dropped_turns, info.n_ctx);
}

/* Adds the user message to the chat and submits the whole conversation; the error text
 * when it fails. A message whose prompt or submit failed is taken back: the conversation
 * goes on without it (turns its prompt dropped stay dropped, as the panel said). */
static ember_status submit(panel *p, ember_engine *e, const char *text, char *err, size_t cap)
{
    const reply_opts *ro = p->ro;
    const uint32_t *ids;
    size_t n;
    ember_status s = ember_chat_add(p->chat, "user", text);
    int added = s == EMBER_OK; /* else there is nothing to take back */
    if (added) s = ember_chat_prompt(p->chat, &ids, &n);
    if (s != EMBER_OK) {
        snprintf(err, cap, "%s", ember_chat_error(p->chat));
        if (added) ember_chat_take_back(p->chat);
        return s;
    }
    note_dropped(p);
    ember_request_desc d = {
        .tokens = ids,
        .n_tokens = n,
        .max_tokens = ro->max_tokens,
        /* a seed per panel and turn: a rerun of the demo gives the same replies */
        .sampling = {.temperature = p->who->temperature, .top_p = 0.95f,
                     .seed = 1000u * (unsigned)p->index + (unsigned)p->n_asked + 1},
        .spec = ro->spec,
        .json_schema = p->who->schema, /* a structured character: its replies follow it */
        .on_token = event_on_token,
        .on_done = event_on_done,
        .user = &p->slot,
    };
    if (p->restore) ember_chat_kv_state(p->chat, &d.state, &d.state_len); /* a loaded chat's first turn */
    s = ember_submit(e, &d, &p->request);
    if (s == EMBER_OK) p->restore = 0;
    if (s != EMBER_OK) {
        ember_engine_copy_error(e, err, cap); /* the worker may be failing a step */
        ember_chat_take_back(p->chat);
    }
    return s;
}

int panel_send(panel *p, ember_engine *e, const char *text, gen_stats *g, double now_ms)
{
    if (p->busy || p->saving) {
        panel_note(p, p->busy ? "still answering; wait for the reply or press Esc to stop it"
                              : "saving the conversation; send again when it is saved");
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
    ember_status s = submit(p, e, text, err, sizeof err);
    if (s != EMBER_OK) {
        /* Old turns are dropped as needed, so this is a message that does not fit even
         * alone, or an engine that cannot take it. */
        panel_note(p, "%s: %s", ember_status_name(s), err);
        p->turns_ended++;
        return 0;
    }
    p->n_asked++;
    p->busy = 1;
    p->n_gen = 0;
    p->reply_msg = add_message(p, MSG_ASSISTANT) ? p->n_msgs - 1 : -1;
    gen_stats_begin(g, now_ms);
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
    /* --progress: what a script driving the window waits for (tests/test_demo_input.py) */
    if (p->ro->progress && p->n_gen % p->ro->progress == 0)
        fprintf(stderr, "ember-chat: panel %d reply %d: %zu tokens streamed\n", p->index + 1, p->n_asked, p->n_gen);
}

/* One stderr line per reply: how it ended, how much of its prompt the prefix cache
 * served, and where the conversation stands (the turns its chat holds, and the turns it
 * dropped since it began), so that a script can follow a long conversation. */
static void log_done(const panel *p, const chat_event *ev)
{
    ember_chat_info info;
    ember_chat_get_info(p->chat, &info);
    /* after the system prompt, every turn is a user message and its reply: a message
     * whose request failed has been taken back */
    size_t system = p->who->system && info.n_messages ? 1 : 0, kept = (info.n_messages - system) / 2;
    fprintf(stderr, "ember-chat: panel %d reply %d: %s, %u prompt tokens, %u from cache, %u restored, %u generated; "
                    "turns: %zu kept, %llu dropped in all\n",
            p->index + 1, p->n_asked, ember_finish_name(ev->why), ev->m.n_prompt, ev->m.n_cached, ev->m.n_restored,
            ev->m.n_gen, kept, (unsigned long long)info.dropped_turns_total);
}

/* A structured reply shown as its tags and its line instead of its JSON (the JSON stays
 * in the conversation the model sees); stderr says what it was, for scripts. */
static void show_structured(panel *p, message *m)
{
    char *shown = m->text ? reply_format(m->text, m->len) : NULL;
    fprintf(stderr, "ember-chat: panel %d reply %d: structured: %s\n", p->index + 1, p->n_asked,
            shown ? shown : "(not a JSON object)");
    if (!shown) return;
    m->len = 0;
    message_append(m, shown, strlen(shown));
    free(shown);
}

/* A reply that ended without an error joins the conversation (a stopped one as far as
 * it got). */
static void keep_reply(panel *p, const chat_event *ev, gen_stats *g)
{
    const ember_request_metrics *m = &ev->m;
    g->replies++;
    g->drafted += m->n_drafted;
    g->accepted += m->n_accepted;
    if (m->n_gen > 0) g->last_ttft_ms = p->last_ttft_ms = m->ttft_ms;
    p->last_tok_s = m->e2e_ms > m->ttft_ms && m->n_gen > 1 ? (m->n_gen - 1) * 1000.0 / (m->e2e_ms - m->ttft_ms) : 0;
    if (ember_chat_add_reply(p->chat, p->gen, p->n_gen) != EMBER_OK) {
        panel_note(p, "%s", ember_chat_error(p->chat));
        ember_chat_take_back(p->chat); /* the turn goes; the conversation goes on without it */
        return;
    }
    if (ev->why == EMBER_FINISH_CANCELLED) panel_note(p, "stopped after %u tokens", m->n_gen);
    if (p->who->schema && p->reply_msg >= 0) show_structured(p, &p->msgs[p->reply_msg]);
    /* finish_reason "length" in llama.cpp's and vLLM's terms: the reply did not end, -n ended it */
    if (ev->why == EMBER_FINISH_LENGTH) panel_info(p, "cut: max tokens (-n %u)", p->ro->max_tokens);
    if (ev->why == EMBER_FINISH_CONTEXT) {
        ember_chat_info info;
        ember_chat_get_info(p->chat, &info);
        panel_info(p, "the reply reached the end of the context (%u tokens): the next message drops the oldest turns",
                   info.n_ctx);
    }
}

static void on_done(panel *p, const chat_event *ev, ember_engine *e, gen_stats *g, double now_ms)
{
    p->busy = 0;
    p->turns_ended++;
    gen_stats_end(g, now_ms);
    if (ev->why == EMBER_FINISH_ERROR) {
        char why[512];
        panel_note(p, "the reply failed: %s", ember_engine_copy_error(e, why, sizeof why));
        ember_chat_take_back(p->chat); /* its message goes; the conversation goes on */
    } else {
        keep_reply(p, ev, g);
    }
    log_done(p, ev);
}

int panel_apply(panel *p, const chat_event *ev, const char *text, ember_engine *e, gen_stats *g, double now_ms)
{
    if (p->saving) { /* no reply is in flight meanwhile: the events are the save's */
        panel_save_event(p, ev, text, e);
        return 0;
    }
    if (ev->kind == EV_TOKEN) {
        on_token(p, ev, text, g);
        return 0;
    }
    on_done(p, ev, e, g, now_ms);
    return 1;
}
