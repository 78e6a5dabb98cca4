/* _k_snippet.h: part of the drsearch.index._kernels module, included once by _kernels.c (one
 * translation unit: its static functions inline across parts). Snippets: SnippetMaker's window in C, without the GIL, for long texts. */
#ifndef DRSEARCH_K_SNIPPET_H
#define DRSEARCH_K_SNIPPET_H

/* ---- snippets ------------------------------------------------------------------------------
 * The snippet window of drsearch.index.snippet.SnippetMaker, computed in C without the GIL for
 * long texts: the same choice, character for character (the tests compare both on real chunks
 * and on random text). Matching is on the lower-cased text, one code point to one: a text with
 * a character whose lower case is not one code point (U+0130, whose full lower case is two) or
 * depends on its neighbours (U+03A3, capital sigma: str.lower() gives a final or a medial
 * sigma by context) is left to the Python code (None). Every other character's str.lower() is
 * its simple lower case, Py_UNICODE_TOLOWER, and str.isalnum() is Py_UNICODE_ISALNUM: both
 * read CPython's static Unicode tables, safe without the GIL. The texts are str objects this
 * call holds references to (immutable: their data cannot change while it reads them). */

typedef struct {
    Py_UCS4 *chars; /* the stem's code points */
    Py_ssize_t len;
    double weight;
    Py_ssize_t next; /* the next stem (in order) whose first code point has the same low byte */
} SnipStem;

/* The first stem of each bucket (a first code point's low byte), -1 for none: a word start
   tries only the stems that can match there, so a query of hundreds of terms stays cheap. */
typedef struct {
    Py_ssize_t head[256];
    /* For a one-byte code point c: 1 if its lower case is alphanumeric, plus 2 if a stem's
       bucket is that of its lower case (a word starting with c may match): one load a code
       point for most text. */
    unsigned char flags1[256];
} SnipBuckets;

static inline int
snip_late(double deadline)
{
#if HAVE_CLOCK
    return deadline > 0 && now_s() > deadline;
#else
    (void)deadline;
    return 0;
#endif
}

static inline Py_UCS4
snip_char(int kind, const void *data, Py_ssize_t i)
{
    return PyUnicode_READ(kind, data, i);
}

/* The first 256 code points' lower case and classes, from the same functions (filled when the
   module is imported): most text is all Latin-1 (one byte a code point in CPython), read here
   by table. */
static Py_UCS4 snip_lower1[256];
static unsigned char snip_alnum1[256], snip_space1[256];
/* whether the lower case of a one-byte code point is alphanumeric (the lower case of every
   Latin-1 character is Latin-1: checked when the tables are filled) */
static unsigned char snip_alnum_low1[256];

static int
snip_tables_init(void)
{
    for (Py_UCS4 c = 0; c < 256; c++) {
        snip_lower1[c] = Py_UNICODE_TOLOWER(c);
        snip_alnum1[c] = Py_UNICODE_ISALNUM(c) != 0;
        snip_space1[c] = Py_UNICODE_ISSPACE(c) != 0;
    }
    for (Py_UCS4 c = 0; c < 256; c++) {
        if (snip_lower1[c] > 255)
            return -1;
        snip_alnum_low1[c] = snip_alnum1[snip_lower1[c]];
    }
    return 0;
}

static inline Py_UCS4
snip_lower(Py_UCS4 c)
{
    return c < 256 ? snip_lower1[c] : Py_UNICODE_TOLOWER(c);
}

static inline int
snip_alnum(Py_UCS4 c)
{
    return c < 256 ? snip_alnum1[c] : Py_UNICODE_ISALNUM(c);
}

static inline int
snip_space(Py_UCS4 c)
{
    return c < 256 ? snip_space1[c] : Py_UNICODE_ISSPACE(c);
}

typedef struct {
    Py_ssize_t start, end; /* the body: text[start:end], already stripped */
    int left, right;       /* an ellipsis before / after it */
    int whole;             /* the text itself (not longer than the width) */
    int python;            /* left to the Python code */
} SnipSpan;

/* The matches of one text of n code points of `kind` (inlined for each kind, so that the
   reads and the tests below that kind's range fold away): in one pass, every word start
   (position 0, and every position after a code point whose lower case is not alphanumeric)
   where a stem may match (its first code point's bucket) tries the stems there, lowering the
   text as it compares (by table below U+0100): at each word start the first stem that matches
   (longest first, as SnippetMaker orders them), as str.find over each stem in that order and
   "a position keeps its first match" give. No lowered copy of the text and no list of its word
   starts is written. The matches' positions and weights go to `pos` and `weight` (never more
   than n); returns their number, -1 when the deadline passed, -2 for a text left to the Python
   code (a U+0130 or U+03A3 in it; neither is one byte). */
