/* jinja_eval.h — walking the tree (jinja_eval.c): statements write into the output,
 * expressions give values. Scopes as @huggingface/jinja has them: a for loop and a
 * macro call open one (a `set` inside stays there), an if does not; macros close over
 * the scope they were defined in. Every node walked and every item a built-in handles
 * is a step (max_steps); macro and call-block nesting is bounded (max_depth), and so is
 * every string and the output (max_output). Library-internal. */
#ifndef EMBER_JINJA_EVAL_H
#define EMBER_JINJA_EVAL_H

#include "jinja_ast.h"
#include "jinja_value.h"

/* Renders body[0..n) with the members of vars (a dict: the context) as its variables,
 * after the global ones (true, false, none, True, False, None, range, namespace,
 * raise_exception, strftime_now, dict); a context member of one of those names is
 * refused, as @huggingface/jinja refuses it. Appends to out. */
bool ember_jinja_eval(ember_jctx *c, ember_jnode *const *body, uint32_t n, const ember_jdict *vars, ember_sbuf *out);

#endif
