/* tokenizer_merge.c — the bigram priority queue and symbol list shared by the SPM and
 * BPE merge loops. Both repeatedly take the best adjacent pair (SPM: highest score;
 * BPE: lowest merge rank), leftmost on ties, and join it; entries made stale by an
 * earlier merge are skipped when they come out rather than searched for and removed. */
#include "tokenizer_internal.h"

/* a comes out of the queue before b. */
static bool before(const ember_bigram *a, const ember_bigram *b)
{
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

void ember_bigram_push(ember_bigram_queue *q, ember_bigram v)
{
    size_t i = q->n++;
    while (i > 0 && before(&v, &q->a[(i - 1) / 2])) {
        q->a[i] = q->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->a[i] = v;
}

ember_bigram ember_bigram_pop(ember_bigram_queue *q)
{
    ember_bigram top = q->a[0], last = q->a[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && before(&q->a[c + 1], &q->a[c]))
            c++;
        if (!before(&q->a[c], &last))
            break;
        q->a[i] = q->a[c];
        i = c;
    }
    if (q->n)
        q->a[i] = last;
    return top;
}

bool ember_bigram_live(const ember_symbol *sym, const ember_bigram *b)
{
    const ember_symbol *l = &sym[b->left], *r = &sym[b->right];
    return l->n != 0 && r->n != 0 && l->n + r->n == b->size;
}

void ember_symbol_merge(ember_symbol *sym, const ember_bigram *b)
{
    ember_symbol *l = &sym[b->left], *r = &sym[b->right];
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0)
        sym[r->next].prev = (int64_t)b->left;
}
