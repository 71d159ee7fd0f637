/* engine_step.h — one step of an engine (engine_step.c): the public ember_engine_step*,
 * ember_engine_run_for and ember_engine_sync_next_step are declared in ember.h; this is
 * what the rest of the engine calls. Library-internal. */
#ifndef EMBER_ENGINE_STEP_H
#define EMBER_ENGINE_STEP_H

#include "engine_state.h"

/* Teardown's first act: ends the step in flight (its tokens delivered) and moves what
 * the inbox still holds into the scheduler, so that every request can be cancelled. */
void ember_eng_drain(ember_engine *e);

#endif
