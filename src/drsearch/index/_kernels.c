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

static PyMethodDef methods[] = {
    {"accumulate", accumulate, METH_VARARGS, accumulate_doc},
    {"collect", collect, METH_VARARGS, collect_doc},
    {"select_top", select_top, METH_VARARGS, select_top_doc},
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
