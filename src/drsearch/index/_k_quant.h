/* _k_quant.h: part of the drsearch.index._kernels module, included once by _kernels.c (one
 * translation unit). Exact ranking traversed over 8-bit quantised impacts: MaxScore and the
 * per-window accumulation run on one byte per posting (each posting's upper bound q * unit),
 * and only the chunks whose quantised bound can reach the k-th document's exact score are
 * rescored with the stored float64 impacts, in phrase order from 0.0: FTS5's bm25() bits. */
#ifndef DRSEARCH_K_QUANT_H
#define DRSEARCH_K_QUANT_H

#define QUANT_WINDOW 16384 /* rowids per window: a uint16 accumulator of 32 KiB (L1) */
#define QUANT_FIRST 1024   /* the first windows are short, so that the heap fills early */
#define QUANT_MAX_LISTS 256 /* 256 lists * 255 still fits the uint16 accumulator */
/* Relative slack on every bound: covers the rounding of a float sum of up to millions of
   impacts and of q * unit, so that no chunk that qualifies is ever pruned. */
#define QUANT_SLACK 2e-9

typedef struct {
    const uint32_t *id;
    const uint8_t *q;
    const double *im;
    Py_ssize_t n;
    Py_ssize_t cur;  /* the next posting not yet accumulated (or, non-essential, passed) */
    Py_ssize_t seek; /* the rescoring cursor: the first posting whose rowid may be >= the
                        chunk being rescored */
    uint32_t prev;   /* the last rowid checked (ascending, within 1..n_rows) */
    int qmax;        /* the list's largest quantised impact: its bound */
} QList;

