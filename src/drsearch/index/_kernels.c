/*
 * drsearch.index._kernels: exact BM25 ranking of sparse posting lists, in C (rank_blocks, and
 * rank_maxscore: the same results with exact dynamic pruning).
 *
 * Optional: drsearch.index.scoring falls back to numpy when this module is missing, and both
 * paths give bit-identical results (the tests compare them). The arithmetic here is the same
 * IEEE-754 double additions in the same order as numpy's np.add.at (one term after another,
 * in phrase order), and the build disables floating-point contraction, so sums are identical.
 *
 * Both release the GIL while they loop: threads of one server process rank in
 * parallel. Every rowid is bounds-checked; a damaged posting list raises ValueError rather
 * than touching memory outside the score buffer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static int
check_buffer(const Py_buffer *b, Py_ssize_t itemsize, const char *what)
{
    if (b->len % itemsize != 0) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of %zd-byte items",
                     what, b->len, itemsize);
        return -1;
    }
    return 0;
}

/* The smallest positive double: a threshold that keeps every scored chunk (scores are > 0). */
#define ANY_SCORE 4.9406564584124654e-324

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
heap_sift_down(Best *h, Py_ssize_t n, Py_ssize_t i)
{
    for (;;) {
        Py_ssize_t l = 2 * i + 1, r = l + 1, w = i;
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
heap_offer(Best *h, Py_ssize_t *n, Py_ssize_t k, Best x)
{
    if (*n < k) {
        Py_ssize_t j = (*n)++;
        h[j] = x;
        while (j > 0) {
            Py_ssize_t p = (j - 1) / 2;
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

static int
cmp_best(const void *x, const void *y)
{
    return better((const Best *)x, (const Best *)y) ? -1 : better((const Best *)y, (const Best *)x);
}

/* ------------------------------------------------------------------------------------------
 * rank_blocks: accumulate and select block by block in a small (L2-sized) score buffer.
 *
 * The score array of a whole corpus (8 bytes per chunk) does not fit in a core's L2 cache,
 * and after other work has run it is cold: every posting then costs a miss to L3 or DRAM,
 * and so do the selection scan and the zeroing. Here the chunk rowids are cut into ranges
 * of `block` chunks; for each range every term adds its postings that fall in it (in phrase
 * order: each chunk's sum is built exactly as before), then the range is scanned against a
 * running k-th best document score and zeroed, all while it sits in L2.
 * ------------------------------------------------------------------------------------------ */

#if defined(__unix__) || defined(__APPLE__)
#include <time.h>
static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#define HAVE_CLOCK 1
#else
#define HAVE_CLOCK 0
#endif

PyDoc_STRVAR(rank_blocks_doc,
"rank_blocks(chunks, impacts, n_rows, blocked, chunk_doc, k, margin, buf, out_chunks,\n"
"            out_scores, time_budget) -> (n_out, n_full, cut)\n\n"
"chunks/impacts: sequences of uint32 / float64 buffers, one pair per term in phrase order\n"
"(rowids ascending, all < n_rows + 1). buf: a float64 buffer of zeros (its length is the\n"
"block size; handed back zeroed). Documents' chunks must be consecutive rowids.\n"
"margin < 0: writes the best chunk of each of the k best documents, best first (score\n"
"descending, then lower rowid). margin >= 0: writes, ascending, every chunk scoring at least\n"
"cut - margin - 2e-9*|cut| (cut = the k-th best document's score) when k documents are\n"
"scored. n_full: min(k, documents scored). time_budget: seconds (<= 0: none); when it runs\n"
"out, returns (-1, 0, 0.0).");

static PyObject *
rank_blocks(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ids_seq, *imps_seq, *blocked_obj;
    Py_ssize_t n_rows, k;
    double margin, budget;
    Py_buffer docs, buf, out_ids, out_scores;
    Py_buffer blocked = {0};
    if (!PyArg_ParseTuple(args, "OOnOy*ndw*w*w*d:rank_blocks", &ids_seq, &imps_seq, &n_rows,
                          &blocked_obj, &docs, &k, &margin, &buf, &out_ids, &out_scores, &budget))
        return NULL;
    PyObject *result = NULL, *ids_fast = NULL, *imps_fast = NULL;
    Py_buffer *tb = NULL; /* 2 per term: ids, impacts */
    Py_ssize_t n_terms = 0, n_got = 0;
    Best *heap = NULL;
    Py_ssize_t *pos = NULL;
    int have_blocked = 0;
    ids_fast = PySequence_Fast(ids_seq, "chunks must be a sequence");
    imps_fast = PySequence_Fast(imps_seq, "impacts must be a sequence");
    if (!ids_fast || !imps_fast)
        goto done;
    n_terms = PySequence_Fast_GET_SIZE(ids_fast);
    if (PySequence_Fast_GET_SIZE(imps_fast) != n_terms) {
        PyErr_SetString(PyExc_ValueError, "one impacts buffer per chunks buffer");
        goto done;
    }
    if (blocked_obj != Py_None) {
        if (PyObject_GetBuffer(blocked_obj, &blocked, PyBUF_SIMPLE) < 0)
            goto done;
        have_blocked = 1;
    }
    const Py_ssize_t n = n_rows + 1;
    if (n_rows < 0 || k < 1 || check_buffer(&docs, 4, "chunk_doc") || check_buffer(&buf, 8, "buf") ||
        check_buffer(&out_ids, 8, "out_chunks") || check_buffer(&out_scores, 8, "out_scores")) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "n_rows must be >= 0 and k >= 1");
        goto done;
    }
    if (docs.len / 4 < n || out_ids.len / 8 < n || out_scores.len / 8 < n ||
        (have_blocked && blocked.len < n) || buf.len < 8 * 64) {
        PyErr_SetString(PyExc_ValueError, "chunk_doc, blocked, buf or output buffers too short");
        goto done;
    }
    tb = PyMem_Calloc((size_t)(2 * n_terms + 1), sizeof(Py_buffer));
    pos = PyMem_Calloc((size_t)(n_terms + 1), sizeof(Py_ssize_t));
    heap = PyMem_Malloc(sizeof(Best) * (size_t)k);
    if (!tb || !pos || !heap) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(ids_fast, t), &tb[2 * t], PyBUF_SIMPLE) < 0)
            goto done;
        n_got++;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(imps_fast, t), &tb[2 * t + 1], PyBUF_SIMPLE) < 0)
            goto done;
        n_got++;
        if (check_buffer(&tb[2 * t], 4, "chunks") || check_buffer(&tb[2 * t + 1], 8, "impacts"))
            goto done;
        if (tb[2 * t].len / 4 != tb[2 * t + 1].len / 8) {
            PyErr_SetString(PyExc_ValueError, "a term has different numbers of chunks and impacts");
            goto done;
        }
    }
    double *acc = (double *)buf.buf;
    const Py_ssize_t block = buf.len / 8;
    const int32_t *cd = (const int32_t *)docs.buf;
    const uint8_t *bl = have_blocked ? (const uint8_t *)blocked.buf : NULL;
    int64_t *oi = (int64_t *)out_ids.buf;
    double *os = (double *)out_scores.buf;
    Py_ssize_t hn = 0, n_out = 0;
    int bad = 0, late = 0;
    double cut = 0.0;
    const int collect_all = margin >= 0.0;
    Py_BEGIN_ALLOW_THREADS
