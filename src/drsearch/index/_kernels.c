/*
 * drsearch.index._kernels: the two hot loops of exact BM25 ranking, in C.
 *
 * Optional: drsearch.index.scoring falls back to numpy when this module is missing, and both
 * paths give bit-identical results (the tests compare them). The arithmetic here is the same
 * IEEE-754 double additions in the same order as numpy's np.add.at (one term after another,
 * in phrase order), and the build disables floating-point contraction, so sums are identical.
 *
 * Both functions release the GIL while they loop: threads of one server process rank in
 * parallel. Every index is bounds-checked; a damaged posting list raises ValueError rather
 * than touching memory outside the score array.
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


/* Every chunk c with acc[c] >= t (t > 0) and not blocked, ascending, into oi/os; returns the
   count. Blocks of 8: one combined test per block keeps the common "nothing here" path short
   (SSE2 compares where available: every x86-64 CPU has them). */
static Py_ssize_t
collect_above(const double *a, Py_ssize_t n, double t, const uint8_t *bl, int64_t *oi, double *os)
{
    Py_ssize_t m = 0, c = 0;
    for (; c + 8 <= n; c += 8) {
#if defined(__SSE2__)
        const __m128d tv = _mm_set1_pd(t);
        const __m128d m0 = _mm_cmpge_pd(_mm_loadu_pd(a + c), tv);
        const __m128d m1 = _mm_cmpge_pd(_mm_loadu_pd(a + c + 2), tv);
        const __m128d m2 = _mm_cmpge_pd(_mm_loadu_pd(a + c + 4), tv);
        const __m128d m3 = _mm_cmpge_pd(_mm_loadu_pd(a + c + 6), tv);
        if (!_mm_movemask_pd(_mm_or_pd(_mm_or_pd(m0, m1), _mm_or_pd(m2, m3))))
            continue;
#else
        int any = 0;
        for (int j = 0; j < 8; j++)
            any |= a[c + j] >= t;
        if (!any)
            continue;
#endif
        for (int j = 0; j < 8; j++) {
            const double v = a[c + j];
            if (v >= t && !(bl && bl[c + j])) {
                oi[m] = (int64_t)(c + j);
                os[m] = v;
                m++;
            }
        }
    }
    for (; c < n; c++) {
        const double v = a[c];
        if (v >= t && !(bl && bl[c])) {
            oi[m] = (int64_t)c;
            os[m] = v;
            m++;
        }
    }
    return m;
}

/* The smallest positive double: a threshold that keeps every scored chunk (scores are > 0). */
#define ANY_SCORE 4.9406564584124654e-324

PyDoc_STRVAR(accumulate_doc,
"accumulate(acc, chunks, impacts) -> float\n\n"
"acc[chunks[i]] += impacts[i] for every i, in order (float64 score array, uint32 chunk\n"
"ids, float64 impacts). Returns the largest value written (0.0 for an empty list).\n"
"Raises ValueError for mismatched lengths or a chunk id outside acc.");

static PyObject *
accumulate(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer acc, ids, imps;
    if (!PyArg_ParseTuple(args, "w*y*y*:accumulate", &acc, &ids, &imps))
        return NULL;
    PyObject *result = NULL;
    if (check_buffer(&acc, 8, "acc") || check_buffer(&ids, 4, "chunks") ||
        check_buffer(&imps, 8, "impacts"))
        goto done;
    Py_ssize_t n = ids.len / 4;
    if (imps.len / 8 != n) {
        PyErr_Format(PyExc_ValueError, "%zd chunk ids but %zd impacts", n, imps.len / 8);
        goto done;
    }
    const uint64_t size = (uint64_t)(acc.len / 8);
    double *a = (double *)acc.buf;
    const uint32_t *id = (const uint32_t *)ids.buf;
    const double *im = (const double *)imps.buf;
    double top = 0.0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint32_t c = id[i];
        if ((uint64_t)c >= size) {
            bad = 1;
            break;
        }
        const double v = a[c] + im[i];
        a[c] = v;
        top = v > top ? v : top;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "chunk id outside the score array");
        goto done;
    }
    result = PyFloat_FromDouble(top);