/* The first position >= p whose rowid is >= c (n if none). */
static inline Py_ssize_t
qgallop(const QList *l, Py_ssize_t p, uint32_t c)
{
    const Py_ssize_t n = l->n;
    if (p >= n || l->id[p] >= c)
        return p;
    Py_ssize_t lo = p, hi = p + 1, step = 1;
    while (hi < n && l->id[hi] < c) {
        lo = hi;
        step <<= 1;
        hi = lo + step;
    }
    if (hi > n)
        hi = n;
    while (hi - lo > 1) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (l->id[mid] < c)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* The smallest quantised sum that can still reach `floor` (0 while the heap is not full):
   a chunk whose bound S * unit, loosened by the slack, is below the floor cannot enter (a
   chunk seen later has a higher rowid than every kept one, so even a tie loses). */
static inline int64_t
quant_need(double floor, double unit)
{
    if (!(floor > 0.0))
        return 0;
    const double t = floor / (unit * (1.0 + QUANT_SLACK));
    return t >= 9.0e18 ? INT64_MAX : (int64_t)t; /* rounded down: conservative */
}

/* The ranking itself (no Python objects, the GIL may be released): 0, or -1 for a list
   not ascending within 1..n_rows. Writes the kept documents, best first, to heap[0..*hn). */
static int
quant_core(QList *ls, Py_ssize_t nl, const int *order, double unit, Py_ssize_t n_rows,
           const uint8_t *bl, const int32_t *cd, Best *heap, Py_ssize_t k, Py_ssize_t window,
           double theta0, Py_ssize_t *hn_out)
{
    uint16_t acc[QUANT_WINDOW];
    uint64_t bits[QUANT_WINDOW / 64];
    uint16_t surv[QUANT_WINDOW], surv_q[QUANT_WINDOW];
    double *fbuf = NULL; /* the window's exact sums, when many chunks survive (lazily) */
    int64_t pre[QUANT_MAX_LISTS + 1]; /* pre[j]: the bounds of order[0..j) added up */
    memset(acc, 0, sizeof acc);
    memset(bits, 0, sizeof bits);
    pre[0] = 0;
    for (Py_ssize_t j = 0; j < nl; j++)
        pre[j + 1] = pre[j] + ls[order[j]].qmax;
    Py_ssize_t hn = 0, ne = 0; /* order[0..ne): non-essential (their bounds cannot reach) */
    double floor = -1.0;
    /* theta0: the k-th best document score of a sample (quant_seed), a floor from the start. */
    const int64_t need0 = quant_need(theta0, unit);
    int64_t need = need0;
    int64_t doc = -1;
    Best cur = {0.0, 0};
    Py_ssize_t width = window < QUANT_FIRST ? window : QUANT_FIRST;
    for (;;) {
        /* The window starts at the lowest rowid an essential list has left. */
        uint32_t base = UINT32_MAX;
        for (Py_ssize_t j = ne; j < nl; j++) {
            const QList *l = &ls[order[j]];
            if (l->cur < l->n && l->id[l->cur] < base)
                base = l->id[l->cur];
        }
        if (base == UINT32_MAX)
            break;
        const int64_t end = (int64_t)base + width;
        if (width < window)
            width *= 2;
        /* Essential lists: their quantised impacts into the window's accumulator. */
        Py_ssize_t ess_postings = 0;
        for (Py_ssize_t j = ne; j < nl; j++) {
            QList *l = &ls[order[j]];
            Py_ssize_t p = l->cur;
            l->seek = p;
            uint32_t prev = l->prev;
            const uint32_t *id = l->id;
            const uint8_t *q = l->q;
            for (; p < l->n && (int64_t)id[p] < end; p++) {
                const uint32_t r = id[p];
                if (r <= prev || r > (uint64_t)n_rows) {
                    free(fbuf);
                    return -1;
                }
                prev = r;
                const uint32_t off = r - base;
                acc[off] = (uint16_t)(acc[off] + q[p]);
                bits[off >> 6] |= (uint64_t)1 << (off & 63);
            }
            l->prev = prev;
            ess_postings += p - l->cur;
            l->cur = p;
        }
        const int64_t ne_bound = pre[ne];
        /* Touched chunks in ascending rowid whose bound can reach the need (at the window's
           start: the need only rises, so this is a superset of those it keeps). */
        Py_ssize_t n_surv = 0;
        const Py_ssize_t words = (Py_ssize_t)((end - base + 63) / 64);
        for (Py_ssize_t w = 0; w < words; w++) {
            uint64_t word = bits[w];
            if (!word)
                continue;
            bits[w] = 0;
            while (word) {
                const uint32_t off = (uint32_t)(w * 64 + __builtin_ctzll(word));
                word &= word - 1;
                const int64_t s = acc[off];
                acc[off] = 0;
                if (s + ne_bound < need || (bl && bl[base + off]))
                    continue;
                surv[n_surv] = (uint16_t)off;
                surv_q[n_surv++] = (uint16_t)s;
            }
        }
        if (!n_surv)
            goto next;
        /* Their exact scores: every list's impact in phrase order from 0.0. Few survivors:
           each list's cursor gallops to each one. Many (more list probes than the window has
           postings): every list's postings in the window are added into a float64 buffer
           instead, in phrase order, the same IEEE additions. */
        int dense = n_surv * nl > 2 * ess_postings + 64;
        if (dense) {
            if (!fbuf && !(fbuf = calloc((size_t)QUANT_WINDOW, sizeof(double))))
                dense = 0; /* no memory: probe instead (the same scores) */
        }
        if (dense) {
            for (Py_ssize_t i = 0; i < nl; i++) {
                QList *l = &ls[i];
                Py_ssize_t p = qgallop(l, l->seek, base);
                for (; p < l->n && (int64_t)l->id[p] < end; p++) {
                    if (l->id[p] < base) { /* a list out of order */
                        free(fbuf);
                        return -1;
                    }
                    fbuf[l->id[p] - base] += l->im[p];
                }
                l->seek = p;
            }
        }
        for (Py_ssize_t j = 0; j < n_surv; j++) {
            const uint32_t off = surv[j];
            const uint32_t r = base + off;
            double score = 0.0;
            if (dense) {
                score = fbuf[off];
            } else {
                if (surv_q[j] + ne_bound < need) /* the need rose since */
                    continue;
                for (Py_ssize_t i = 0; i < nl; i++) {
                    QList *l = &ls[i];
                    const Py_ssize_t p = qgallop(l, l->seek, r);
                    l->seek = p;
                    if (p < l->n && l->id[p] == r)
                        score += l->im[p];
                }
            }
            if (cd[r] != doc) {
                if (doc >= 0) {
                    heap_offer(heap, &hn, k, cur);
                    if (hn == k && heap[0].score != floor) {
                        floor = heap[0].score;
                        need = quant_need(floor, unit);
                        if (need < need0)
                            need = need0;
                    }
                }
                doc = cd[r];
                cur.score = score;
                cur.chunk = r;
            } else if (score > cur.score) { /* ties: the lower rowid, seen first, stays */
                cur.score = score;
                cur.chunk = r;
            }
        }
        if (dense)
            memset(fbuf, 0, sizeof(double) * (size_t)(end - base));
    next:
        /* More lists become non-essential as the floor rises (it only rises). */
        while (ne < nl && pre[ne + 1] < need)
            ne++;
        /* A non-essential list's rescoring cursor stays where the last chunk left it; its
           accumulation cursor is not used again. */
    }
    free(fbuf);
    /* Rowids of the lists' unread tails are not checked: they were never used. */
    if (doc >= 0)
        heap_offer(heap, &hn, k, cur);
    qsort(heap, (size_t)hn, sizeof(Best), cmp_best);
    *hn_out = hn;
    return 0;
}

static int
cmp_u32(const void *x, const void *y)
{
    const uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

static int
cmp_desc(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

/* A floor known before the traversal: the k-th best document score among a sample of chunks
   (each list's first postings of its largest quant, `cand` of them in all, gathered by the
   caller), each scored exactly as the traversal scores it. Any k distinct documents' scores
   bound the true k-th from below, so pruning below it is exact; the sample only makes the
   floor high from the first window (without it, every chunk of the first windows is rescored
   while the heap fills). 0.0 when the sample holds fewer than k documents. `rows` is sorted
   and deduplicated here; `scores` has room for n doubles. */
static double
quant_seed(QList *ls, Py_ssize_t nl, uint32_t *rows, Py_ssize_t n, Py_ssize_t k,
           const uint8_t *bl, const int32_t *cd, double *scores)
{
    qsort(rows, (size_t)n, sizeof(uint32_t), cmp_u32);
    Py_ssize_t m = 0, docs = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (i == 0 || rows[i] != rows[i - 1])
            rows[m++] = rows[i];
    int64_t doc = -1;
    Py_ssize_t at[QUANT_MAX_LISTS]; /* per list, a cursor that only moves forward: rows ascend */
    for (Py_ssize_t j = 0; j < nl; j++)
        at[j] = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        const uint32_t r = rows[i];
        if (bl && bl[r])
            continue;
        double score = 0.0;
        for (Py_ssize_t j = 0; j < nl; j++) { /* phrase order, from 0.0 */
            const Py_ssize_t p = at[j] = qgallop(&ls[j], at[j], r);
            if (p < ls[j].n && ls[j].id[p] == r)
                score += ls[j].im[p];
        }
        if (cd[r] != doc) {
            doc = cd[r];
            scores[docs++] = score;
        } else if (score > scores[docs - 1]) {
            scores[docs - 1] = score;
        }
    }
    if (docs < k)
        return 0.0;
    qsort(scores, (size_t)docs, sizeof(double), cmp_desc);
    return scores[k - 1];
}

static int
cmp_qmax(const void *x, const void *y, void *ctx)
{
    const QList *ls = (const QList *)ctx;
    const int a = *(const int *)x, b = *(const int *)y;
    if (ls[a].qmax != ls[b].qmax)
        return ls[a].qmax < ls[b].qmax ? -1 : 1;
    return (a > b) - (a < b);
}

PyDoc_STRVAR(rank_quant_doc,
"rank_quant(lists, unit, n_rows, blocked, chunk_doc, k, window=16384) -> list[tuple[int, float]]\n\n"
"The k best documents of the lists (phrase order), as (best chunk rowid, score) in FTS5's\n"
"order, traversed over 8-bit quantised impacts: each list is (chunks uint32, quants uint8,\n"
"impacts float64) with quants[i] * unit >= impacts[i] (the caller's quantisation). MaxScore\n"
"and the per-window accumulation run on the quants; a chunk whose quantised bound can reach\n"
"the k-th document's exact score is rescored from the impacts, in phrase order from 0.0 (the\n"
"same bits as rank_blocks). Blocked chunks (a bool per rowid, or None) are skipped. Raises\n"
"ValueError for inconsistent arguments or a visited rowid not ascending within 1..n_rows.\n"
"`window`: the longest window of rowids (a power of two, 64..16384; the first windows are\n"
"shorter, 1,024 rowids doubling up to it); smaller ones are for tests. Releases the GIL when\n"
"the lists hold at least 16,384 postings.");

static PyObject *
rank_quant(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *lists_obj, *blocked_obj, *out = NULL, *seq = NULL;
    double unit;
    Py_ssize_t n_rows, k, nl = 0, got = 0, hn = 0, window = QUANT_WINDOW;
    Py_buffer docs = {0}, blocked = {0};
    Py_buffer bufs[3 * QUANT_MAX_LISTS];
    QList ls[QUANT_MAX_LISTS];
    int order[QUANT_MAX_LISTS];
    Best *heap = NULL;
    uint32_t *seed = NULL;
    double *seed_scores = NULL;
    if (!PyArg_ParseTuple(args, "OdnOy*n|n:rank_quant", &lists_obj, &unit, &n_rows, &blocked_obj,
                          &docs, &k, &window))
        return NULL;
    if (blocked_obj != Py_None && PyObject_GetBuffer(blocked_obj, &blocked, PyBUF_SIMPLE) < 0)
        goto done;
    if (check_buffer(&docs, 4, "chunk_doc"))
        goto done;
    if (!(seq = PySequence_Fast(lists_obj, "rank_quant: lists must be a sequence")))
        goto done;
    nl = PySequence_Fast_GET_SIZE(seq);
    if (nl < 1 || nl > QUANT_MAX_LISTS || k < 1 || window < 64 || window > QUANT_WINDOW ||
        (window & (window - 1)) || n_rows < 0 || !(unit > 0.0) ||
        docs.len / 4 < n_rows + 1 || (blocked.obj && blocked.len < n_rows + 1) || n_rows >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "rank_quant: inconsistent arguments");
        goto done;
    }
    Py_ssize_t total = 0;
    /* The seed sample: per list, its first `per` postings of its largest quant. */
    const Py_ssize_t per = 2 * k / nl + 1;
    seed = PyMem_RawMalloc(sizeof(uint32_t) * (size_t)(per * nl) + 1);
    seed_scores = PyMem_RawMalloc(sizeof(double) * (size_t)(per * nl) + 1);
    Py_ssize_t n_seed = 0;
    if (!seed || !seed_scores) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nl; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        Py_buffer *b = &bufs[3 * i];
        if (!PyArg_ParseTuple(t, "y*y*y*:rank_quant list", &b[0], &b[1], &b[2]))
            goto done;
        got = i + 1;
        if (check_buffer(&b[0], 4, "chunks") || check_buffer(&b[2], 8, "impacts"))
            goto done;
        const Py_ssize_t n = b[0].len / 4;
        if (b[1].len != n || b[2].len / 8 != n) {
            PyErr_SetString(PyExc_ValueError, "rank_quant: a list's arrays differ in length");
            goto done;
        }
        QList *l = &ls[i];
        l->id = (const uint32_t *)b[0].buf;
        l->q = (const uint8_t *)b[1].buf;
        l->im = (const double *)b[2].buf;
        l->n = n;
        l->cur = l->seek = 0;
        l->prev = 0;
        l->qmax = 0;
        /* One byte a posting: the list's own bound (a max reduction the compiler vectorises),
           then its first `per` postings of that quant (usually found early), rowids within
           range only. */
        uint8_t qmax = 0;
        for (Py_ssize_t p = 0; p < n; p++)
            qmax = l->q[p] > qmax ? l->q[p] : qmax;
        l->qmax = qmax;
        Py_ssize_t got_here = 0;
        for (Py_ssize_t p = 0; p < n && got_here < per; p++)
            if (l->q[p] == qmax) {
                got_here++;
                if (l->id[p] >= 1 && l->id[p] <= (uint64_t)n_rows)
                    seed[n_seed++] = l->id[p];
            }
        order[i] = (int)i;
        total += n;
    }
    qsort_r(order, (size_t)nl, sizeof(int), cmp_qmax, ls);
    const double theta0 = quant_seed(ls, nl, seed, n_seed, k, blocked.obj ? (const uint8_t *)blocked.buf : NULL,
                                     (const int32_t *)docs.buf, seed_scores);
    if (!(heap = PyMem_RawMalloc(sizeof(Best) * (size_t)k))) {
        PyErr_NoMemory();
        goto done;
    }
    const uint8_t *bl = blocked.obj ? (const uint8_t *)blocked.buf : NULL;
    int rc;
    if (total >= 16384) {
        Py_BEGIN_ALLOW_THREADS
        rc = quant_core(ls, nl, order, unit, n_rows, bl, (const int32_t *)docs.buf, heap, k, window, theta0, &hn);
        Py_END_ALLOW_THREADS
    } else {
        rc = quant_core(ls, nl, order, unit, n_rows, bl, (const int32_t *)docs.buf, heap, k, window, theta0, &hn);
    }
    if (rc < 0) {
        PyErr_SetString(PyExc_ValueError, BAD_LIST);
        goto done;
    }
    out = best_pairs(heap, hn);
done:
    PyMem_RawFree(heap);
    PyMem_RawFree(seed);
    PyMem_RawFree(seed_scores);
    for (Py_ssize_t i = 0; i < got; i++)
        for (int j = 0; j < 3; j++)
            if (bufs[3 * i + j].obj)
                PyBuffer_Release(&bufs[3 * i + j]);
    Py_XDECREF(seq);
    if (blocked.obj)
        PyBuffer_Release(&blocked);
    if (docs.obj)
        PyBuffer_Release(&docs);
    return out;
}

#endif
