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
#include <stdint.h>
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
    const double t = threshold > 0.0 ? threshold : 4.9406564584124654e-324;
    const double *a = (const double *)acc.buf;
    const uint8_t *bl = have_blocked ? (const uint8_t *)blocked.buf : NULL;
    int64_t *oi = (int64_t *)out_ids.buf;
    double *os = (double *)out_scores.buf;
    Py_ssize_t m = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t c = 0;
    /* Blocks of 8: one combined test per block keeps the common "nothing here" path short
       (SSE2 compares where available: every x86-64 CPU has them). */
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

static PyMethodDef methods[] = {
    {"accumulate", accumulate, METH_VARARGS, accumulate_doc},
    {"collect", collect, METH_VARARGS, collect_doc},
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
