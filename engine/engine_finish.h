/* engine_finish.h — how an engine's requests end (engine_finish.c): each one, reported to
 * its callback, and the stats snapshot each end publishes.
 * Library-internal; called by the thread stepping the engine. */
#ifndef EMBER_ENGINE_FINISH_H
#define EMBER_ENGINE_FINISH_H

#include "engine_state.h"

/* Ends r: out of the scheduler (its blocks released at once, or kept by static batching
 * as a padding row), reported and freed. */
void ember_eng_finish(ember_engine *e, request *r, ember_finish why);
/* The snapshot of counters ember_engine_get_stats reads. */
void ember_eng_publish_stats(ember_engine *e);
/* The first request the scheduler runs, or NULL. */
request *ember_eng_first_running(ember_engine *e);

#endif