#if HAVE_CLOCK
    const double deadline = budget > 0.0 ? now_s() + budget : 0.0;
#endif
    Best cur = {0.0, -1};
    int32_t cur_doc = -1;
    double theta = 0.0, floor_ = ANY_SCORE; /* skip chunks below floor_ */
    for (Py_ssize_t lo = 0; lo < n && !bad; lo += block) {
        const Py_ssize_t hi = lo + block < n ? lo + block : n;
        for (Py_ssize_t t = 0; t < n_terms; t++) {
            const uint32_t *id = (const uint32_t *)tb[2 * t].buf;
            const double *im = (const double *)tb[2 * t + 1].buf;
            const Py_ssize_t len = tb[2 * t].len / 4;
            Py_ssize_t p = pos[t];
            for (; p < len; p++) {
                const Py_ssize_t c = (Py_ssize_t)id[p];
                if (c >= hi)
                    break;
                if (c < lo) { /* not ascending: a damaged list */
                    bad = 1;
                    break;
                }
                acc[c - lo] += im[p];
            }
            pos[t] = p;
        }
        /* Scan the block: chunks at or above the floor, consecutive per document. */
        const Py_ssize_t m = hi - lo;
        for (Py_ssize_t c = 0; c < m; c += 8) {
            const Py_ssize_t e = c + 8 < m ? c + 8 : m;
#if defined(__SSE2__)
            if (e - c == 8) {
                const __m128d tv = _mm_set1_pd(floor_);
                const __m128d m0 = _mm_cmpge_pd(_mm_loadu_pd(acc + c), tv);
                const __m128d m1 = _mm_cmpge_pd(_mm_loadu_pd(acc + c + 2), tv);
                const __m128d m2 = _mm_cmpge_pd(_mm_loadu_pd(acc + c + 4), tv);
                const __m128d m3 = _mm_cmpge_pd(_mm_loadu_pd(acc + c + 6), tv);
                if (!_mm_movemask_pd(_mm_or_pd(_mm_or_pd(m0, m1), _mm_or_pd(m2, m3))))
                    continue;
            }
#endif
            for (Py_ssize_t j = c; j < e; j++) {
                const double v = acc[j];
                const int64_t row = (int64_t)(lo + j);
                if (!(v >= floor_) || (bl && bl[row]))
                    continue;
                const int32_t d = cd[row];
                if (d != cur_doc) {
                    if (cur_doc >= 0)
                        heap_offer(heap, &hn, k, cur);
                    cur_doc = d;
                    cur = (Best){v, row};
                } else if (v > cur.score) {
                    cur = (Best){v, row};
                }
                if (collect_all) {
                    oi[n_out] = row;
                    os[n_out] = v;
                    n_out++;
                }
            }
            if (hn == k && heap[0].score > theta) {
                theta = heap[0].score;
                floor_ = collect_all ? theta - margin - 2.0 * (fabs(theta) * 1e-9) : theta;
                if (!(floor_ > 0.0))
                    floor_ = ANY_SCORE;
            }
        }
        memset(acc, 0, sizeof(double) * (size_t)m);
#if HAVE_CLOCK
        if (deadline > 0.0 && now_s() > deadline) {
            late = 1;
            break;
        }
#endif
    }
    for (Py_ssize_t t = 0; t < n_terms && !bad && !late; t++)
        if (pos[t] != tb[2 * t].len / 4)
            bad = 1; /* a rowid beyond the last chunk */
    if (cur_doc >= 0 && !bad && !late)
        heap_offer(heap, &hn, k, cur);
    if (late || bad) {
        memset(acc, 0, sizeof(double) * (size_t)block);
    } else if (!collect_all) {
        qsort(heap, (size_t)hn, sizeof(Best), cmp_best);
        for (Py_ssize_t i = 0; i < hn; i++) {
            oi[i] = heap[i].chunk;
            os[i] = heap[i].score;
        }
        n_out = hn;
        if (hn == k)
            cut = heap[hn - 1].score;
    } else if (hn == k) {
        cut = heap[0].score;
        const double t2 = cut - margin - 2.0 * (fabs(cut) * 1e-9);
        Py_ssize_t w = 0;
        for (Py_ssize_t i = 0; i < n_out; i++)
            if (os[i] >= t2) {
                oi[w] = oi[i];
                os[w] = os[i];
                w++;
            }
        n_out = w;
    } else {
        n_out = 0;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a posting list is not ascending or holds a rowid "
                                          "beyond the last chunk");
        goto done;
    }
    if (late) {
        result = Py_BuildValue("(nnd)", (Py_ssize_t)-1, (Py_ssize_t)0, 0.0);
        goto done;
    }
    result = Py_BuildValue("(nnd)", n_out, hn, cut);
