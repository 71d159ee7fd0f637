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
    uint32_t from; /* the set being built: v[from .. n) */
} list;

/* A character begun and not finished: its bits so far, the continuation bytes due and
 * its length in bytes (left 0: none). */
typedef struct pending {
    uint32_t cp, left, len;
} pending;

/* A set of stacks during a vocabulary walk: the tops walk.v[first .. + n), the pending
 * character, and the nodes in use once it was made. */
typedef struct level {
    uint32_t first, n;
    pending p;
    uint32_t mark;
} level;

struct ember_gmatch {
    const ember_grammar *g;
    node *nodes;
    uint32_t n_nodes, cap_nodes;
    list cur, a, b;              /* the open stacks (top nodes; NONE: ended), two scratch sets */
    list walk;                   /* the sets of a vocabulary walk, one per depth (level) */
    level *levels;
    uint32_t cap_levels;
    pending pend;                /* a character begun by the text so far */
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

/* Whether stacks a and b hold the same elements (they may be different nodes). */
static bool same_stack(const ember_gmatch *m, uint32_t a, uint32_t b)
{
    for (; a != b; a = m->nodes[a].parent, b = m->nodes[b].parent)
        if (a == NONE || b == NONE || m->nodes[a].pos != m->nodes[b].pos) return false;
    return true;
}

/* Adds stack top to out's set unless an equal stack is there: a set never holds a stack
 * twice, or the sets of an ambiguous grammar would grow with every character. */
static void add_stack(ember_gmatch *m, list *out, uint32_t top)
{
    for (uint32_t i = out->from; i < out->n; i++)
        if (same_stack(m, out->v[i], top)) return;
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
        /* a reference in tail position returns straight to parent: stacks of a repetition
         * (r ::= x r | ...) stay as deep as one x, however many came */
        uint32_t next = g->elems[pos + 1].kind;
        uint32_t cont = next == GE_ALT || next == GE_END ? parent : new_node(m, pos + 1, parent);
        if (cont == NONE && next != GE_ALT && next != GE_END) return;
        for (uint32_t i = g->rule_start[e->value];; i++) {
            expand(m, i, cont, NONE, out);
            while (g->elems[i].kind != GE_ALT && g->elems[i].kind != GE_END) i++;
            if (g->elems[i].kind == GE_END) break;
        }
    }
}

/* The stacks in->v[first .. + n) that take code point cp, advanced past it, as a new set
 * at the end of out (in may be out: it is read by index as out grows). */
static void advance(ember_gmatch *m, const list *in, uint32_t first, uint32_t n, uint32_t cp, list *out)
{
    out->from = out->n;
    for (uint32_t i = first; i < first + n; i++) {
        uint32_t top = in->v[i];
        if (top == NONE) continue;
        const node *t = &m->nodes[top];
        if (ember_grammar_class_has(m->g, m->g->elems[t->pos].value, cp)) expand(m, t->pos + 1, t->parent, NONE, out);
    }
}

/* The code points pending character p can still become, lo..hi; false when there are
 * none (an overlong form, a surrogate, past U+10FFFF: bytes no UTF-8 text holds). */
static bool char_range(const pending *p, uint32_t *lo, uint32_t *hi)
{
    static const uint32_t MIN[5] = {0, 0, 0x80, 0x800, 0x10000}; /* by length */
    *lo = p->cp << (6 * p->left);
    *hi = *lo | ((1u << (6 * p->left)) - 1);
    if (*lo < MIN[p->len]) *lo = MIN[p->len];
    if (*hi > 0x10FFFF) *hi = 0x10FFFF;
    return *lo <= *hi && !(*lo >= 0xD800 && *hi <= 0xDFFF);
}

/* The length of the UTF-8 character lead byte c begins (2-4), 0 when c is no lead byte. */
static uint32_t lead_len(uint8_t c)
{
    return c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
}

/* Byte c after pending character *p: -1 when no UTF-8 text has it there, 0 when a
 * character is still pending, 1 when one is complete (its code point in p->cp). */
