/* _k_hits.h: part of the drsearch.index._kernels module, included once by _kernels.c (one
 * translation unit: its static functions inline across parts). A complete search in one call (search_hits) and the Hit objects it builds. */
#ifndef DRSEARCH_K_HITS_H
#define DRSEARCH_K_HITS_H

/* ---- a complete search in one call ---------------------------------------------------------
 * search_hits: what Scorer.rank_texts, SnippetMaker's plan and make_hits do for the usual
 * complete search (every term a posting list, the texts in the file's pages), in one call:
 * a thread serving searches holds the GIL for the Python objects of the query and its hits,
 * not for the glue between calls (docs/ENGINE.md, "Threads"). */

/* One snippet stem of the plan: a (stem, weight) pair's objects, the stem's length and the
   weight's value. */
typedef struct {
    PyObject *stem, *weight;
    Py_ssize_t len;
    double w;
} PlanStem;

/* SnippetMaker's order: longest first, then by code points (str's <). */
static int
plan_cmp(const void *x, const void *y)
{
    const PlanStem *a = x, *b = y;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return PyUnicode_Compare(a->stem, b->stem); /* (two str: cannot fail) */
}

/* SnippetMaker._plan of (stem, weight) pairs, one per present term in phrase order: the pairs
   whose weight exceeds `floor` (all of them when none does), empty stems left out, each stem
   once with its largest weight, longest first then by code points. New lists of the stems and
   their weights in *stems and *weights; -1 with an exception set otherwise. */
static int
snip_plan(PyObject *pairs, double floor, PyObject **stems, PyObject **weights)
{
    *stems = *weights = NULL;
    PyObject *seq = PySequence_Fast(pairs, "stems must be a sequence of (stem, weight) pairs");
    if (!seq)
        return -1;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PlanStem *p = PyMem_RawMalloc(sizeof *p * (size_t)(n + 1));
    Py_ssize_t m = 0;
    int rc = -1, above = 0;
    if (!p) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0)) || !PyFloat_Check(PyTuple_GET_ITEM(pair, 1))) {
            PyErr_SetString(PyExc_TypeError, "a snippet stem is a (str, float) pair");
            goto done;
        }
        above |= PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(pair, 1)) > floor;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        PlanStem e = {PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), 0, 0.0};
        e.len = PyUnicode_GET_LENGTH(e.stem);
        e.w = PyFloat_AS_DOUBLE(e.weight);
        if (e.len && (!above || e.w > floor))
            p[m++] = e;
    }
    if (m > 1)
        qsort(p, (size_t)m, sizeof *p, plan_cmp);
    *stems = PyList_New(0);
    *weights = PyList_New(0);
    if (!*stems || !*weights)
        goto done;
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (kept && p[kept - 1].len == p[i].len && PyUnicode_Compare(p[kept - 1].stem, p[i].stem) == 0) {
            if (p[kept - 1].w < p[i].w) /* (a dict's get(stem, -1.0) < weight) */
                p[kept - 1] = p[i];
            continue;
        }
        p[kept++] = p[i];
    }
    for (Py_ssize_t i = 0; i < kept; i++)
        if (PyList_Append(*stems, p[i].stem) < 0 || PyList_Append(*weights, p[i].weight) < 0)
            goto done;
    rc = 0;
done:
    if (rc < 0) {
        Py_CLEAR(*stems);
        Py_CLEAR(*weights);
    }
    PyMem_RawFree(p);
    Py_DECREF(seq);
    return rc;
}

/* A numeric attribute of a term object, into *as_ssize (a Py_ssize_t) or, where that is NULL,
   *as_double; -1 with an exception set. */
static int
term_number(PyObject *t, PyObject *name, Py_ssize_t *as_ssize, double *as_double)
{
    PyObject *v = PyObject_GetAttr(t, name);
    if (!v)
        return -1;
    int failed; /* the converters' error value, then PyErr_Occurred tells */
    if (as_ssize)
        failed = (*as_ssize = PyLong_AsSsize_t(v)) == -1;
    else
        failed = (*as_double = PyFloat_AsDouble(v)) == -1.0;
    Py_DECREF(v);
    return failed && PyErr_Occurred() ? -1 : 0;
}

/* A buffer attribute of a term object into q->tb[q->n_tb] (then counted). */
static int
term_buffer(Query *q, PyObject *t, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(t, name);
    if (!v)
        return -1;
    const int rc = PyObject_GetBuffer(v, &q->tb[q->n_tb], PyBUF_SIMPLE);
    Py_DECREF(v);
    if (rc < 0)
        return -1;
    q->n_tb++;
    return 0;
}