done:
    for (Py_ssize_t i = 0; i < n_got; i++)
        PyBuffer_Release(&tb[i]);
    PyMem_Free(tb);
    PyMem_Free(pos);
    PyMem_Free(heap);
    Py_XDECREF(ids_fast);
    Py_XDECREF(imps_fast);
    PyBuffer_Release(&docs);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&out_ids);
    PyBuffer_Release(&out_scores);
    if (have_blocked)
        PyBuffer_Release(&blocked);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * rank_maxscore: rank_blocks' results, bit for bit, with MaxScore's exact dynamic pruning.
 *
 * Every term has an upper bound of its impacts (the stored max_impact). Sorted by bound, the
 * smallest terms whose bounds add up to less than the running floor are "non-essential": a
 * chunk found only in their lists scores below the floor, so it cannot be in the answer (nor
 * among the collected candidates) and is never looked at. Only the essential terms' postings
 * are accumulated; as the floor rises, more terms become non-essential (checked between
 * blocks), so long lists of common terms are mostly skipped.
 *
 * Blocks are no longer fixed 32K ranges of the corpus: a block starts at the lowest rowid any
 * essential term has left, so ranges without postings cost nothing, and a bitmap of touched
 * chunks replaces the full scan and zeroing when a block holds few postings. The first blocks
 * are short (1,024 rowids, doubling up to the buffer's length), so that the split is made
 * early. A query's cost
 * follows the postings it touches, not the corpus size.
 *
 * Exactness. A touched chunk's partial sum v (essential terms only) plus the non-essential
 * bounds bounds its score from above, up to rounding: the test keeps a relative slack of
 * 2e-10 (far above the rounding of any sum of positive doubles with fewer than 10^5 terms),
 * so it may keep a few chunks too many but never drops one that could qualify. Every kept
 * chunk is then rescored exactly: its impact from every term's list (found by galloping a
 * per-term cursor forward: kept chunks ascend), added in phrase order from 0.0 -- the same
 * IEEE additions rank_blocks and np.add.at make, since an absent term adds exactly +0.0.
 * With no non-essential term, v is already that exact sum and is used as is. Before the
 * rescoring, MaxScore's check probes the non-essential lists, largest bound first, and drops
 * the chunk as soon as the rest of their bounds cannot lift it to the floor. In a range with
 * many touched chunks, those per-chunk probes cost more than adding the non-essential
 * lists' postings of the range: then v is accumulated over every term (in another order: a
 * bound up to rounding, covered by the same slack) and only chunks near the floor are
 * rescored.
 *
 * The bounds are corpus-wide (one per term). They prune well when the heavy terms are rare
 * and the light ones long; for queries of many long lists of similar weight, the sequential
 * pass of rank_blocks is cheaper (drsearch.index.scoring picks per query).
 * ------------------------------------------------------------------------------------------ */

