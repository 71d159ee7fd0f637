/* merge.c — the merge loop shared by SentencePiece and BPE (merge.h): a priority queue
 * of candidate pairs, best key first and leftmost on ties; entries made stale by an
 * earlier merge are skipped when they come out rather than searched for and removed. */
#include "merge.h"

typedef struct queue {
    ember_bigram *a;
    size_t n;
} queue;

/* a comes out of the queue before b. */
static bool before(const ember_bigram *a, const ember_bigram *b)
{
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

static void push(queue *q, ember_bigram v)
{
    size_t i = q->n++;
    while (i > 0 && before(&v, &q->a[(i - 1) / 2])) {
        q->a[i] = q->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->a[i] = v;
}

static ember_bigram pop(queue *q)
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

/* Whether b still joins two live neighbours of the sizes it was queued with. */
static bool live(const ember_symbol *sym, const ember_bigram *b)
{
    const ember_symbol *l = &sym[b->left], *r = &sym[b->right];
    return l->n != 0 && r->n != 0 && l->n + r->n == b->size;
}

/* Merges b.right into b.left. */
static void join(ember_symbol *sym, const ember_bigram *b)
{
    ember_symbol *l = &sym[b->left], *r = &sym[b->right];
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0)
        sym[r->next].prev = (int64_t)b->left;
}

static void try_pair(queue *q, const ember_symbol *sym, int64_t left, int64_t right, ember_merge_key_fn key,
                     void *ctx)
{
    if (left < 0 || right < 0)
        return;
    const ember_symbol *l = &sym[left], *r = &sym[right];
    ember_bigram b = { 0, (size_t)left, (size_t)right, l->n + r->n };
    if (key(ctx, l, r, &b.key))
        push(q, b);
}

void ember_merge_symbols(ember_symbol *sym, size_t n, ember_bigram *buf, ember_merge_key_fn key, void *ctx)
{
    queue q = { buf, 0 };
    for (size_t i = 1; i < n; i++)
        try_pair(&q, sym, (int64_t)i - 1, (int64_t)i, key, ctx);
    while (q.n) {
        ember_bigram b = pop(&q);
        if (!live(sym, &b))
            continue;
        join(sym, &b);
        try_pair(&q, sym, sym[b.left].prev, (int64_t)b.left, key, ctx);
        try_pair(&q, sym, (int64_t)b.left, sym[b.left].next, key, ctx);
    }
}