done:
    PyBuffer_Release(&acc);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&imps);
    return result;
}

PyDoc_STRVAR(collect_doc,
"collect(acc, threshold, blocked, out_chunks, out_scores) -> int\n\n"
"Writes, in ascending order, every chunk id c with acc[c] > 0 and acc[c] >= threshold and\n"
"not blocked[c] (blocked: a uint8 mask over chunk ids, or None) into out_chunks (int64) and\n"
"its score into out_scores (float64); returns how many. The outputs must hold len(acc).");

static PyObject *
collect(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer acc, out_ids, out_scores;
    Py_buffer blocked = {0};
    double threshold;
    PyObject *blocked_obj;
    if (!PyArg_ParseTuple(args, "y*dOw*w*:collect", &acc, &threshold, &blocked_obj, &out_ids,
                          &out_scores))
        return NULL;
    PyObject *result = NULL;
    int have_blocked = 0;
    if (blocked_obj != Py_None) {
        if (PyObject_GetBuffer(blocked_obj, &blocked, PyBUF_SIMPLE) < 0)
            goto done;
        have_blocked = 1;
    }
    if (check_buffer(&acc, 8, "acc") || check_buffer(&out_ids, 8, "out_chunks") ||
        check_buffer(&out_scores, 8, "out_scores"))
        goto done;
    const Py_ssize_t n = acc.len / 8;
    if (out_ids.len / 8 < n || out_scores.len / 8 < n) {
        PyErr_SetString(PyExc_ValueError, "output buffers smaller than the score array");
        goto done;
    }
    if (have_blocked && blocked.len < n) {
        PyErr_SetString(PyExc_ValueError, "blocked mask shorter than the score array");
        goto done;
    }
    /* Only values > 0 are scored chunks; a threshold of 0 means "every scored chunk". */
    const double t = threshold > 0.0 ? threshold : ANY_SCORE;
    const double *a = (const double *)acc.buf;
    const uint8_t *bl = have_blocked ? (const uint8_t *)blocked.buf : NULL;
    Py_ssize_t m;
    Py_BEGIN_ALLOW_THREADS
    m = collect_above(a, n, t, bl, (int64_t *)out_ids.buf, (double *)out_scores.buf);
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(m);
done:
    PyBuffer_Release(&acc);
    PyBuffer_Release(&out_ids);
    PyBuffer_Release(&out_scores);
    if (have_blocked)
        PyBuffer_Release(&blocked);
    return result;
}


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

PyDoc_STRVAR(select_top_doc,
"select_top(acc, top, blocked, chunk_doc, k, margin, out_chunks, out_scores)\n"
"    -> (n_out, n_docs, cut)\n\n"
"Ranks the scored chunks of acc (float64; top = its largest value) by document, where\n"
"chunk_doc (int32) maps chunk rowids to documents and every document's chunks are\n"
"consecutive rowids. Blocked chunks (uint8 mask or None) are skipped. Chunks are read at\n"
"falling thresholds (top/2, top/4, top/10, any) until k documents are seen.\n"
"margin < 0: writes the best chunk of each of the k best documents, best first (score\n"
"descending, then lower rowid). margin >= 0: writes, ascending, every chunk scoring at least\n"
"cut - margin - 2e-9*|cut| (cut = the k-th best document's score), or nothing when fewer\n"
"than k documents are scored. n_docs: documents seen at the last threshold. Zeroes acc.");