#define PRUNE_SLACK 2e-10

typedef struct {
    double bound;
    Py_ssize_t term;
} ByBound;

static int
cmp_bound(const void *x, const void *y)
{
    const ByBound *a = (const ByBound *)x, *b = (const ByBound *)y;
    if (a->bound != b->bound)
        return a->bound < b->bound ? -1 : 1;
    return (a->term > b->term) - (a->term < b->term);
}

/* The first position >= p whose rowid is >= c (len if none): exponential then binary search. */
static inline Py_ssize_t
gallop(const uint32_t *id, Py_ssize_t p, Py_ssize_t len, uint32_t c)
{
    if (p >= len || id[p] >= c)
        return p;
    Py_ssize_t lo = p, hi = p + 1, step = 1; /* id[lo] < c */
    while (hi < len && id[hi] < c) {
        lo = hi;
        step <<= 1;
        hi = lo + step;
    }
    if (hi > len)
        hi = len;
    while (hi - lo > 1) { /* id[lo] < c; hi == len or id[hi] >= c */
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (id[mid] < c)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

PyDoc_STRVAR(rank_maxscore_doc,
"rank_maxscore(chunks, impacts, bounds, n_rows, blocked, chunk_doc, k, margin, buf,\n"
"              out_chunks, out_scores, time_budget[, counts]) -> (n_out, n_full, cut)\n\n"
"rank_blocks with exact MaxScore pruning: the same arguments plus bounds, a float64 buffer\n"
"with one upper bound per term (>= every impact of its list), and bit for bit the same\n"
"results. Only the postings it visits are checked: a list whose last rowid is beyond the\n"
"last chunk raises ValueError, as does a visited rowid out of order. counts: an optional\n"
"int64 buffer of 2, set to (postings accumulated, chunks rescored): what pruning left.");

static PyObject *
rank_maxscore(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ids_seq, *imps_seq, *blocked_obj;
    Py_ssize_t n_rows, k;
    double margin, budget;
    Py_buffer bounds_b, docs, buf, out_ids, out_scores;
    Py_buffer blocked = {0}, counts = {0};
    if (!PyArg_ParseTuple(args, "OOy*nOy*ndw*w*w*d|w*:rank_maxscore", &ids_seq, &imps_seq,
                          &bounds_b, &n_rows, &blocked_obj, &docs, &k, &margin, &buf, &out_ids,
                          &out_scores, &budget, &counts))
        return NULL;
    PyObject *result = NULL, *ids_fast = NULL, *imps_fast = NULL;
    Py_buffer *tb = NULL; /* 2 per term: ids, impacts */
    Py_ssize_t n_terms = 0, n_got = 0;
    Best *heap = NULL;
    Py_ssize_t *pos = NULL, *rc = NULL;
    ByBound *ord = NULL;
    double *pre = NULL; /* pre[j]: the sum of ord[0..j)'s bounds */
    uint8_t *ess = NULL;
    uint64_t *bits = NULL;
    int have_blocked = 0;
    ids_fast = PySequence_Fast(ids_seq, "chunks must be a sequence");
    imps_fast = PySequence_Fast(imps_seq, "impacts must be a sequence");
    if (!ids_fast || !imps_fast)
        goto done;
    n_terms = PySequence_Fast_GET_SIZE(ids_fast);
    if (PySequence_Fast_GET_SIZE(imps_fast) != n_terms) {
        PyErr_SetString(PyExc_ValueError, "one impacts buffer per chunks buffer");
        goto done;
    }
    if (check_buffer(&bounds_b, 8, "bounds"))
        goto done;
    if (counts.obj && counts.len < 16) {
        PyErr_SetString(PyExc_ValueError, "counts: room for 2 int64 needed");
        goto done;
    }
    if (bounds_b.len / 8 != n_terms) {
        PyErr_SetString(PyExc_ValueError, "one bound per term");
        goto done;
    }
    if (blocked_obj != Py_None) {
        if (PyObject_GetBuffer(blocked_obj, &blocked, PyBUF_SIMPLE) < 0)
            goto done;
        have_blocked = 1;
    }
    const Py_ssize_t n = n_rows + 1;
    if (n_rows < 0 || k < 1 || check_buffer(&docs, 4, "chunk_doc") || check_buffer(&buf, 8, "buf") ||
        check_buffer(&out_ids, 8, "out_chunks") || check_buffer(&out_scores, 8, "out_scores")) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "n_rows must be >= 0 and k >= 1");
        goto done;
    }
    if (docs.len / 4 < n || out_ids.len / 8 < n || out_scores.len / 8 < n ||
        (have_blocked && blocked.len < n) || buf.len < 8 * 64) {
        PyErr_SetString(PyExc_ValueError, "chunk_doc, blocked, buf or output buffers too short");
        goto done;
    }
    const Py_ssize_t block = buf.len / 8;
    const Py_ssize_t n_words = (block + 63) / 64;
    tb = PyMem_Calloc((size_t)(2 * n_terms + 1), sizeof(Py_buffer));
    pos = PyMem_Calloc((size_t)(n_terms + 1), sizeof(Py_ssize_t));
    rc = PyMem_Calloc((size_t)(n_terms + 1), sizeof(Py_ssize_t));
    ord = PyMem_Calloc((size_t)(n_terms + 1), sizeof(ByBound));
    pre = PyMem_Calloc((size_t)(n_terms + 1), sizeof(double));
    ess = PyMem_Calloc((size_t)(n_terms + 1), 1);
    bits = PyMem_Calloc((size_t)n_words, sizeof(uint64_t));
    heap = PyMem_Malloc(sizeof(Best) * (size_t)k);
    if (!tb || !pos || !rc || !ord || !pre || !ess || !bits || !heap) {
        PyErr_NoMemory();
        goto done;
    }
    const double *bounds = (const double *)bounds_b.buf;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(ids_fast, t), &tb[2 * t], PyBUF_SIMPLE) < 0)
            goto done;
        n_got++;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(imps_fast, t), &tb[2 * t + 1], PyBUF_SIMPLE) < 0)
            goto done;
        n_got++;
        if (check_buffer(&tb[2 * t], 4, "chunks") || check_buffer(&tb[2 * t + 1], 8, "impacts"))
            goto done;
        const Py_ssize_t len = tb[2 * t].len / 4;
        if (len != tb[2 * t + 1].len / 8) {
            PyErr_SetString(PyExc_ValueError, "a term has different numbers of chunks and impacts");
            goto done;
        }
        if (len && (Py_ssize_t)((const uint32_t *)tb[2 * t].buf)[len - 1] >= n) {
            PyErr_SetString(PyExc_ValueError, "a posting list is not ascending or holds a rowid "
                                              "beyond the last chunk");
            goto done;
        }
        if (!(bounds[t] >= 0.0)) {
            PyErr_SetString(PyExc_ValueError, "a term's bound is negative or NaN");
            goto done;
        }
        ord[t] = (ByBound){bounds[t], t};
        ess[t] = 1;
    }
    qsort(ord, (size_t)n_terms, sizeof(ByBound), cmp_bound);
    for (Py_ssize_t j = 0; j < n_terms; j++)
        pre[j + 1] = pre[j] + ord[j].bound;
    double *acc = (double *)buf.buf;
    const int32_t *cd = (const int32_t *)docs.buf;
    const uint8_t *bl = have_blocked ? (const uint8_t *)blocked.buf : NULL;
    int64_t *oi = (int64_t *)out_ids.buf;
    double *os = (double *)out_scores.buf;
    Py_ssize_t hn = 0, n_out = 0;
    int bad = 0, late = 0;
    double cut = 0.0;
    const int collect_all = margin >= 0.0;
    int64_t n_accumulated = 0, n_rescored = 0;
    Py_BEGIN_ALLOW_THREADS
