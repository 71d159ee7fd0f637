/* controls.c — input events to actions (controls.h). */
#include "controls.h"
#include "sessions.h"

#include <stdlib.h>
#include <string.h>

#define COPY_FLASH_MS 700.0
#define WHEEL_PX 48

void app_send(app *a, int i, const char *text)
{
    panel *p = &a->panels[i];
    if (a->state == LOAD_RUNNING) {
        panel_note(p, "the model is still loading");
        return;
    }
    if (a->engine_failed || !a->engine) {
        panel_note(p, "no engine to answer: %s", a->engine_error[0] ? a->engine_error : "the model did not load");
        p->turns_ended++;
        return;
    }
    panel_send(p, a->engine, text, &a->gen, a->now_ms);
}

static void send_input(app *a)
{
    char *text = input_take(&a->input);
    if (!text) return;
    app_send(a, a->focus, text);
    free(text);
}

static int panel_at(const layout *l, int x, int y)
{
    SDL_Point pt = {x, y};
    for (int i = 0; i < l->n; i++)
        if (SDL_PointInRect(&pt, &l->panel[i])) return i;
    return -1;
}

/* Keys with Ctrl held: clear, save, paste, quit. */
static void ctrl_key(app *a, SDL_Keycode k)
{
    if (k == SDLK_l) panel_clear(&a->panels[a->focus]);
    else if (k == SDLK_s) sessions_save(a);
    else if (k == SDLK_q) a->quit = 1;
    else if (k == SDLK_v && SDL_HasClipboardText()) {
        char *t = SDL_GetClipboardText();
        if (t) input_insert(&a->input, t);
        SDL_free(t);
    }
}

static void key_down(app *a, const layout *l, const SDL_KeyboardEvent *k)
{
    SDL_Keycode c = k->keysym.sym;
    if (k->keysym.mod & KMOD_CTRL) {
        ctrl_key(a, c);
        return;
    }
    int page = l->messages[a->focus].h * 4 / 5;
    switch (c) {
    case SDLK_RETURN:
    case SDLK_KP_ENTER: send_input(a); break;
    case SDLK_TAB: a->focus = (a->focus + (k->keysym.mod & KMOD_SHIFT ? a->n_panels - 1 : 1)) % a->n_panels; break;
    case SDLK_ESCAPE: panel_cancel(&a->panels[a->focus], a->engine); break;
    case SDLK_LEFT: input_apply(&a->input, EDIT_LEFT); break;
    case SDLK_RIGHT: input_apply(&a->input, EDIT_RIGHT); break;
    case SDLK_HOME: input_apply(&a->input, EDIT_HOME); break;
    case SDLK_END: input_apply(&a->input, EDIT_END); break;
    case SDLK_BACKSPACE: input_apply(&a->input, EDIT_BACKSPACE); break;
    case SDLK_DELETE: input_apply(&a->input, EDIT_DELETE); break;
    case SDLK_UP: input_apply(&a->input, EDIT_HISTORY_UP); break;
    case SDLK_DOWN: input_apply(&a->input, EDIT_HISTORY_DOWN); break;
    case SDLK_PAGEUP: ui_scroll(a, l, a->focus, -page); break;
    case SDLK_PAGEDOWN: ui_scroll(a, l, a->focus, page); break;
    case SDLK_F12: a->shot_requested = 1; break;
    default: break;
    }
}

/* A click focuses the panel; on the Stop button it stops the reply, on a message it
 * copies the message's text. */
static void click(app *a, const layout *l, int x, int y)
{
    int i = panel_at(l, x, y);
    if (i < 0) return;
    a->focus = i;
    panel *p = &a->panels[i];
    SDL_Point pt = {x, y};
    if (p->busy && SDL_PointInRect(&pt, &l->stop[i])) {
        panel_cancel(p, a->engine);
        return;
    }
    if (!SDL_PointInRect(&pt, &l->messages[i])) return;
    int k = ui_message_at(a, l, i, y);
    if (k < 0 || !p->msgs[k].text) return;
    if (SDL_SetClipboardText(p->msgs[k].text) == 0) p->msgs[k].flash_until_ms = a->now_ms + COPY_FLASH_MS;
}

static void wheel(app *a, const layout *l, const SDL_MouseWheelEvent *w)
{
    int x, y;
    SDL_GetMouseState(&x, &y);
    int i = panel_at(l, x, y);
    int dy = w->direction == SDL_MOUSEWHEEL_FLIPPED ? -w->y : w->y;
    if (i >= 0) ui_scroll(a, l, i, -dy * WHEEL_PX);
}

void controls_handle(app *a, const layout *l, const SDL_Event *ev)
{
    switch (ev->type) {
    case SDL_QUIT: a->quit = 1; break;
    case SDL_TEXTINPUT: input_insert(&a->input, ev->text.text); break;
    case SDL_KEYDOWN: key_down(a, l, &ev->key); break;
    case SDL_MOUSEWHEEL: wheel(a, l, &ev->wheel); break;
    case SDL_MOUSEBUTTONDOWN:
        if (ev->button.button == SDL_BUTTON_LEFT) click(a, l, ev->button.x, ev->button.y);
        break;
    default: break;
    }
}