static PyObject *
select_top(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer acc, docs, out_ids, out_scores;
    Py_buffer blocked = {0};
    double top, margin;
    Py_ssize_t k;
    PyObject *blocked_obj;
    if (!PyArg_ParseTuple(args, "w*dOy*ndw*w*:select_top", &acc, &top, &blocked_obj, &docs, &k,
                          &margin, &out_ids, &out_scores))
        return NULL;
    PyObject *result = NULL;
    Best *heap = NULL;
    int have_blocked = 0;
    if (blocked_obj != Py_None) {
        if (PyObject_GetBuffer(blocked_obj, &blocked, PyBUF_SIMPLE) < 0)
            goto done;
        have_blocked = 1;
    }
    if (check_buffer(&acc, 8, "acc") || check_buffer(&docs, 4, "chunk_doc") ||
        check_buffer(&out_ids, 8, "out_chunks") || check_buffer(&out_scores, 8, "out_scores"))
        goto done;
    const Py_ssize_t n = acc.len / 8;
    if (docs.len / 4 < n || out_ids.len / 8 < n || out_scores.len / 8 < n ||
        (have_blocked && blocked.len < n)) {
        PyErr_SetString(PyExc_ValueError, "chunk_doc, blocked or output buffers shorter than acc");
        goto done;
    }
    if (k < 1) {
        PyErr_SetString(PyExc_ValueError, "k must be at least 1");
        goto done;
    }
    heap = PyMem_Malloc(sizeof(Best) * (size_t)k);
    if (heap == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    double *a = (double *)acc.buf;
    const int32_t *cd = (const int32_t *)docs.buf;
    const uint8_t *bl = have_blocked ? (const uint8_t *)blocked.buf : NULL;
    int64_t *oi = (int64_t *)out_ids.buf;
    double *os = (double *)out_scores.buf;
    Py_ssize_t n_out = 0, n_docs = 0, hn = 0;
    double cut = 0.0;
    Py_BEGIN_ALLOW_THREADS
    static const double fracs[4] = {0.5, 0.25, 0.1, 0.0};
    Py_ssize_t m = 0;
    double t = ANY_SCORE;
    for (int f = 0; f < 4 && top > 0.0; f++) {
        t = fracs[f] > 0.0 ? top * fracs[f] : ANY_SCORE;
        if (!(t > 0.0))
            t = ANY_SCORE;
        m = collect_above(a, n, t, bl, oi, os);
        /* A document's chunks are consecutive rowids, so consecutive entries here. */
        n_docs = 0;
        hn = 0;
        for (Py_ssize_t i = 0; i < m;) {
            const int32_t d = cd[oi[i]];
            Best b = {os[i], oi[i]};
            Py_ssize_t j = i + 1;
            for (; j < m && cd[oi[j]] == d; j++)
                if (os[j] > b.score)
                    b = (Best){os[j], oi[j]};
            heap_offer(heap, &hn, k, b);
            n_docs++;
            i = j;
        }
        if (n_docs >= k)
            break;
    }
    if (margin < 0.0) {
        qsort(heap, (size_t)hn, sizeof(Best), cmp_best);
        for (Py_ssize_t i = 0; i < hn; i++) {
            oi[i] = heap[i].chunk;
            os[i] = heap[i].score;
        }
        n_out = hn;
        cut = n_docs >= k ? heap[hn - 1].score : 0.0;
    } else if (n_docs >= k) {
        cut = heap[0].score;
        const double t2 = cut - margin - 2.0 * (fabs(cut) * 1e-9);
        if (t2 >= t) {  /* every chunk above t2 is already collected: filter in place */
            for (Py_ssize_t i = 0; i < m; i++)
                if (os[i] >= t2) {
                    oi[n_out] = oi[i];
                    os[n_out] = os[i];
                    n_out++;
                }
        } else if (t2 > 0.0) {
            n_out = collect_above(a, n, t2, bl, oi, os);
        }
    }
    memset(a, 0, sizeof(double) * (size_t)n);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(nnd)", n_out, n_docs, cut);
done:
    PyMem_Free(heap);
    PyBuffer_Release(&acc);
    PyBuffer_Release(&docs);
    PyBuffer_Release(&out_ids);
    PyBuffer_Release(&out_scores);
    if (have_blocked)
        PyBuffer_Release(&blocked);
    return result;
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

static PyMethodDef methods[] = {
    {"accumulate", accumulate, METH_VARARGS, accumulate_doc},
    {"collect", collect, METH_VARARGS, collect_doc},
    {"select_top", select_top, METH_VARARGS, select_top_doc},
    {"rank_blocks", rank_blocks, METH_VARARGS, rank_blocks_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "C loops for exact BM25 ranking (optional; numpy is the fallback).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    return PyModule_Create(&module);
}