static inline __attribute__((always_inline)) Py_ssize_t
snip_scan(const int kind, const void *data, Py_ssize_t n, const SnipStem *stems,
          const SnipBuckets *buckets, double deadline, double *weight, Py_ssize_t *pos)
{
    Py_ssize_t n_tried = 0, n_hits = 0;
    int prev_alnum = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Py_UCS4 c = PyUnicode_READ(kind, data, i);
        int alnum, may;
        if (kind == PyUnicode_1BYTE_KIND || c < 256) {
            const unsigned f = buckets->flags1[c];
            alnum = (int)(f & 1);
            may = (int)(f >> 1);
        } else {
            if (c == 0x130 || c == 0x3A3)
                return -2;
            const Py_UCS4 l = Py_UNICODE_TOLOWER(c);
            alnum = snip_alnum(l);
            may = buckets->head[l & 255] >= 0;
        }
        if ((!prev_alnum) & may) {
            if (!(++n_tried & 1023) && snip_late(deadline))
                return -1;
            const Py_UCS4 l0 = snip_lower(c);
            for (Py_ssize_t s = buckets->head[l0 & 255]; s >= 0; s = stems[s].next) {
                const Py_ssize_t m = stems[s].len;
                if (m > n - i || l0 != stems[s].chars[0])
                    continue;
                Py_ssize_t j = 1;
                while (j < m && snip_lower(PyUnicode_READ(kind, data, i + j)) == stems[s].chars[j])
                    j++;
                if (j == m) {
                    pos[n_hits] = i;
                    weight[n_hits++] = stems[s].weight;
                    break;
                }
            }
        }
        prev_alnum = alnum;
    }
    return n_hits;
}

/* What SnippetMaker.__call__ does for one text of n code points; `weight` and `pos` are
   scratch for n entries each. Returns 0, or -1 when the deadline passed. */
static int
snip_one(int kind, const void *data, Py_ssize_t n, const SnipStem *stems,
         const SnipBuckets *buckets, Py_ssize_t width, double deadline, double *weight,
         Py_ssize_t *pos, SnipSpan *out)
{
    memset(out, 0, sizeof *out);
    if (n <= width) {
        out->whole = 1;
        return 0;
    }
    Py_ssize_t n_hits;
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        n_hits = snip_scan(PyUnicode_1BYTE_KIND, data, n, stems, buckets, deadline, weight, pos);
        break;
    case PyUnicode_2BYTE_KIND:
        n_hits = snip_scan(PyUnicode_2BYTE_KIND, data, n, stems, buckets, deadline, weight, pos);
        break;
    default:
        n_hits = snip_scan(PyUnicode_4BYTE_KIND, data, n, stems, buckets, deadline, weight, pos);
        break;
    }
    if (n_hits == -2) {
        out->python = 1;
        return 0;
    }
    if (n_hits < 0)
        return -1;
    Py_ssize_t start = 0;
    if (n_hits) {
        /* SnippetMaker._best_start: two pointers over the matches within a width. */
        double best_score = -1.0, total = 0.0;
        Py_ssize_t best_pos = 0, lo = 0;
        for (Py_ssize_t h = 0; h < n_hits; h++) {
            total += weight[h];
            while (pos[lo] <= pos[h] - width) {
                total -= weight[lo];
                lo++;
            }
            if (total > best_score + 1e-12) {
                best_score = total;
                best_pos = pos[lo];
            }
        }
        start = best_pos - width / 6;
        if (start < 0)
            start = 0;
        if (start > 0) { /* text.find(" ", start, best_pos) */
            Py_ssize_t space = -1;
            for (Py_ssize_t i = start; i < best_pos; i++)
                if (snip_char(kind, data, i) == ' ') {
                    space = i;
                    break;
                }
            start = space >= 0 ? space + 1 : best_pos;
        }
    }
    Py_ssize_t end = start + width < n ? start + width : n;
    if (end < n) { /* text.rfind(" ", start, end) */
        Py_ssize_t cut = -1;
        for (Py_ssize_t i = end - 1; i >= start; i--)
            if (snip_char(kind, data, i) == ' ') {
                cut = i;
                break;
            }
        end = cut > start ? cut : end;
    }
    out->left = start > 0;
    out->right = end < n;
    Py_ssize_t a = start, b = end; /* text[start:end].strip() */
    while (a < b && snip_space(snip_char(kind, data, a)))
        a++;
    while (b > a && snip_space(snip_char(kind, data, b - 1)))
        b--;
    out->start = a;
    out->end = b;
    return 0;
}