static PyObject *S_df, *S_pieces, *S_chunks, *S_impacts, *S_block_max, *S_max_impact;

/* Term t of a search_hits query (a PagedTerm or a SparseTerm: `paged` says which; df, its df,
   read once by search_hits' first pass) into q->L[t] (and q->G[t]), as rank_maxscore and
   rank_blocks take a term's arguments. */
static int
search_term(Query *q, Py_ssize_t t, PyObject *term, int paged, Py_ssize_t df)
{
    List *l = &q->L[t];
    if (paged) {
        if (term_buffer(q, term, S_pieces) < 0 ||
            paged_init(&q->G[t], l, &q->file, &q->tb[q->n_tb - 1], df, q->prune && q->bp > 0,
                       q->bp) < 0)
            return -1;
    } else {
        if (term_buffer(q, term, S_chunks) < 0 || term_buffer(q, term, S_impacts) < 0 ||
            list_bind(l, &q->tb[q->n_tb - 2], &q->tb[q->n_tb - 1]) < 0)
            return -1;
        if (q->prune && q->bp > 0) {
            if (term_buffer(q, term, S_block_max) < 0)
                return -1;
            const Py_buffer *xb = &q->tb[q->n_tb - 1];
            if (check_buffer_as(xb, 8, 0, "block_max")) /* read with load_f64 */
                return -1;
            const Py_ssize_t nb = xb->len / 8;
            if (nb && nb != (l->len + q->bp - 1) / q->bp) {
                PyErr_SetString(PyExc_ValueError,
                                "block_max: one maximum per block_postings postings (or none) needed");
                return -1;
            }
            l->bmax = nb ? (const unsigned char *)xb->buf : NULL;
        }
    }
    if (q->prune) {
        if (term_number(term, S_max_impact, NULL, &l->bound) < 0)
            return -1;
        if (!(l->bound >= 0.0)) {
            PyErr_SetString(PyExc_ValueError, "a term's bound is negative or NaN");
            return -1;
        }
    }
    return 0;
}

/* rank_one's pass over list l of a prepared query (sparse or paged: l_id and l_im read either):
   each document's best chunk (documents' chunks are consecutive rowids; ties: the lower rowid,
   seen first) into q->heap, sorted best first. The count kept, or -1 for rowids not strictly
   ascending within 1..n_rows. With the GIL: meant for short lists. */
static Py_ssize_t
one_pass(Query *q, List *l)
{
    Best *heap = q->heap, cur = {0.0, 0};
    const Py_ssize_t k = q->k, n_rows = q->n - 1;
    Py_ssize_t hn = 0;
    int64_t prev = 0, doc = -1;
    for (Py_ssize_t i = 0; i < l->len; i++) {
        const int64_t r = l_id(l, i);
        if (r <= prev || r > n_rows)
            return -1;
        prev = r;
        const double im = l_im(l, i);
        /* Below the k-th kept score (the heap full): it cannot enter, whatever its document. */
        if ((hn == k && im < heap[0].score) || (q->bl && q->bl[r]))
            continue;
        if (q->cd[r] != doc) {
            if (doc >= 0)
                heap_offer(heap, &hn, k, cur);
            doc = q->cd[r];
            cur.score = im;
            cur.chunk = r;
        } else if (im > cur.score) {
            cur.score = im;
            cur.chunk = r;
        }
    }
    if (doc >= 0)
        heap_offer(heap, &hn, k, cur);
    if (l->bad_code)
        return -1; /* a code beyond its table (l->bad_code tells the caller) */
    qsort(heap, (size_t)hn, sizeof(Best), cmp_best);
    return hn;
}

/* query_alloc for one_pass alone (a ranked search of one short list): the blocked buffer, the
   checks of chunk_doc's and its lengths, one term's List and buffers, the k-heap; none of the
   windowed kernels' scratch (a dozen allocations a query, and a bit per chunk of the window). */
static int
query_alloc_one(Query *q, PyObject *blocked_obj, Py_ssize_t n_rows)
{
    if (query_alloc_shared(q, blocked_obj, n_rows) < 0)
        return -1;
    q->tb = PyMem_RawCalloc(3 * 2, sizeof(Py_buffer));
    q->L = PyMem_RawCalloc(2, sizeof(List));
    q->heap = PyMem_RawMalloc(sizeof(Best) * (size_t)q->k);
    if (!q->tb || !q->L || !q->heap) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The five hit buffers of search_hits' context (chunk_doc, chunk_ordinal, field_offsets,
   fields, pieces or None) into b, checked. -1 with an exception set (the caller releases what
   was acquired). */
