/* grammar_match.c — a set of parse stacks over the rules of grammar.h. A stack is a chain
 * of nodes: the top node is the character class to match next, each node below it the
 * place to go on from when the rule above it ends. Nodes are never changed, so stacks
 * share their lower parts; a check that is not committed drops the nodes it made, and
 * accepted text compacts the nodes to those still reachable. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "grammar_match.h"

#define NONE UINT32_MAX /* no node: an empty stack (the root rule has ended) */

typedef struct node {
    uint32_t pos;    /* an element of g->elems: a class on top, a continuation below */
    uint32_t parent; /* the node below, or NONE */
} node;

typedef struct list {
    uint32_t *v;
    uint32_t n, cap;
} list;

struct ember_gmatch {
    const ember_grammar *g;
    node *nodes;
    uint32_t n_nodes, cap_nodes;
    list cur, a, b;              /* the open stacks (top nodes; NONE: ended), two scratch sets */
    uint32_t pend_cp, pend_left; /* a character begun: its bits so far, continuation bytes due */
    uint32_t live;               /* nodes after the last compaction */
    bool oom;
};

static bool grow(ember_gmatch *m, void **v, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return true;
    uint32_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *n = ember_realloc(*v, (size_t)c * size);
    if (!n) return !(m->oom = true);
    *v = n, *cap = c;
    return true;
}

static uint32_t new_node(ember_gmatch *m, uint32_t pos, uint32_t parent)
{
    if (!grow(m, (void **)&m->nodes, &m->cap_nodes, m->n_nodes + 1, sizeof *m->nodes)) return NONE;
    m->nodes[m->n_nodes] = (node){pos, parent};
    return m->n_nodes++;
}

/* Adds stack top to out unless an equal stack is there (same top, same node below). */
static void add_stack(ember_gmatch *m, list *out, uint32_t top)
{
    for (uint32_t i = 0; i < out->n; i++) {
        uint32_t o = out->v[i];
        if (o == top || (o != NONE && top != NONE && m->nodes[o].pos == m->nodes[top].pos &&
                         m->nodes[o].parent == m->nodes[top].parent))
            return;
    }
    if (grow(m, (void **)&out->v, &out->cap, out->n + 1, sizeof *out->v)) out->v[out->n++] = top;
}

/* The stacks that begin at element pos with parent below it (self: a node that is
 * already (pos, parent), or NONE), each up to its next class, into out: a reference
 * opens every alternative of its rule, the end of an alternative returns to parent. No
 * rule is left-recursive (grammar.c refuses them), so this ends. */
static void expand(ember_gmatch *m, uint32_t pos, uint32_t parent, uint32_t self, list *out)
{
    const ember_grammar *g = m->g;
    const ember_gelem *e = &g->elems[pos];
    if (e->kind == GE_CLASS) {
        uint32_t top = self != NONE ? self : new_node(m, pos, parent);
        if (top != NONE) add_stack(m, out, top);
    } else if (e->kind == GE_ALT || e->kind == GE_END) {
        if (parent == NONE) add_stack(m, out, NONE);
        else expand(m, m->nodes[parent].pos, m->nodes[parent].parent, parent, out);
    } else {
        uint32_t cont = new_node(m, pos + 1, parent);
        if (cont == NONE) return;
        for (uint32_t i = g->rule_start[e->value];; i++) {
            expand(m, i, cont, NONE, out);
            while (g->elems[i].kind != GE_ALT && g->elems[i].kind != GE_END) i++;
            if (g->elems[i].kind == GE_END) break;
        }
    }
}

/* The stacks of in that take code point cp, advanced past it, into out. */
static void advance(ember_gmatch *m, const list *in, uint32_t cp, list *out)
{
    out->n = 0;
    for (uint32_t i = 0; i < in->n; i++) {
        uint32_t top = in->v[i];
        if (top == NONE) continue;
        const node *t = &m->nodes[top];
        if (ember_grammar_class_has(m->g, m->g->elems[t->pos].value, cp)) expand(m, t->pos + 1, t->parent, NONE, out);
    }
}

/* Whether some stack of in can take a character whose first bytes are pending (cp's
 * bits so far, left continuation bytes due): one whose class meets their range. */
static bool can_finish(const ember_gmatch *m, const list *in, uint32_t cp, uint32_t left)
{
    uint32_t lo = cp << (6 * left), hi = lo | ((1u << (6 * left)) - 1);
    for (uint32_t i = 0; i < in->n; i++)
        if (in->v[i] != NONE &&
            ember_grammar_class_meets(m->g, m->g->elems[m->nodes[in->v[i]].pos].value, lo, hi))
            return true;
    return false;
}

