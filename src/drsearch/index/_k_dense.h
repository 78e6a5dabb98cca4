/* _k_dense.h (included once by _kernels.c): dense_scores, the dense retriever's exact
 * inner products of int8 vectors.
 *
 * Each row's score is its integer inner product with the query (int8 x int8 products summed
 * in int32: exact, since |product| <= 128^2 and the dimension is at most DENSE_MAX_DIM, so no
 * sum can overflow), converted to double and multiplied by the row's scale, then by the
 * query's: ((double)dot * scale[i]) * q_scale, two IEEE-754 roundings in that order, with no
 * fused multiply-add (-ffp-contract=off). An integer sum is the same whatever order it is added
 * in, so the vector width (SSE2, AVX2) and the machine do not change a bit of it: the numpy
 * twin (drsearch.index.reference.dense_scores) gives the same doubles.
 *
 * The loop is plain C that compilers vectorise (sign-extend to 16 bits, multiply-add pairs to
 * 32: pmaddwd); on x86-64 it is compiled twice, for the baseline (SSE2) and for AVX2, and the
 * AVX2 copy is taken at run time where the CPU has it, so the shipped build needs no -march.
 */

#define DENSE_MAX_DIM 65536 /* 65536 * 128^2 = 2^30 < 2^31: no int32 sum overflows */

#define DENSE_ROWS_BODY                                                                          \
    for (Py_ssize_t r = lo; r < hi; r++) {                                                       \
        const int8_t *row = m + r * d;                                                           \
        int32_t s = 0;                                                                           \
        for (Py_ssize_t j = 0; j < d; j++)                                                       \
            s += (int32_t)((int16_t)row[j] * (int16_t)q[j]);                                     \
        out[r] = (hid && hid[r]) ? -HUGE_VAL : ((double)s * sc[r]) * qs;                         \
    }

static void
dense_rows_base(const int8_t *m, const int8_t *q, const double *sc, const uint8_t *hid, double qs,
                Py_ssize_t d, Py_ssize_t lo, Py_ssize_t hi, double *out)
{
    DENSE_ROWS_BODY
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define DENSE_DISPATCH 1
__attribute__((target("avx2"))) static void
dense_rows_avx2(const int8_t *m, const int8_t *q, const double *sc, const uint8_t *hid, double qs,
                Py_ssize_t d, Py_ssize_t lo, Py_ssize_t hi, double *out)
{
    DENSE_ROWS_BODY
}
#endif

typedef void (*DenseRows)(const int8_t *, const int8_t *, const double *, const uint8_t *, double,
                          Py_ssize_t, Py_ssize_t, Py_ssize_t, double *);

/* The loop this CPU runs, and its name (dense_isa()). */
static DenseRows
dense_rows_pick(const char **name)
{
#ifdef DENSE_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        *name = "avx2";
        return dense_rows_avx2;
    }
#endif
    *name = "baseline";
    return dense_rows_base;
}

PyDoc_STRVAR(dense_scores_doc,
"dense_scores(matrix, dimension, query, scales, q_scale, hidden, out, baseline=False) -> None\n\n"
"Every row's exact score into out (float64, one per row): matrix holds rows of `dimension`\n"
"int8 components (row i at i * dimension), query one such row, scales a float64 per row,\n"
"hidden a bool per row or None (a hidden row scores -inf). A row's score is\n"
"((double)(integer inner product) * scales[i]) * q_scale. Releases the GIL. Raises ValueError\n"
"for buffers of inconsistent sizes or a dimension over 65536. baseline: run the baseline\n"
"copy of the loop even where the CPU has AVX2 (the tests compare the two).");

static PyObject *
dense_scores(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer mat, qv, scales, out, hidden = {0};
    PyObject *hidden_obj, *ret = NULL;
    Py_ssize_t d;
    double qs;
    int baseline = 0;
    if (!PyArg_ParseTuple(args, "y*ny*y*dOw*|p:dense_scores", &mat, &d, &qv, &scales, &qs, &hidden_obj,
                          &out, &baseline))
        return NULL;
    if (hidden_obj != Py_None && PyObject_GetBuffer(hidden_obj, &hidden, PyBUF_SIMPLE) < 0)
        goto done;
    if (check_buffer(&scales, 8, "scales") || check_buffer(&out, 8, "out"))
        goto done;
    const Py_ssize_t n = scales.len / 8;
    if (d < 1 || d > DENSE_MAX_DIM || qv.len != d || mat.len != n * d || out.len / 8 != n ||
        (hidden.obj && hidden.len != n)) {
        PyErr_SetString(PyExc_ValueError, "dense_scores: inconsistent arguments");
        goto done;
    }
    const char *isa;
    const DenseRows rows = baseline ? dense_rows_base : dense_rows_pick(&isa);
    const int8_t *m = (const int8_t *)mat.buf, *q = (const int8_t *)qv.buf;
    const double *sc = (const double *)scales.buf;
    const uint8_t *hid = hidden.obj ? (const uint8_t *)hidden.buf : NULL;
    double *o = (double *)out.buf;
    if (n * d >= NOGIL_MIN_BYTES) {
        NOGIL_BEGIN
        rows(m, q, sc, hid, qs, d, 0, n, o);
        NOGIL_END
    } else {
        rows(m, q, sc, hid, qs, d, 0, n, o);
    }
    ret = Py_NewRef(Py_None);
done:
    if (hidden.obj)
        PyBuffer_Release(&hidden);
    PyBuffer_Release(&mat);
    PyBuffer_Release(&qv);
    PyBuffer_Release(&scales);
    PyBuffer_Release(&out);
    return ret;
}

PyDoc_STRVAR(dense_isa_doc,
"dense_isa() -> str\n\n"
"Which copy of dense_scores' loop this CPU runs: \"avx2\" or \"baseline\".");

static PyObject *
dense_isa(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    const char *isa;
    dense_rows_pick(&isa);
    return PyUnicode_FromString(isa);
}
