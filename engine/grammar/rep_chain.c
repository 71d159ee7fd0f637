/* rep_chain.c — chains of a bounded repetition's rules (rep_chain.h). */
#include <string.h>

#include "common/alloc.h"
#include "rep_chain.h"

#define NONE UINT32_MAX
#define AMBIGUOUS (UINT32_MAX - 1)

/* The x of a rule shaped [x R_k-1 | empty] (*below = R_k-1) or [x | empty] (*below =
 * NONE); NONE when the rule has neither shape. */
static uint32_t shape(const ember_grammar *g, uint32_t r, uint32_t *below)
{
    const ember_gelem *e = g->elems + g->rule_start[r];
    uint32_t left = g->n_elems - g->rule_start[r];
    *below = NONE;
    if (left >= 4 && e[0].kind == GE_REF && e[1].kind == GE_REF && e[2].kind == GE_ALT && e[3].kind == GE_END) {
        *below = e[1].value;
        return e[0].value;
    }
    if (left >= 3 && e[0].kind == GE_REF && e[1].kind == GE_ALT && e[2].kind == GE_END) return e[0].value;
    return NONE;
}

/* Each rule's count (0: not in a chain) from the bottom up and its chain's bottom rule;
 * above[r]: the one rule one count up (NONE, or AMBIGUOUS when two rules refer to r so). */
static void find_chains(const ember_grammar *g, uint32_t *above, uint32_t *count, uint32_t *bottom)
{
    for (uint32_t r = 0; r < g->n_rules; r++) above[r] = NONE, count[r] = 0, bottom[r] = NONE;
    for (uint32_t r = 0; r < g->n_rules; r++) {
        uint32_t below, below2, x = shape(g, r, &below);
        if (x == NONE || below == NONE || below == r || shape(g, below, &below2) != x) continue;
        above[below] = above[below] == NONE ? r : AMBIGUOUS;
    }
    for (uint32_t r = 0; r < g->n_rules; r++) { /* bottoms: [x | empty] with a rule above */
        uint32_t below;
        if (shape(g, r, &below) == NONE || below != NONE || above[r] == NONE || above[r] == AMBIGUOUS) continue;
        count[r] = 1, bottom[r] = r;
        for (uint32_t k = r, n = 1; above[k] != NONE && above[k] != AMBIGUOUS && n < g->n_rules; n++) {
            k = above[k];
            if (count[k]) break;
            count[k] = n + 1, bottom[k] = r;
        }
    }
}

/* nullable[r]: rule r may match nothing (worked out to a fixed point). */
static void find_nullable(const ember_grammar *g, uint8_t *nullable)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t r = 0; r < g->n_rules; r++) {
            for (uint32_t i = g->rule_start[r]; !nullable[r];) {
                while (g->elems[i].kind == GE_REF && nullable[g->elems[i].value]) i++;
                if (g->elems[i].kind == GE_ALT || g->elems[i].kind == GE_END) nullable[r] = changed = true;
                while (g->elems[i].kind != GE_ALT && g->elems[i].kind != GE_END) i++;
                if (g->elems[i++].kind == GE_END) break;
            }
        }
    }
}

static bool opens(const ember_grammar *g, const uint32_t *count, uint32_t i, uint8_t *memo, const uint8_t *nullable);

/* Whether an alternative of rule r may open a chain's rule before a character. memo: 0
 * unknown, 1 being worked out (a rule cannot begin with itself: grammar.c refuses left
 * recursion), 2 no, 3 yes. */
static bool rule_opens(const ember_grammar *g, const uint32_t *count, uint32_t r, uint8_t *memo, const uint8_t *nullable)
{
    if (count[r]) return true;
    if (memo[r]) return memo[r] == 3;
    memo[r] = 1;
    bool yes = false;
    for (uint32_t i = g->rule_start[r]; !yes;) {
        yes = opens(g, count, i, memo, nullable);
        while (g->elems[i].kind != GE_ALT && g->elems[i].kind != GE_END) i++;
        if (g->elems[i++].kind == GE_END) break;
    }
    memo[r] = yes ? 3 : 2;
    return yes;
}

/* Whether parsing on from element i may open a chain's rule before the next character: a
 * reference to one, or to a rule that may, or past rules that may match nothing. */
static bool opens(const ember_grammar *g, const uint32_t *count, uint32_t i, uint8_t *memo, const uint8_t *nullable)
{
    for (; g->elems[i].kind == GE_REF; i++) {
        uint32_t r = g->elems[i].value;
        if (rule_opens(g, count, r, memo, nullable)) return true;
        if (!nullable[r]) return false;
    }
    return false;
}

/* Whether the rest of element i's alternative may match nothing (its rule then ends, and
 * parsing goes on below it in the stack). */
static bool passes_at(const ember_grammar *g, uint32_t i, const uint8_t *nullable)
{
    while (g->elems[i].kind == GE_REF && nullable[g->elems[i].value]) i++;
    return g->elems[i].kind == GE_ALT || g->elems[i].kind == GE_END;
}

/* enters and passes for every element (rep_chain.h). A chain's own elements go on into
 * its next count, which is the shift's business: they enter afresh only what x may open. */
static bool find_entries(const ember_grammar *g, const uint32_t *count, ember_rep_chains *c)
{
    uint8_t *memo = ember_calloc(g->n_rules + 1, 1), *nullable = ember_calloc(g->n_rules + 1, 1);
    if (memo && nullable) {
        find_nullable(g, nullable);
        for (uint32_t i = 0; i < g->n_elems; i++) {
            c->enters[i] = opens(g, count, i, memo, nullable);
            c->passes[i] = passes_at(g, i, nullable);
        }
        for (uint32_t r = 0; r < g->n_rules; r++) {
            if (!count[r]) continue;
            bool x_opens = rule_opens(g, count, g->elems[g->rule_start[r]].value, memo, nullable);
            for (uint32_t i = g->rule_start[r]; g->elems[i].kind != GE_END; i++) c->enters[i] = x_opens;
        }
    }
    bool ok = memo && nullable;
    ember_free(memo), ember_free(nullable);
    return ok;
}