/* Runs bytes from the current stacks; true with the result in *res (m->a or m->b) and
 * the pending character in *cp, *left when some stack takes them all. */
static bool run(ember_gmatch *m, const uint8_t *bytes, size_t n, list **res, uint32_t *cp, uint32_t *left)
{
    list *in = &m->cur, *out = &m->a;
    *cp = m->pend_cp, *left = m->pend_left;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = bytes[i];
        if (*left) {
            if ((c & 0xC0) != 0x80) return false;
            *cp = *cp << 6 | (c & 0x3F);
            if (--*left) continue;
        } else if (c >= 0x80) {
            int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
            if (!len) return false;
            *cp = c & (0x7F >> len), *left = (uint32_t)len - 1;
            continue;
        } else {
            *cp = c;
        }
        advance(m, in, *cp, out);
        if (m->oom || out->n == 0) return false;
        in = out;
        out = out == &m->a ? &m->b : &m->a;
    }
    if (*left && !can_finish(m, in, *cp, *left)) return false;
    *res = in;
    return true;
}

/* Keeps only the nodes the open stacks reach, renumbered, when they are a small part. */
static void compact(ember_gmatch *m)
{
    if (m->n_nodes < 2 * m->live + 1024) return;
    uint32_t *map = ember_malloc(sizeof *map * m->n_nodes);
    if (!map) return; /* compaction is only an economy */
    memset(map, 0xFF, sizeof *map * m->n_nodes);
    uint32_t n = 0;
    /* parents come before their children (made first), so one pass in order renumbers */
    for (uint32_t i = 0; i < m->cur.n; i++)
        for (uint32_t k = m->cur.v[i]; k != NONE && map[k] == NONE; k = m->nodes[k].parent) map[k] = 0;
    for (uint32_t k = 0; k < m->n_nodes; k++)
        if (map[k] != NONE) {
            node v = m->nodes[k];
            map[k] = n;
            m->nodes[n++] = (node){v.pos, v.parent == NONE ? NONE : map[v.parent]};
        }
    for (uint32_t i = 0; i < m->cur.n; i++) m->cur.v[i] = m->cur.v[i] == NONE ? NONE : map[m->cur.v[i]];
    m->n_nodes = m->live = n;
    free(map);
}

bool ember_gmatch_allows(ember_gmatch *m, const uint8_t *bytes, size_t n)
{
    uint32_t mark = m->n_nodes, cp, left;
    list *res;
    bool ok = run(m, bytes, n, &res, &cp, &left);
    m->n_nodes = mark;
    m->oom = false;
    return ok;
}

bool ember_gmatch_accept(ember_gmatch *m, const uint8_t *bytes, size_t n)
{
    uint32_t mark = m->n_nodes, cp, left;
    list *res;
    if (!run(m, bytes, n, &res, &cp, &left)) {
        m->n_nodes = mark;
        m->oom = false;
        return false;
    }
    if (res != &m->cur) {
        list t = m->cur;
        m->cur = *res;
        *res = t;
    }
    m->pend_cp = cp, m->pend_left = left;
    compact(m);
    return true;
}

bool ember_gmatch_complete(const ember_gmatch *m)
{
    for (uint32_t i = 0; i < m->cur.n && !m->pend_left; i++)
        if (m->cur.v[i] == NONE) return true;
    return false;
}

bool ember_gmatch_open(const ember_gmatch *m)
{
    for (uint32_t i = 0; i < m->cur.n; i++)
        if (m->cur.v[i] != NONE) return true;
    return false;
}

ember_status ember_gmatch_create(const ember_grammar *g, ember_gmatch **out, ember_err *err)
{
    ember_gmatch *m = *out = ember_calloc(1, sizeof *m);
    if (!m) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    m->g = g;
    /* the root's alternatives, as if referenced from an element that ends the text */
    for (uint32_t i = g->rule_start[g->root];; i++) {
        expand(m, i, NONE, NONE, &m->cur);
        while (g->elems[i].kind != GE_ALT && g->elems[i].kind != GE_END) i++;
        if (g->elems[i].kind == GE_END) break;
    }
    m->live = m->n_nodes;
    if (m->oom) {
        ember_gmatch_free(m);
        *out = NULL;
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    return EMBER_OK;
}

void ember_gmatch_free(ember_gmatch *m)
{
    if (!m) return;
    free(m->nodes);
    free(m->cur.v);
    free(m->a.v);
    free(m->b.v);
    free(m);
}
