/* jinja.c — the interpreter's entry points: source to tokens to tree (kept with the
 * template), and a render: the context from JSON, the tree walked, the text handed over
 * (see jinja.h). */
#include <string.h>

#include "common/alloc.h"
#include "engine/grammar/json.h"
#include "jinja.h"
#include "jinja_eval.h"
#include "jinja_json.h"
#include "jinja_lex.h"
#include "jinja_parse.h"

struct ember_jinja {
    ember_jtoks toks;   /* the tree's strings point into the tokens' buffer */
    ember_jctx arena;   /* the tree */
    ember_jnode **body;
    uint32_t n;
};

void ember_jinja_free(ember_jinja *t)
{
    if (!t) return;
    ember_jinja_toks_free(&t->toks);
    ember_jctx_free(&t->arena);
    ember_free(t);
}

ember_status ember_jinja_parse(const char *src, size_t len, ember_jinja **out, ember_err *err)
{
    *out = NULL;
    ember_jinja *t = ember_calloc(1, sizeof *t);
    if (!t) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "jinja: out of memory");
    /* The tree's arena has no limits of its own: the source's size bounds it. */
    t->arena = (ember_jctx){.max_memory = SIZE_MAX / 2, .max_output = SIZE_MAX / 2, .max_steps = UINT64_MAX};
    ember_status s = ember_jinja_lex(src, len, &t->toks, err);
    if (s == EMBER_OK) s = ember_jinja_parse_toks(&t->toks, &t->arena, &t->body, &t->n, err);
    if (s != EMBER_OK) {
        ember_jinja_free(t);
        return s;
    }
    *out = t;
    return EMBER_OK;
}

/* The context's members as a dict; __now read for strftime_now. */
static bool context(ember_jctx *c, const char *json, size_t len, ember_jv *vars, ember_err *err)
{
    ember_json_doc *doc = NULL;
    const ember_json *root = NULL;
    ember_err jerr = {{0}};
    *vars = ember_jv_none();
    if (ember_json_parse(json ? json : "{}", json ? len : 2, &doc, &root, &jerr) != EMBER_OK) {
        c->status = ember_fail(err, doc ? EMBER_ERR_INVALID_ARG : EMBER_ERR_OUT_OF_MEMORY, "jinja: the context: %s", jerr.msg);
        ember_json_free(doc);
        return false;
    }
    bool ok = root->kind == EJ_OBJECT;
    if (!ok) c->status = ember_fail(err, EMBER_ERR_INVALID_ARG, "jinja: the context must be a JSON object");
    const ember_json *now = ember_json_get(root, "__now");
    if (now && now->kind == EJ_NUMBER) {
        ember_jv v;
        ember_jv_from_json(c, now, &v);
        c->has_now = true;
        c->now = v.kind == EJV_INT ? v.u.i : (int64_t)v.u.f;
    }
    ok = ok && ember_jv_from_json(c, root, vars);
    ember_json_free(doc);
    return ok;
}

ember_status ember_jinja_render(const ember_jinja *t, const char *context_json, size_t len,
                                const ember_jinja_limits *lim, char **out, size_t *out_len, ember_err *err)
{
    *out = NULL;
    if (out_len) *out_len = 0;
    ember_jinja_limits l = lim ? *lim : (ember_jinja_limits){0};
    ember_jctx c = {.max_output = l.max_output ? l.max_output : (size_t)1 << 20,
                    .max_steps = l.max_steps ? l.max_steps : 10000000,
                    .max_depth = l.max_depth ? l.max_depth : 64,
                    .max_memory = l.max_memory ? l.max_memory : (size_t)64 << 20,
                    .line = 1, .col = 1, .err = err, .status = EMBER_ERR_INVALID_ARG};
    ember_jv vars;
    ember_sbuf b = {0};
    bool ok = context(&c, context_json, len, &vars, err) && ember_jinja_eval(&c, t->body, t->n, vars.u.d, &b);
    if (ok && b.oom) ok = false, c.status = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "jinja: out of memory");
    ember_jctx_free(&c);
    if (!ok) {
        ember_free(b.s);
        return c.status;
    }
    size_t n = b.len;
    *out = ember_sbuf_take(&b);
    if (!*out) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "jinja: out of memory");
    if (out_len) *out_len = n;
    return EMBER_OK;
}