/* The (stem, weight) pairs of a snippets call (n of each, sequences from PySequence_Fast), with
   their buckets. Returns 0, or -1 with an exception set (nothing left to free). */
static int
snip_stems_make(PyObject *stems_seq, PyObject *weights, Py_ssize_t n, SnipStem **out,
                SnipBuckets *buckets)
{
    SnipStem *stems = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *stems);
    if (!stems) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t filled = 0;
    for (; filled < n; filled++) {
        PyObject *s = PySequence_Fast_GET_ITEM(stems_seq, filled);
        const double w = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(weights, filled));
        if (w == -1.0 && PyErr_Occurred())
            break;
        if (!PyUnicode_Check(s) || PyUnicode_GET_LENGTH(s) < 1) {
            PyErr_SetString(PyExc_ValueError, "snippets: a stem is not a non-empty str");
            break;
        }
        const Py_ssize_t len = PyUnicode_GET_LENGTH(s);
        Py_UCS4 *chars = PyMem_RawMalloc(sizeof *chars * (size_t)len);
        if (!chars) {
            PyErr_NoMemory();
            break;
        }
        if (!PyUnicode_AsUCS4(s, chars, len, 0)) {
            PyMem_RawFree(chars);
            break;
        }
        stems[filled].chars = chars;
        stems[filled].len = len;
        stems[filled].weight = w;
    }
    if (filled < n) {
        for (Py_ssize_t i = 0; i < filled; i++)
            PyMem_RawFree(stems[i].chars);
        PyMem_RawFree(stems);
        return -1;
    }
    Py_ssize_t tail[256];
    for (int b = 0; b < 256; b++)
        buckets->head[b] = tail[b] = -1;
    for (Py_ssize_t i = 0; i < n; i++) { /* appended in order: longest first stays first */
        const int b = (int)(stems[i].chars[0] & 255);
        stems[i].next = -1;
        if (tail[b] < 0)
            buckets->head[b] = i;
        else
            stems[tail[b]].next = i;
        tail[b] = i;
    }
    for (int c = 0; c < 256; c++) /* the lower case of a one-byte code point is one byte */
        buckets->flags1[c] = (unsigned char)(snip_alnum_low1[c] |
                                             (buckets->head[snip_lower1[c]] >= 0) << 1);
    *out = stems;
    return 0;
}

/* A snippets call's `stems`, `weights` (sequences of as many str and float) and `width`
   (positive), checked, as stems with their buckets in *out and their number in *n_out (0 and
   NULL on error). Returns 0, or -1 with an exception set (nothing left to free). */
static int
snip_args(PyObject *stems_obj, PyObject *weights_obj, Py_ssize_t width, SnipStem **out,
          Py_ssize_t *n_out, SnipBuckets *buckets)
{
    *out = NULL;
    *n_out = 0;
    PyObject *stems_seq = PySequence_Fast(stems_obj, "stems must be a sequence");
    PyObject *weights = stems_seq ? PySequence_Fast(weights_obj, "weights must be a sequence") : NULL;
    int rc = -1;
    if (weights) { /* else the exception is set */
        const Py_ssize_t n = PySequence_Fast_GET_SIZE(stems_seq);
        if (width < 1) {
            PyErr_SetString(PyExc_ValueError, "snippets: width must be positive");
        } else if (PySequence_Fast_GET_SIZE(weights) != n) {
            PyErr_Format(PyExc_ValueError, "snippets: %zd stems and %zd weights", n,
                         PySequence_Fast_GET_SIZE(weights));
        } else if (snip_stems_make(stems_seq, weights, n, out, buckets) == 0) {
            *n_out = n;
            rc = 0;
        }
    }
    Py_XDECREF(stems_seq);
    Py_XDECREF(weights);
    return rc;
}

static void
snip_stems_free(SnipStem *stems, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; stems && i < n; i++)
        PyMem_RawFree(stems[i].chars);
    PyMem_RawFree(stems);
}

/* The snippet snip_one described for `text` (a new reference; None for the Python code),
   NULL with an exception set. */
/* "…", made once at import (every snippet cut at either end takes it). */
static PyObject *ELLIPSIS;

static PyObject *
snip_result(PyObject *text, const SnipSpan *sp)
{
    PyObject *ellipsis = ELLIPSIS;
    if (sp->python)
        return Py_NewRef(Py_None);
    if (sp->whole)
        return Py_NewRef(text);
    PyObject *v = PyUnicode_Substring(text, sp->start, sp->end);
    if (v && sp->left) {
        PyObject *w = PyUnicode_Concat(ellipsis, v);
        Py_DECREF(v);
        v = w;
    }
    if (v && sp->right) {
        PyObject *w = PyUnicode_Concat(v, ellipsis);
        Py_DECREF(v);
        v = w;
    }
    return v;
}

