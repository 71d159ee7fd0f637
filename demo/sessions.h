/* sessions.h — --sessions DIR: every panel's conversation restored from DIR when the
 * model has loaded, and saved there at quit and on Ctrl+S, one file per panel
 * (DIR/panel-N.emberchat: ember_chat_save's bytes with the conversation's KV state). */
#ifndef SESSIONS_H
#define SESSIONS_H

#include "app.h"

/* Loads the panels' saved conversations, if there are any (after panel_open_chat). */
void sessions_restore(app *a);
/* Ctrl+S: saves every panel that has no reply on its way. */
void sessions_save(app *a);
/* Called each frame once quitting was asked: stops the replies on their way, saves every
 * panel, and returns 1 when every save has ended (at once without --sessions). */
int sessions_ready_to_quit(app *a);

#endif
