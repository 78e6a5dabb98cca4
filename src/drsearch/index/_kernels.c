/*
 * drsearch.index._kernels: exact BM25 ranking of sparse posting lists, in C (rank_blocks).
 *
 * Optional: drsearch.index.scoring falls back to numpy when this module is missing, and both
 * paths give bit-identical results (the tests compare them). The arithmetic here is the same
 * IEEE-754 double additions in the same order as numpy's np.add.at (one term after another,
 * in phrase order), and the build disables floating-point contraction, so sums are identical.
 *
 * rank_blocks releases the GIL while it loops: threads of one server process rank in
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

static PyMethodDef methods[] = {
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
