/* controls.h — what keys and the mouse do: typing and sending, focus, scrolling,
 * stopping a reply, copying a message. */
#ifndef CONTROLS_H
#define CONTROLS_H

#include "app.h"
#include "chat_ui.h"

void controls_handle(app *a, const layout *l, const SDL_Event *ev);

/* Sends text to panel i as the user (the input line, --say). */
void app_send(app *a, int i, const char *text);

#endif