static int feed(pending *p, uint8_t c)
{
    uint32_t lo, hi;
    if (p->left) {
        if ((c & 0xC0) != 0x80) return -1;
        p->cp = p->cp << 6 | (c & 0x3F);
        p->left--;
    } else if (c >= 0x80) {
        if (!(p->len = lead_len(c))) return -1;
        p->cp = c & (0x7F >> p->len), p->left = p->len - 1;
    } else {
        p->cp = c, p->len = 1;
        return 1;
    }
    if (!char_range(p, &lo, &hi)) return -1;
    return p->left ? 0 : 1;
}

/* Whether some stack of in can take a character that pending p begins: one whose class
 * meets the code points p can become. */
static bool can_finish(const ember_gmatch *m, const list *in, uint32_t first, uint32_t n, const pending *p)
{
    uint32_t lo, hi;
    if (!char_range(p, &lo, &hi)) return false;
    for (uint32_t i = first; i < first + n; i++)
        if (in->v[i] != NONE &&
            ember_grammar_class_meets(m->g, m->g->elems[m->nodes[in->v[i]].pos].value, lo, hi))
            return true;
    return false;
}

/* Runs bytes from the current stacks; true with the result in *res (m->a or m->b) and
 * the pending character in *p when some stack takes them all. */
static bool run(ember_gmatch *m, const uint8_t *bytes, size_t n, list **res, pending *p)
{
    list *in = &m->cur, *out = &m->a;
    *p = m->pend;
    for (size_t i = 0; i < n; i++) {
        int fed = feed(p, bytes[i]);
        if (fed < 0) return false;
        if (fed == 0) continue;
        out->n = 0;
        advance(m, in, 0, in->n, p->cp, out);
        if (m->oom || out->n == 0) return false;
        in = out;
        out = out == &m->a ? &m->b : &m->a;
    }
    if (p->left && !can_finish(m, in, 0, in->n, p)) return false;
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
    ember_free(map);
}

bool ember_gmatch_allows(ember_gmatch *m, const uint8_t *bytes, size_t n)
{
    uint32_t mark = m->n_nodes;
    pending p;
    list *res;
    bool ok = run(m, bytes, n, &res, &p);
    m->n_nodes = mark;
    m->oom = false;
    return ok;
}

/* Runs bytes and keeps the result: 1; 0 when they are refused, -1 when memory ran out
 * (the matcher then as it was). */
static int step(ember_gmatch *m, const uint8_t *bytes, size_t n)
{
    uint32_t mark = m->n_nodes;
    pending p;
    list *res;
    if (!run(m, bytes, n, &res, &p)) {
        int r = m->oom ? -1 : 0;
        m->n_nodes = mark;
        m->oom = false;
        return r;
    }
    if (res != &m->cur) {
        list t = m->cur;
        m->cur = *res;
        *res = t;
    }
    m->pend = p;
    compact(m);
    return 1;
}

bool ember_gmatch_accept(ember_gmatch *m, const uint8_t *bytes, size_t n)
{
    return step(m, bytes, n) > 0;
}

int ember_gmatch_step(ember_gmatch *m, uint8_t byte)
{
    return step(m, &byte, 1);
}

/* The set after byte c from *in, as *out (its tops appended to m->walk, its nodes after
 * in's); false when no stack takes c, or no open stack can take the character c leaves
 * unfinished. */
static bool walk_byte(ember_gmatch *m, const level *in, uint8_t c, level *out)
{
    list *w = &m->walk;
    pending p = in->p;
    int fed = feed(&p, c);
    if (fed < 0) return false;
    if (fed == 0) { /* the stacks stay; the character must still be one of theirs */
        *out = (level){in->first, in->n, p, m->n_nodes};
        return can_finish(m, w, in->first, in->n, &p);
    }
    advance(m, w, in->first, in->n, p.cp, w);
    *out = (level){w->from, w->n - w->from, {0, 0, 0}, m->n_nodes};
    return !m->oom && out->n > 0;
}

/* Makes room for a walk of v: a level per depth, the current stacks as level 0. */
static bool walk_start(ember_gmatch *m, const ember_vtrie *v)
{
    if (!grow(m, (void **)&m->levels, &m->cap_levels, v->max_depth + 1, sizeof *m->levels) ||
        !grow(m, (void **)&m->walk.v, &m->walk.cap, m->cur.n + 1, sizeof *m->walk.v))
        return false;
    memcpy(m->walk.v, m->cur.v, sizeof *m->cur.v * m->cur.n);
    m->walk.n = m->cur.n;
    m->levels[0] = (level){0, m->cur.n, m->pend, m->n_nodes};
    return true;
}