#if HAVE_CLOCK
    const double deadline = budget > 0.0 ? now_s() + budget : 0.0;
#endif
    Best cur = {0.0, -1};
    int32_t cur_doc = -1;
    double theta = 0.0, floor_ = ANY_SCORE; /* no chunk below floor_ matters */
    Py_ssize_t ne = 0;                      /* ord[0..ne) are non-essential */
    double ne_sum = 0.0;                    /* the sum of their bounds */
    double thr = floor_;                    /* keep a touched chunk when its partial v >= thr */
    Py_ssize_t span = block < 1024 ? block : 1024; /* this block's rowid range */
    int since_clock = 63; /* the first block looks at the clock */
    int64_t clock_mark = 0;
    for (;;) {
        Py_ssize_t lo = n;
        for (Py_ssize_t t = 0; t < n_terms; t++) {
            if (!ess[t] || pos[t] >= tb[2 * t].len / 4)
                continue;
            const Py_ssize_t c = (Py_ssize_t)((const uint32_t *)tb[2 * t].buf)[pos[t]];
            if (c < lo)
                lo = c;
        }
        if (lo >= n)
            break;
        const Py_ssize_t hi = lo + span < n ? lo + span : n;
        if (span < block) /* short first blocks: pruning starts as soon as the heap is full */
            span = 2 * span < block ? 2 * span : block;
        Py_ssize_t added = 0, top = 0; /* postings added; 1 + the highest offset touched */
        for (Py_ssize_t t = 0; t < n_terms && !bad; t++) {
            if (!ess[t])
                continue;
            const uint32_t *id = (const uint32_t *)tb[2 * t].buf;
            const double *im = (const double *)tb[2 * t + 1].buf;
            const Py_ssize_t len = tb[2 * t].len / 4;
            const Py_ssize_t p0 = pos[t];
            Py_ssize_t p = p0;
            for (; p < len; p++) {
                const Py_ssize_t c = (Py_ssize_t)id[p];
                if (c >= hi)
                    break;
                if (c < lo) { /* not ascending: a damaged list */
                    bad = 1;
                    break;
                }
                const Py_ssize_t off = c - lo;
                acc[off] += im[p];
                bits[off >> 6] |= (uint64_t)1 << (off & 63);
            }
            if (p > p0) {
                added += p - p0;
                if ((Py_ssize_t)id[p - 1] - lo + 1 > top)
                    top = (Py_ssize_t)id[p - 1] - lo + 1;
            }
            pos[t] = p;
        }
        if (bad)
            break;
        const int exact = ne == 0;
        /* Checking each touched chunk against the non-essential lists (a gallop per list) costs
           more than adding those lists' postings in this range when the range holds many
           touched chunks: then add them too (full), so that v bounds the whole score up to
           rounding, and only chunks near the floor are rescored. */
        int full = 0;
        if (!exact) {
            Py_ssize_t ne_post = 0;
            for (Py_ssize_t j = 0; j < ne; j++) {
                const Py_ssize_t t = ord[j].term;
                const uint32_t *id = (const uint32_t *)tb[2 * t].buf;
                const Py_ssize_t len = tb[2 * t].len / 4;
                rc[t] = gallop(id, rc[t], len, (uint32_t)lo);
                ne_post += gallop(id, rc[t], len, (uint32_t)hi) - rc[t];
            }
            full = added * (ne < 4 ? ne : 4) * 8 > ne_post;
            for (Py_ssize_t j = 0; full && j < ne && !bad; j++) {
                const Py_ssize_t t = ord[j].term;
                const uint32_t *id = (const uint32_t *)tb[2 * t].buf;
                const double *im = (const double *)tb[2 * t + 1].buf;
                const Py_ssize_t len = tb[2 * t].len / 4;
                const Py_ssize_t p0 = rc[t]; /* rc stays: rescoring starts at the range */
                Py_ssize_t p = p0;
                for (; p < len; p++) {
                    const Py_ssize_t c = (Py_ssize_t)id[p];
                    if (c >= hi)
                        break;
                    if (c < lo) {
                        bad = 1;
                        break;
                    }
                    const Py_ssize_t off = c - lo;
                    acc[off] += im[p];
                    bits[off >> 6] |= (uint64_t)1 << (off & 63);
                }
                if (p > p0) {
                    added += p - p0;
                    if ((Py_ssize_t)id[p - 1] - lo + 1 > top)
                        top = (Py_ssize_t)id[p - 1] - lo + 1;
                }
            }
            if (bad)
                break;
        }
        n_accumulated += added;
        const double ne_live = full ? 0.0 : ne_sum; /* what v leaves out */
        if (!exact) {
            thr = floor_ * (1.0 - PRUNE_SLACK) - ne_live * (1.0 + PRUNE_SLACK);
            if (!(thr > 0.0))
                thr = ANY_SCORE;
        }
        const Py_ssize_t words = (top + 63) / 64;
        /* One kept chunk: rescore it exactly unless v is already exact, then select. */
#define KEEP_CHUNK(OFF, V)                                                                        \
    do {                                                                                          \
        const int64_t row = (int64_t)(lo + (OFF));                                               \
        double s = (V);                                                                           \
        if (bl && bl[row])                                                                        \
            break;                                                                                \
        if (!exact) {                                                                             \
            /* MaxScore's check: add the non-essential terms' impacts, largest bound first,  \
               while the rest of their bounds can still lift the chunk to the floor. */       \
            double vv = s;                                                                        \
            int drop = 0;                                                                         \
            for (Py_ssize_t j = full ? -1 : ne - 1; j >= 0; j--) {                                \
                const Py_ssize_t t = ord[j].term;                                                 \
                const uint32_t *tid = (const uint32_t *)tb[2 * t].buf;                            \
                const Py_ssize_t tl = tb[2 * t].len / 4;                                          \
                const Py_ssize_t q = rc[t] = gallop(tid, rc[t], tl, (uint32_t)row);               \
                if (q < tl && (int64_t)tid[q] == row)                                             \
                    vv += ((const double *)tb[2 * t + 1].buf)[q];                                 \
                if ((vv + pre[j]) * (1.0 + PRUNE_SLACK) < floor_) {                               \
                    drop = 1;                                                                     \
                    break;                                                                        \
                }                                                                                 \
            }                                                                                     \
            if (drop)                                                                             \
                break;                                                                            \
            n_rescored++;                                                                         \
            s = 0.0;                                                                              \
            for (Py_ssize_t t = 0; t < n_terms; t++) {                                            \
                const uint32_t *tid = (const uint32_t *)tb[2 * t].buf;                            \
                const Py_ssize_t tl = tb[2 * t].len / 4;                                          \
                const Py_ssize_t q = rc[t] = gallop(tid, rc[t], tl, (uint32_t)row);               \
                if (q < tl && (int64_t)tid[q] == row)                                             \
                    s += ((const double *)tb[2 * t + 1].buf)[q];                                  \
            }                                                                                     \
        }                                                                                         \
        if (!(s >= floor_))                                                                       \
            break;                                                                                \
        const int32_t d = cd[row];                                                                \
        if (d != cur_doc) {                                                                       \
            if (cur_doc >= 0) {                                                                   \
                heap_offer(heap, &hn, k, cur);                                                    \
                if (hn == k && heap[0].score > theta) {                                           \
                    theta = heap[0].score;                                                        \
                    floor_ = collect_all ? theta - margin - 2.0 * (fabs(theta) * 1e-9) : theta;   \
                    if (!(floor_ > 0.0))                                                          \
                        floor_ = ANY_SCORE;                                                       \
                    thr = exact ? floor_ : floor_ * (1.0 - PRUNE_SLACK) - ne_live * (1.0 + PRUNE_SLACK); \
                    if (!(thr > 0.0))                                                             \
                        thr = ANY_SCORE;                                                          \
                }                                                                                 \
            }                                                                                     \
            cur_doc = d;                                                                          \
            cur = (Best){s, row};                                                                 \
        } else if (s > cur.score) {                                                               \
            cur = (Best){s, row};                                                                 \
        }                                                                                         \
        if (collect_all) {                                                                        \
            oi[n_out] = row;                                                                      \
            os[n_out] = s;                                                                        \
            n_out++;                                                                              \
        }                                                                                         \
    } while (0)
        if (added * 8 < top) {
            /* Few postings: visit the touched chunks only, in ascending order, via the bitmap. */
            for (Py_ssize_t w = 0; w < words; w++) {
                uint64_t word = bits[w];
                bits[w] = 0;
                while (word) {
                    const Py_ssize_t off = 64 * w + (Py_ssize_t)__builtin_ctzll(word);
                    word &= word - 1;
                    const double v = acc[off];
                    acc[off] = 0.0;
                    if (v >= thr)
                        KEEP_CHUNK(off, v);
                }
            }
        } else {
            /* Dense: compare 8 chunks at a time (SSE2), then zero the range while in cache. */
            memset(bits, 0, sizeof(uint64_t) * (size_t)words);
            for (Py_ssize_t c = 0; c < top; c += 8) {
                const Py_ssize_t e = c + 8 < top ? c + 8 : top;
#if defined(__SSE2__)
                if (e - c == 8) {
                    const __m128d tv = _mm_set1_pd(thr);
                    const __m128d m0 = _mm_cmpge_pd(_mm_loadu_pd(acc + c), tv);
                    const __m128d m1 = _mm_cmpge_pd(_mm_loadu_pd(acc + c + 2), tv);
                    const __m128d m2 = _mm_cmpge_pd(_mm_loadu_pd(acc + c + 4), tv);
                    const __m128d m3 = _mm_cmpge_pd(_mm_loadu_pd(acc + c + 6), tv);
                    if (!_mm_movemask_pd(_mm_or_pd(_mm_or_pd(m0, m1), _mm_or_pd(m2, m3))))
                        continue;
                }
#endif
                for (Py_ssize_t j = c; j < e; j++) {
                    const double v = acc[j];
                    if (v >= thr)
                        KEEP_CHUNK(j, v);
                }
            }
            memset(acc, 0, sizeof(double) * (size_t)top);
        }
#undef KEEP_CHUNK
        /* The floor only rises: move terms to the non-essential side while their bounds fit. */
        while (ne < n_terms && pre[ne + 1] * (1.0 + PRUNE_SLACK) < floor_) {
            ess[ord[ne].term] = 0;
            ne++;
        }
        ne_sum = pre[ne];
#if HAVE_CLOCK
        /* Blocks can be tiny here, and reading the clock is a system call on some machines:
           look at it every 64 blocks or 256K postings. */
        if (deadline > 0.0 && (++since_clock >= 64 || n_accumulated - clock_mark >= (1 << 18))) {
            since_clock = 0;
            clock_mark = n_accumulated;
            if (now_s() > deadline) {
                late = 1;
                break;
            }
        }
#endif
    }
    for (Py_ssize_t t = 0; t < n_terms && !bad && !late; t++)
        if (ess[t] && pos[t] != tb[2 * t].len / 4)
            bad = 1; /* a rowid beyond the last chunk, out of order */
    if (cur_doc >= 0 && !bad && !late)
        heap_offer(heap, &hn, k, cur);
    if (late || bad) {
        memset(acc, 0, sizeof(double) * (size_t)block);
    } else if (!collect_all) {
        qsort(heap, (size_t)hn, sizeof(Best), cmp_best);
        for (Py_ssize_t i = 0; i < hn; i++) {
            oi[i] = heap[i].chunk;
            os[i] = heap[i].score;
        }
        n_out = hn;
        if (hn == k)
            cut = heap[hn - 1].score;
    } else if (hn == k) {
        cut = heap[0].score;
        const double t2 = cut - margin - 2.0 * (fabs(cut) * 1e-9);
        Py_ssize_t w = 0;
        for (Py_ssize_t i = 0; i < n_out; i++)
            if (os[i] >= t2) {
                oi[w] = oi[i];
                os[w] = os[i];
                w++;
            }
        n_out = w;
    } else {
        n_out = 0;
    }
    Py_END_ALLOW_THREADS
    if (counts.obj) {
        ((int64_t *)counts.buf)[0] = n_accumulated;
        ((int64_t *)counts.buf)[1] = n_rescored;
    }
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a posting list is not ascending or holds a rowid "
                                          "beyond the last chunk");
        goto done;
    }
    if (late) {
        result = Py_BuildValue("(nnd)", (Py_ssize_t)-1, (Py_ssize_t)0, 0.0);
        goto done;
    }
    result = Py_BuildValue("(nnd)", n_out, hn, cut);
done:
    for (Py_ssize_t i = 0; i < n_got; i++)
        PyBuffer_Release(&tb[i]);
    if (counts.obj)
        PyBuffer_Release(&counts);
    PyMem_Free(tb);
    PyMem_Free(pos);
    PyMem_Free(rc);
    PyMem_Free(ord);
    PyMem_Free(pre);
    PyMem_Free(ess);
    PyMem_Free(bits);
    PyMem_Free(heap);
    Py_XDECREF(ids_fast);
    Py_XDECREF(imps_fast);
    PyBuffer_Release(&bounds_b);
    PyBuffer_Release(&docs);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&out_ids);
    PyBuffer_Release(&out_scores);
    if (have_blocked)
        PyBuffer_Release(&blocked);
    return result;
}

static PyMethodDef methods[] = {
    {"rank_maxscore", rank_maxscore, METH_VARARGS, rank_maxscore_doc},
    {"rank_blocks", rank_blocks, METH_VARARGS, rank_blocks_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "Exact BM25 ranking in C (optional; numpy is the fallback).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    return PyModule_Create(&module);
}