static int
hit_buffers_get(PyObject *hits, Py_buffer *b)
{
    PyObject *pieces = PyTuple_GET_ITEM(hits, 4);
    for (int i = 0; i < 4; i++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(hits, i), &b[i], PyBUF_SIMPLE) < 0)
            return -1;
    if (pieces != Py_None && PyObject_GetBuffer(pieces, &b[4], PyBUF_SIMPLE) < 0)
        return -1;
    if (check_buffer(&b[0], 4, "chunk_doc") || check_buffer(&b[1], 4, "chunk_ordinal") ||
        check_buffer(&b[2], 8, "field_offsets"))
        return -1;
    if (b[0].len != b[1].len) {
        PyErr_SetString(PyExc_ValueError, "search_hits: the chunk arrays differ in length");
        return -1;
    }
    const int64_t *pc = b[4].obj ? (const int64_t *)b[4].buf : NULL;
    if (pc && (check_buffer(&b[4], 8, "pieces") || b[4].len < 24 ||
               (pc[0] > 0 && (pc[1] <= 0 || pc[2] <= 0 || pc[1] > pc[2])))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "search_hits: malformed pieces header");
        return -1;
    }
    return 0;
}

/* The address of byte x of the document fields (in memory, or in the file's pages: h->pc), or
   NULL where it is outside them (hit_make then reports it). */
static const char *
field_byte(const HitFields *h, int64_t x)
{
    if (!h->pc)
        return x >= 0 && x < h->n_data ? h->data + x : NULL;
    const int64_t len = h->pc[0], first = h->pc[1], per = h->pc[2];
    if (x < 0 || x >= len || per <= 0)
        return NULL;
    const int64_t i = x < first ? 0 : 1 + (x - first) / per, skip = x < first ? x : (x - first) % per;
    if (3 + i >= h->n_pc || h->pc[3 + i] < 0 || h->pc[3 + i] + skip >= h->n_data)
        return NULL;
    return h->data + h->pc[3 + i] + skip;
}

/* Ask for what hit_make will read of the n chunks `c` (their documents and ordinals, the
   documents' field offsets, then their fields' first bytes) ahead of reading it: a ranked
   search's hits are documents all over the file, each one's reads a chain of cache misses
   (chunk -> document -> offsets -> fields), taken here for all of them at once rather than
   one after the other. Reads nothing it is not sure lies inside the buffers. */
static void
hits_prefetch(const HitFields *h, const int64_t *c, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (c[i] >= 1 && c[i] < h->n_chunk_rows) {
            __builtin_prefetch(&h->doc_of[c[i]]);
            __builtin_prefetch(&h->ord_of[c[i]]);
        }
    for (Py_ssize_t i = 0; i < n; i++)
        if (c[i] >= 1 && c[i] < h->n_chunk_rows) {
            const int64_t d = h->doc_of[c[i]];
            if (d >= 1 && 3 * d + 3 < h->n_offs)
                __builtin_prefetch(&h->o[3 * d]);
        }
    for (Py_ssize_t i = 0; i < n; i++)
        if (c[i] >= 1 && c[i] < h->n_chunk_rows) {
            const int64_t d = h->doc_of[c[i]];
            for (int f = 0; f < 3 && d >= 1 && 3 * d + 3 < h->n_offs; f++) {
                const char *a = field_byte(h, h->o[3 * d + f]);
                if (a)
                    __builtin_prefetch(a);
            }
        }
}

/* search_hits without texts: the hits of the n ranked chunks (from the rescoring's sc, or
   the chunk rowids ci and scores cs), with '' for text and snippet. */