bool ember_gmatch_mask(ember_gmatch *m, const ember_vtrie *v, uint32_t *bits, uint32_t *n_allowed)
{
    memset(bits, 0, sizeof *bits * ((v->n_vocab + 31) / 32));
    uint32_t base = m->n_nodes, n = 0;
    if (!walk_start(m, v)) return !(m->oom = false);
    for (uint32_t i = 0; i < v->n_nodes;) {
        const level *up = &m->levels[v->depth[i] - 1];
        m->n_nodes = up->mark;
        m->walk.n = up->first + up->n;
        if (!walk_byte(m, up, v->byte[i], &m->levels[v->depth[i]])) {
            if (m->oom) break;
            i = v->end[i]; /* no token below this prefix can come next */
            continue;
        }
        for (uint32_t k = v->tok_first[i]; k < v->tok_first[i] + v->tok_n[i]; k++, n++)
            bits[v->ids[k] / 32] |= 1u << (v->ids[k] % 32);
        i++;
    }
    bool ok = !m->oom;
    m->n_nodes = base;
    m->oom = false;
    for (uint32_t k = 0; ember_gmatch_complete(m) && k < v->n_eog; k++, n++)
        bits[v->eog[k] / 32] |= 1u << (v->eog[k] % 32);
    *n_allowed = n;
    return ok;
}

/* What of a pending character decides what follows. Every completion of its bytes is in
 * its range lo..hi; when each open stack's class holds all of that range or none of it,
 * which stacks hold it is all that matters (the continuation bytes UTF-8 allows give a
 * character they all agree on), so pending characters with the same pattern are one
 * state. Else the bits themselves. */
static uint32_t pending_class(const ember_gmatch *m, const list *stacks, const pending *p)
{
    uint32_t lo, hi, pattern = 0;
    if (!p->left) return 0;
    /* after E0, ED, F0 or F4 alone fewer continuation bytes are UTF-8 than after the
     * other lead bytes: those are states of their own */
    bool lead_only = p->left == p->len - 1;
    if (lead_only && ((p->len == 3 && (p->cp == 0x0 || p->cp == 0xD)) || (p->len == 4 && (p->cp == 0 || p->cp == 4))))
        return p->cp;
    if (stacks->n > 31 || !char_range(p, &lo, &hi)) return p->cp;
    for (uint32_t i = 0; i < stacks->n; i++) {
        if (stacks->v[i] == NONE) continue;
        uint32_t c = m->g->elems[m->nodes[stacks->v[i]].pos].value;
        if (ember_grammar_class_covers(m->g, c, lo, hi)) pattern |= 1u << i;
        else if (ember_grammar_class_meets(m->g, c, lo, hi)) return p->cp;
    }
    return 0x80000000u | pattern; /* above every code point */
}

/* The key of the state the stacks and the pending character p make. */
static size_t key_of(const ember_gmatch *m, const list *stacks, const pending *p, uint32_t *key, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = 0; i < stacks->n; i++) {
        for (uint32_t k = stacks->v[i]; k != NONE; k = m->nodes[k].parent, n++)
            if (n < cap) key[n] = m->nodes[k].pos;
        if (n < cap) key[n] = NONE;
        n++;
    }
    if (n + 3 <= cap) {
        key[n] = pending_class(m, stacks, p), key[n + 1] = p->left ? p->left | p->len << 8 : 0;
        key[n + 2] = p->left ? p->cp : 0;
    }
    return n + 3;
}

size_t ember_gmatch_key(const ember_gmatch *m, uint32_t *key, size_t cap)
{
    return key_of(m, &m->cur, &m->pend, key, cap);
}

size_t ember_gmatch_key_after(ember_gmatch *m, uint8_t byte, uint32_t *key, size_t cap)
{
    uint32_t mark = m->n_nodes;
    pending p;
    list *res;
    size_t n = run(m, &byte, 1, &res, &p) ? key_of(m, res, &p, key, cap) : m->oom ? SIZE_MAX : 0;
    m->n_nodes = mark;
    m->oom = false;
    return n;
}