PyDoc_STRVAR(snippets_doc,
"snippets(texts, stems, weights, width, deadline) -> list | None\n\n"
"SnippetMaker's snippet of each str in `texts` for its (stem, weight) pairs, ordered as the\n"
"maker orders them (longest first): the snippet, or None for a text the Python code must\n"
"handle (a character whose lower case is not one code point). None instead of the list when\n"
"time.monotonic() passed `deadline` (<= 0: none) before the work was done. The GIL is\n"
"released while texts of 16,384 code points or more in all are searched.");

static PyObject *
snippets(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *texts_obj, *stems_obj, *weights_obj, *texts = NULL, *result = NULL;
    Py_ssize_t width;
    double deadline;
    SnipStem *stems = NULL;
    SnipBuckets buckets;
    Py_ssize_t n_stems = 0;
    SnipSpan *spans = NULL;
    double *weight = NULL;
    Py_ssize_t *pos = NULL;
    if (!PyArg_ParseTuple(args, "OOOnd:snippets", &texts_obj, &stems_obj, &weights_obj, &width,
                          &deadline))
        return NULL;
    texts = PySequence_Fast(texts_obj, "texts must be a sequence");
    if (!texts || snip_args(stems_obj, weights_obj, width, &stems, &n_stems, &buckets) < 0)
        goto done;
    const Py_ssize_t n_texts = PySequence_Fast_GET_SIZE(texts);
    Py_ssize_t longest = 0, total = 0;
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        PyObject *s = PySequence_Fast_GET_ITEM(texts, t);
        if (!PyUnicode_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "snippets: a text is not a str");
            goto done;
        }
        const Py_ssize_t len = PyUnicode_GET_LENGTH(s);
        longest = len > longest ? len : longest;
        total += len;
    }
    spans = PyMem_RawCalloc((size_t)(n_texts ? n_texts : 1), sizeof *spans);
    weight = PyMem_RawMalloc(sizeof *weight * (size_t)(longest + 1));
    pos = PyMem_RawMalloc(sizeof *pos * (size_t)(longest + 1));
    if (!spans || !weight || !pos) {
        PyErr_NoMemory();
        goto done;
    }
    /* `texts` (a list or tuple of our own when PySequence_Fast copied it) holds a reference to
       each text; a caller's list could be changed by another thread while the GIL is released,
       so each text is held here too. */
    for (Py_ssize_t t = 0; t < n_texts; t++)
        Py_INCREF(PySequence_Fast_GET_ITEM(texts, t));
    PyObject **items = PySequence_Fast_ITEMS(texts);
    PyObject **held = PyMem_RawMalloc(sizeof *held * (size_t)(n_texts ? n_texts : 1));
    if (!held) {
        for (Py_ssize_t t = 0; t < n_texts; t++)
            Py_DECREF(items[t]);
        PyErr_NoMemory();
        goto done;
    }
    if (n_texts) /* an empty list's items pointer may be NULL */
        memcpy(held, items, sizeof *held * (size_t)n_texts);
    int late = 0;
#define SNIP_LOOP                                                                                 \
    for (Py_ssize_t t = 0; t < n_texts && !late; t++)                                            \
        late = snip_late(deadline) ||                                                            \
               snip_one(PyUnicode_KIND(held[t]), PyUnicode_DATA(held[t]),                        \
                        PyUnicode_GET_LENGTH(held[t]), stems, &buckets, width, deadline,        \
                        weight, pos, &spans[t]) < 0;
    if (total >= 16384) {
        NOGIL_BEGIN
        SNIP_LOOP
        NOGIL_END
    } else {
        SNIP_LOOP
    }
#undef SNIP_LOOP
    if (late) {
        result = Py_NewRef(Py_None);
    } else {
        result = PyList_New(n_texts);
        for (Py_ssize_t t = 0; result && t < n_texts; t++) {
            PyObject *v = snip_result(held[t], &spans[t]);
            if (!v) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(result, t, v);
        }
    }
    for (Py_ssize_t t = 0; t < n_texts; t++)
        Py_DECREF(held[t]);
    PyMem_RawFree(held);
done:
    snip_stems_free(stems, n_stems);
    PyMem_RawFree(spans);
    PyMem_RawFree(weight);
    PyMem_RawFree(pos);
    Py_XDECREF(texts);
    return result;
}


#endif /* DRSEARCH_K_SNIPPET_H */