/* The elements of rule r mapped onto rule to's (same shape): at the same offsets. */
static void map_rule(const ember_grammar *g, uint32_t r, uint32_t to, uint32_t *map)
{
    for (uint32_t i = 0; i < 4; i++) map[g->rule_start[r] + i] = g->rule_start[to] + i;
}

ember_status ember_rep_chains_init(const ember_grammar *g, ember_rep_chains *c, ember_err *err)
{
    memset(c, 0, sizeof *c);
    uint32_t *above = ember_malloc(sizeof *above * (g->n_rules + 1));
    uint32_t *count = ember_malloc(sizeof *count * (g->n_rules + 1));
    uint32_t *bottom = ember_malloc(sizeof *bottom * (g->n_rules + 1));
    c->up = ember_malloc(sizeof *c->up * (g->n_elems + 1));
    c->down = ember_malloc(sizeof *c->down * (g->n_elems + 1));
    c->level = ember_calloc(g->n_elems + 1, sizeof *c->level);
    c->enters = ember_calloc(g->n_elems + 1, sizeof *c->enters);
    c->passes = ember_calloc(g->n_elems + 1, sizeof *c->passes);
    c->chain = ember_malloc(sizeof *c->chain * (g->n_elems + 1));
    c->g = g;
    bool ok = above && count && bottom && c->up && c->down && c->level && c->enters && c->passes && c->chain;
    if (ok) {
        for (uint32_t i = 0; i < g->n_elems; i++) c->up[i] = c->down[i] = c->chain[i] = NONE;
        find_chains(g, above, count, bottom);
        ok = find_entries(g, count, c);
    }
    if (!ok) {
        ember_free(above), ember_free(count), ember_free(bottom), ember_rep_chains_free(c);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    for (uint32_t r = 0; r < g->n_rules; r++) {
        uint32_t below;
        if (count[r] < 2) continue; /* R_1's elements never stand in a key (x is in tail position) */
        shape(g, r, &below);
        for (uint32_t i = 0; i < 4; i++) c->level[g->rule_start[r] + i] = count[r], c->chain[g->rule_start[r] + i] = bottom[r];
        if (above[r] != NONE && above[r] != AMBIGUOUS) map_rule(g, r, above[r], c->up);
        if (count[r] >= 3) map_rule(g, r, below, c->down);
    }
    ember_free(above);
    ember_free(count);
    ember_free(bottom);
    return EMBER_OK;
}

void ember_rep_chains_free(ember_rep_chains *c)
{
    ember_free(c->up);
    ember_free(c->down);
    ember_free(c->level);
    ember_free(c->enters);
    ember_free(c->passes);
    ember_free(c->chain);
    memset(c, 0, sizeof *c);
}

/* Whether byte may take the stack key[i ..] (up to its NONE) on into a chain afresh: its
 * top class takes the byte (a byte above 0x7F, or one after the lead of a pending
 * character, is counted as taken), and parsing on from after it, down the stack through
 * rules that end without a character, reaches an element that opens a chain. */
static bool stack_enters(const ember_rep_chains *c, const uint32_t *key, size_t i, int byte, bool pending)
{
    if (key[i] == NONE) return false; /* an empty stack: the text may end here */
    const ember_grammar *g = c->g;
    if (byte < 0x80 && !pending && !ember_grammar_class_has(g, g->elems[key[i]].value, (uint32_t)byte)) return false;
    for (uint32_t pos = key[i] + 1;; pos = key[++i]) {
        if (c->enters[pos]) return true;
        if (!c->passes[pos] || key[i + 1] == NONE) return false;
    }
}

/* key with the elements of one chain moved by map; false when one cannot move. */
static bool move(const ember_rep_chains *c, const uint32_t *map, uint32_t chain, const uint32_t *key, size_t n,
                 uint32_t *out)
{
    memcpy(out, key, n * sizeof *key);
    for (size_t i = 0; i + 3 < n; i++) /* the last three: the pending character */
        if (key[i] != NONE && c->chain[key[i]] == chain && (out[i] = map[key[i]]) == NONE) return false;
    return true;
}

bool ember_rep_up(const ember_rep_chains *c, const uint32_t *key, size_t n, int byte, uint32_t *chain, uint32_t *out)
{
    size_t first = 0;
    while (first + 3 < n && (key[first] == NONE || c->chain[key[first]] == NONE)) first++;
    if (first + 3 >= n || !move(c, c->up, *chain = c->chain[key[first]], key, n, out)) return false;
    bool pending = key[n - 2] != 0;
    for (size_t i = 0; byte >= 0 && i + 3 < n; i++) { /* each stack from its top */
        if (stack_enters(c, key, i, byte, pending)) return false;
        while (key[i] != NONE) i++;
    }
    return true;
}

bool ember_rep_down(const ember_rep_chains *c, const uint32_t *key, size_t n, uint32_t chain, uint32_t *out)
{
    return n >= 3 && move(c, c->down, chain, key, n, out);
}

uint32_t ember_rep_min_level(const ember_rep_chains *c, const uint32_t *key, size_t n, uint32_t chain)
{
    uint32_t low = NONE;
    for (size_t i = 0; i + 3 < n; i++)
        if (key[i] != NONE && c->chain[key[i]] == chain && c->level[key[i]] < low) low = c->level[key[i]];
    return low;
}
