/* sessions.c — saving and restoring the panels' conversations (sessions.h). */
#include "sessions.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void file_of(const app *a, int i, char *path, size_t cap)
{
    snprintf(path, cap, "%s/panel-%d.emberchat", a->opt.sessions, i + 1);
}

void sessions_restore(app *a)
{
    if (!a->opt.sessions) return;
    char path[4096];
    for (int i = 0; i < a->n_panels; i++) {
        file_of(a, i, path, sizeof path);
        /* a draft model's speculation cannot take a KV state: the conversation is computed */
        if (a->panels[i].chat) panel_restore(&a->panels[i], path, a->opt.draft == NULL);
    }
}

/* The folder, made if it is not there; 0 with a note in panel p when it cannot be. */
static int make_folder(app *a, panel *p)
{
    if (mkdir(a->opt.sessions, 0777) == 0 || errno == EEXIST) return 1;
    panel_note(p, "cannot make the folder %s: %s", a->opt.sessions, strerror(errno));
    return 0;
}

/* The engine a save may ask for the KV state; NULL when it cannot step any more. */
static ember_engine *engine_of(app *a) { return a->engine_failed ? NULL : a->engine; }

void sessions_save(app *a)
{
    if (!a->opt.sessions) {
        panel_note(&a->panels[a->focus], "start ember-chat with --sessions DIR to save the conversations");
        return;
    }
    if (a->state != LOAD_READY || !make_folder(a, &a->panels[a->focus])) return;
    char path[4096];
    for (int i = 0; i < a->n_panels; i++) {
        file_of(a, i, path, sizeof path);
        panel_save_start(&a->panels[i], engine_of(a), path);
    }
}

int sessions_ready_to_quit(app *a)
{
    if (!a->opt.sessions || a->state != LOAD_READY) return 1;
    char path[4096];
    int left = 0;
    for (int i = 0; i < a->n_panels; i++) {
        panel *p = &a->panels[i];
        if (p->busy && !a->engine_failed) {
            panel_cancel(p, a->engine); /* kept as far as it got, as Esc would */
            left++;
            continue;
        }
        if (p->saving) { /* a Ctrl+S save: the one for quitting comes after it */
            left++;
            continue;
        }
        if (!p->saved_at_quit && !p->busy) {
            p->saved_at_quit = 1;
            file_of(a, i, path, sizeof path);
            if (make_folder(a, p)) left += panel_save_start(p, engine_of(a), path) == 1;
        }
    }
    return left == 0;
}