/* Equal numbers for bytes that lead to one state: a whole character by the stacks that
 * take it, a pending one by its pattern and the bytes still due (pending_class). */
static uint64_t byte_class(const ember_gmatch *m, uint8_t byte)
{
    pending p = m->pend;
    int fed = feed(&p, byte);
    if (fed < 0) return 0;
    if (fed == 0) {
        uint32_t c = pending_class(m, &m->cur, &p);
        if (c == 0x80000000u) return 0; /* no stack can take a character it begins */
        return c & 0x80000000u ? 2ull << 62 | (uint64_t)(p.left | p.len << 8) << 32 | (c & 0x7FFFFFFF) : 3ull << 62 | byte;
    }
    if (m->cur.n > 62) return 3ull << 62 | byte;
    uint64_t took = 0;
    for (uint32_t i = 0; i < m->cur.n; i++)
        if (m->cur.v[i] != NONE && ember_grammar_class_has(m->g, m->g->elems[m->nodes[m->cur.v[i]].pos].value, p.cp))
            took |= 1ull << i;
    return took ? 1ull << 62 | took : 0;
}

bool ember_gmatch_multibyte_alike(const ember_gmatch *m)
{
    if (m->pend.left) return false;
    for (uint32_t i = 0; i < m->cur.n; i++) {
        if (m->cur.v[i] == NONE) continue;
        const ember_grammar *g = m->g;
        uint32_t c = g->elems[m->nodes[m->cur.v[i]].pos].value;
        bool all = ember_grammar_class_covers(g, c, 0x80, 0xD7FF) && ember_grammar_class_covers(g, c, 0xE000, 0x10FFFF);
        if (!all && (ember_grammar_class_meets(g, c, 0x80, 0xD7FF) || ember_grammar_class_meets(g, c, 0xE000, 0x10FFFF)))
            return false;
    }
    return true;
}

void ember_gmatch_byte_classes(const ember_gmatch *m, uint8_t lo, uint8_t hi, uint64_t *out)
{
    /* a pending character that each stack takes or refuses whatever its last bytes are
     * (its class a pattern): every continuation byte leads to one state */
    bool alike = m->pend.left && pending_class(m, &m->cur, &m->pend) & 0x80000000u;
    uint64_t same = 0;
    for (uint32_t b = lo; b <= hi; b++) {
        bool cont = (b & 0xC0) == 0x80;
        out[b - lo] = alike && cont && same ? same : byte_class(m, (uint8_t)b);
        if (alike && cont) same = out[b - lo];
    }
}

bool ember_gmatch_set_key(ember_gmatch *m, const uint32_t *key, size_t n)
{
    m->n_nodes = 0, m->cur.n = 0;
    if (n < 3) return false;
    for (size_t i = 0, end; i < n - 3; i = end + 1) {
        for (end = i; end < n - 3 && key[end] != NONE; end++)
            if (key[end] >= m->g->n_elems) return false;
        if (end == n - 3) return false; /* a stack without its end mark */
        uint32_t top = NONE;
        for (size_t k = end; k > i; k--) /* stacks are compared by content: no sharing needed */
            if ((top = new_node(m, key[k - 1], top)) == NONE) return false;
        if (!grow(m, (void **)&m->cur.v, &m->cur.cap, m->cur.n + 1, sizeof *m->cur.v)) return false;
        m->cur.v[m->cur.n++] = top;
    }
    m->pend = (pending){key[n - 1], key[n - 2] & 0xFF, key[n - 2] >> 8};
    if (m->pend.left > 3 || m->pend.len > 4) return false;
    m->live = m->n_nodes;
    return !m->oom;
}

bool ember_gmatch_complete(const ember_gmatch *m)
{
    for (uint32_t i = 0; i < m->cur.n && !m->pend.left; i++)
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
    ember_free(m->nodes);
    ember_free(m->cur.v);
    ember_free(m->a.v);
    ember_free(m->b.v);
    ember_free(m->walk.v);
    ember_free(m->levels);
    ember_free(m);
}