static PyObject *
bare_hits(PyTypeObject *type, const Py_buffer *b, const Scored *sc, const int64_t *ci,
          const double *cs, const Best *heap, Py_ssize_t n)
{
    PyObject *empty = PyUnicode_FromStringAndSize("", 0), *out = empty ? PyList_New(n) : NULL;
    const HitFields hf = hit_fields(&b[0], &b[1], &b[2], &b[3], b[4].obj ? &b[4] : NULL);
    int64_t ahead[128];
    if (n <= 128) {
        for (Py_ssize_t i = 0; i < n; i++)
            ahead[i] = sc ? (int64_t)sc[i].chunk : heap ? heap[i].chunk : ci[i];
        hits_prefetch(&hf, ahead, n);
    }
    for (Py_ssize_t i = 0; out && i < n; i++) {
        const double s = sc ? sc[i].score : heap ? heap[i].score : cs[i];
        const long long c = sc ? (long long)sc[i].chunk : heap ? (long long)heap[i].chunk : (long long)ci[i];
        PyObject *score = PyFloat_FromDouble(s);
        PyObject *hit = !score ? NULL : hit_make(type, &hf, i + 1, c, score, empty, empty);
        if (!hit)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, hit);
    }
    Py_XDECREF(empty);
    return out;
}

PyDoc_STRVAR(search_hits_doc,
"search_hits(context, terms, stems, k, time_budget, deadline[, rescore, margin[, one_list]])\n"
"    -> list | tuple | None | False | NotImplemented\n\n"
"A complete search's hits in one call: rank_maxscore or rank_blocks (Scorer's choice: pruning\n"
"always, never, or by its `auto` rule) of `terms` (PagedTerm or SparseTerm objects, phrase\n"
"order) with the chunks' texts and snippets (the texts argument, its stems planned here as\n"
"SnippetMaker plans `stems`, one (stem, weight) pair per term) and make_hits' hits, margin -1.\n"
"context: a tuple (n_rows, blocked, chunk_doc, buf, out_chunks, out_scores, file,\n"
"block_postings, pruning (0 auto, 1 always, 2 never), prune_all_k, prune_all_rows, page_size,\n"
"usable, root, column, width, hits, hit_type, idf_floor, paged_type, sparse_type), the\n"
"arguments the calls take that do not change between queries (hits: texts' (chunk_doc,\n"
"chunk_ordinal, field_offsets, fields, pieces)).\n"
"Returns the hits (a list), or (hits, texts) where the kernel left a snippet to the Python\n"
"code (None in its hit), None when time_budget or deadline ran out, False when reading the\n"
"texts failed (no exception: the caller reads them again by texts_snippets, which reports\n"
"it), NotImplemented for a term of another type (the caller ranks by the other calls).\n"
"rescore, margin (None: none): beside clamped terms, rank_maxscore's `rescore` (its tuple) and\n"
"margin (>= 0): `terms` are then the lists alone, the hits those of the exact rescoring, and\n"
"NotImplemented is returned where the candidates do not settle the top k.\n"
"stems None: the hits without texts ('' for text and snippet; never a tuple or False). A\n"
"query of one list of at most one_list postings (without rescore) is ranked as rank_one ranks\n"
"it (one pass, with the GIL), wherever the list lies.\n"
"Raises ValueError as rank_maxscore and make_hits do.");

