/* engine_budget.h — an engine's KV pool under the device's memory budget
 * (engine_budget.c; ember_model_opts.memory_budget_mib, ember_vk_memory_budget): the pool
 * starts at its floor and grows and shrinks to what the budget leaves it. Library-internal. */
#ifndef EMBER_ENGINE_BUDGET_H
#define EMBER_ENGINE_BUDGET_H

#include "engine_state.h"

/* Whether a budget sizes the pool (a continuous-batching engine on a device with one). */
bool ember_budget_active(const ember_engine *e);
/* The fewest blocks the pool keeps: one sequence of the whole context. */
uint32_t ember_budget_floor(const ember_engine *e);
/* Brings the pool to the size the budget allows (engine_budget.c says how). */
ember_status ember_budget_apply(ember_engine *e);

#endif
