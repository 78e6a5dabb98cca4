/* The k best (score, chunk) pairs in FTS5's order: a size-k heap whose root is the worst kept
   entry, and the comparison that sorts the kept ones best first.

   Shared by the ranking kernel (_kernels.c) and the benchmarks' standalone C probes, which are
   compiled without Python.h: the includer may define TOPK_INDEX (the heap's index type) before
   including this file; the default is ptrdiff_t. */
#ifndef DRSEARCH_TOPK_H
#define DRSEARCH_TOPK_H

#include <stddef.h>
#include <stdint.h>

#ifndef TOPK_INDEX
#define TOPK_INDEX ptrdiff_t
#endif

/* A document's best chunk: higher score first, then lower chunk rowid (FTS5's order). */
typedef struct {
    double score;
    int64_t chunk;
} Best;

static inline int
better(const Best *x, const Best *y)
{
    return x->score > y->score || (x->score == y->score && x->chunk < y->chunk);
}

/* Min-heap of the k best so far: the root is the worst kept entry. */
static void
heap_sift_down(Best *h, TOPK_INDEX n, TOPK_INDEX i)
{
    for (;;) {
        TOPK_INDEX l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && better(&h[w], &h[l]))
            w = l;
        if (r < n && better(&h[w], &h[r]))
            w = r;
        if (w == i)
            return;
        Best tmp = h[i];
        h[i] = h[w];
        h[w] = tmp;
        i = w;
    }
}

static void
heap_offer(Best *h, TOPK_INDEX *n, TOPK_INDEX k, Best x)
{
    if (*n < k) {
        TOPK_INDEX j = (*n)++;
        h[j] = x;
        while (j > 0) {
            TOPK_INDEX p = (j - 1) / 2;
            if (!better(&h[p], &h[j]))
                break;
            Best tmp = h[p];
            h[p] = h[j];
            h[j] = tmp;
            j = p;
        }
    } else if (better(&x, &h[0])) {
        h[0] = x;
        heap_sift_down(h, *n, 0);
    }
}

/* qsort order of kept entries: best first. */
static int
cmp_best(const void *x, const void *y)
{
    return better((const Best *)x, (const Best *)y) ? -1 : better((const Best *)y, (const Best *)x);
}

#endif