static PyObject *
search_hits(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ctx, *terms_obj, *pairs, *blocked, *file_obj, *hits, *type, *paged_type, *sparse_type;
    PyObject *resc = Py_None, *terms = NULL, *stems = NULL, *weights = NULL, *result = NULL, *made = NULL;
    Py_ssize_t k, n_rows, bp, pruning, prune_all_k, prune_all_rows, page_size, usable, root, column,
        width, one_list = 0;
    double budget, deadline, idf_floor, margin = -1.0;
    Py_ssize_t *dfs = NULL; /* each term's df, read once */
    Query q;
    memset(&q, 0, sizeof(q));
    Py_buffer tfile = {0}, hb[5];
    memset(hb, 0, sizeof(hb));
    if (!PyArg_ParseTuple(args, "O!OOndd|Odn:search_hits", &PyTuple_Type, &ctx, &terms_obj, &pairs,
                          &k, &budget, &deadline, &resc, &margin, &one_list))
        return NULL;
    if (!PyArg_ParseTuple(ctx, "nOy*w*w*w*OnnnnnnnnnO!OdOO:search_hits context", &n_rows,
                          &blocked, &q.docs, &q.buf, &q.out_ids, &q.out_scores, &file_obj, &bp,
                          &pruning, &prune_all_k, &prune_all_rows, &page_size, &usable, &root,
                          &column, &width, &PyTuple_Type, &hits, &type, &idf_floor, &paged_type,
                          &sparse_type))
        return NULL;
    if (PyTuple_GET_SIZE(hits) != 5) {
        PyErr_SetString(PyExc_TypeError, "search_hits: hits is a tuple (chunk_doc, chunk_ordinal, "
                                         "field_offsets, fields, pieces)");
        goto done;
    }
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "search_hits: hit_type must be a tuple subclass");
        goto done;
    }
    if (!(terms = PySequence_Fast(terms_obj, "terms must be a sequence")))
        goto done;
    const Py_ssize_t n_terms = q.n_terms = PySequence_Fast_GET_SIZE(terms);
    Py_ssize_t total = 0, n_paged = 0;
    if (!(dfs = PyMem_RawMalloc(((size_t)n_terms + 1) * sizeof(Py_ssize_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *term = PySequence_Fast_GET_ITEM(terms, t);
        if (Py_TYPE(term) != (PyTypeObject *)paged_type && Py_TYPE(term) != (PyTypeObject *)sparse_type) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        if (term_number(term, S_df, &dfs[t], NULL) < 0)
            goto done;
        total += dfs[t];
        n_paged += Py_TYPE(term) == (PyTypeObject *)paged_type;
    }
    if (n_terms < 1 || bp < 0) {
        PyErr_SetString(PyExc_ValueError, "search_hits: no terms, or block_postings < 0");
        goto done;
    }
    /* Scorer._prunes */
    q.prune = pruning == 1 ||
              (pruning == 0 && ((bp && k <= prune_all_k && n_rows >= prune_all_rows) || 4 * total < n_rows));
    q.k = k;
    q.margin = resc == Py_None ? -1.0 : margin;
    if (resc != Py_None && !(margin >= 0.0)) {
        PyErr_SetString(PyExc_ValueError, "search_hits: rescore needs a margin >= 0");
        goto done;
    }
    q.budget = budget;
    q.bp = bp;
    /* A ranked search of one short list: one_pass, which needs no bounds and no scratch. */
    const int one = resc == Py_None && n_terms == 1 && dfs[0] <= one_list;
    if (one)
        q.prune = 0;
    if ((one ? query_alloc_one(&q, blocked, n_rows) : query_alloc(&q, blocked, n_rows)) < 0)
        goto done;
    if (n_paged) {
        if (PyObject_GetBuffer(file_obj, &q.file, PyBUF_SIMPLE) < 0)
            goto done;
        if (!(q.G = PyMem_RawCalloc((size_t)n_terms + 1, sizeof(Paged)))) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *term = PySequence_Fast_GET_ITEM(terms, t);
        if (search_term(&q, t, term, Py_TYPE(term) == (PyTypeObject *)paged_type, dfs[t]) < 0)
            goto done;
    }
    query_bind(&q);
    if (pairs == Py_None) { /* no texts: the ranking and the hits */
        if (hit_buffers_get(hits, hb) < 0 || (resc != Py_None && !(q.rescore = rescore_from_spec(resc, k))))
            goto done;
        Py_ssize_t n = -1;
        if (one) {
            if (!query_lists_in_range(&q) || (n = one_pass(&q, &q.L[0])) < 0) {
                PyErr_SetString(PyExc_ValueError, q.L[0].bad_code ? BAD_CODE : BAD_LIST);
                goto done;
            }
            result = bare_hits((PyTypeObject *)type, hb, NULL, NULL, NULL, q.heap, n);
            goto done;
        }
        Outcome o;
        const int rescored = query_exec(&q, &o);
        if (o.bad) {
            PyErr_SetString(PyExc_ValueError, o.bad == 2 ? BAD_CODE : BAD_LIST);
            goto done;
        }
        if (o.late || (q.rescore && !rescored)) {
            result = Py_NewRef(o.late ? Py_None : Py_NotImplemented);
            goto done;
        }
        if (q.rescore && q.rescore->nomem) {
            PyErr_NoMemory();
            goto done;
        }
        const Scored *sc = q.rescore ? q.rescore->sc : NULL;
        result = bare_hits((PyTypeObject *)type, hb, sc, q.oi, q.os, NULL,
                           sc ? q.rescore->taken : o.n_out);
        goto done;
    }
    if (snip_plan(pairs, idf_floor, &stems, &weights) < 0 ||
        PyObject_GetBuffer(file_obj, &tfile, PyBUF_SIMPLE) < 0)
        goto done;
    /* (texts_run_new owns tfile from here, released with the run) */
    TextsRun *r = q.texts = texts_run_new(&tfile, page_size, usable, root, column, stems, weights,
                                          width, deadline, k, "search_hits");
    if (!r)
        goto done;
    PyObject *pieces = PyTuple_GET_ITEM(hits, 4);
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(hits, 0), &r->hit_doc, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(PyTuple_GET_ITEM(hits, 1), &r->hit_ordinal, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(PyTuple_GET_ITEM(hits, 2), &r->hit_offsets, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(PyTuple_GET_ITEM(hits, 3), &r->hit_fields, PyBUF_SIMPLE) < 0 ||
        (pieces != Py_None && PyObject_GetBuffer(pieces, &r->hit_pieces, PyBUF_SIMPLE) < 0))
        goto done;
    if (check_buffer(&r->hit_doc, 4, "chunk_doc") || check_buffer(&r->hit_ordinal, 4, "chunk_ordinal") ||
        check_buffer(&r->hit_offsets, 8, "field_offsets"))
        goto done;
    if (r->hit_doc.len != r->hit_ordinal.len) {
        PyErr_SetString(PyExc_ValueError, "search_hits: the chunk arrays differ in length");
        goto done;
    }
    const int64_t *pc = r->hit_pieces.obj ? (const int64_t *)r->hit_pieces.buf : NULL;
    if (pc && (check_buffer(&r->hit_pieces, 8, "pieces") || r->hit_pieces.len < 24 ||
               (pc[0] > 0 && (pc[1] <= 0 || pc[2] <= 0 || pc[1] > pc[2])))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "search_hits: malformed pieces header");
        goto done;
    }
    r->warm = 1;
    if (resc != Py_None && !(q.rescore = rescore_from_spec(resc, k)))
        goto done;
    Outcome o;
    int rescored = 0;
    if (one) { /* the one-term pass (with the GIL), then the texts as the windowed kernels read them */
        memset(&o, 0, sizeof(o));
        const Py_ssize_t n = query_lists_in_range(&q) ? one_pass(&q, &q.L[0]) : -1;
        if (n < 0) {
            PyErr_SetString(PyExc_ValueError, q.L[0].bad_code ? BAD_CODE : BAD_LIST);
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            q.oi[i] = q.heap[i].chunk;
            q.os[i] = q.heap[i].score;
        }
        o.n_out = n;
        NOGIL_BEGIN
        texts_run_work(r, q.oi, n);
        NOGIL_END
    } else {
        rescored = query_exec(&q, &o);
    }
    if (o.bad) {
        PyErr_SetString(PyExc_ValueError, o.bad == 2 ? BAD_CODE : BAD_LIST);
        goto done;
    }
    if (o.late) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (q.rescore && !rescored) { /* the candidates did not settle the top k */
        result = Py_NewRef(Py_NotImplemented);
        goto done;
    }
    if (q.rescore && q.rescore->nomem) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(made = texts_run_made(r)) || made == Py_None || made == Py_False) {
        result = made; /* NULL (an exception), None (late) or False (texts not read) */
        made = NULL;
        goto done;
    }
    PyObject *texts = PyTuple_GET_ITEM(made, 0), *snips = PyTuple_GET_ITEM(made, 1);
    const HitFields hf = hit_fields(&r->hit_doc, &r->hit_ordinal, &r->hit_offsets, &r->hit_fields,
                                    pc ? &r->hit_pieces : NULL);
    const Scored *sc = q.rescore ? q.rescore->sc : NULL;
    const Py_ssize_t n = sc ? q.rescore->taken : o.n_out;
    if (PyList_GET_SIZE(texts) != n) {
        PyErr_SetString(PyExc_SystemError, "search_hits: texts and hits differ in number");
        goto done;
    }
    PyObject *out = PyList_New(n);
    int left = 0; /* snippets left to the Python code */
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *score = PyFloat_FromDouble(sc ? sc[i].score : q.os[i]);
        PyObject *snip = PyList_GET_ITEM(snips, i);
        left |= snip == Py_None;
        const long long c = sc ? (long long)sc[i].chunk : (long long)q.oi[i];
        PyObject *hit = !score ? NULL : hit_make((PyTypeObject *)type, &hf, i + 1, c, score,
                                                 PyList_GET_ITEM(texts, i), snip);
        if (!hit)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, hit);
    }
    if (out && left)
        result = Py_BuildValue("(NO)", out, texts);
    else
        result = out;
done:
    for (int i = 0; i < 5; i++)
        PyBuffer_Release(&hb[i]); /* (a no-op on one never acquired) */
    PyMem_RawFree(dfs);
    Py_XDECREF(made);
    Py_XDECREF(stems);
    Py_XDECREF(weights);
    Py_XDECREF(terms);
    query_release(&q);
    return result;
}


#endif /* DRSEARCH_K_HITS_H */
