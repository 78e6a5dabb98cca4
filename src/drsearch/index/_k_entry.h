/* _k_entry.h: part of the drsearch.index._kernels module, included once by _kernels.c (one
 * translation unit: its static functions inline across parts). The ranking entry points (rank_blocks, rank_maxscore, ...) and their argument parsing. */
#ifndef DRSEARCH_K_ENTRY_H
#define DRSEARCH_K_ENTRY_H

/* ------------------------------------------------------------------------------------------
 * The entry points.
 * ------------------------------------------------------------------------------------------ */

PyDoc_STRVAR(rank_blocks_doc,
"rank_blocks(chunks, impacts, n_rows, blocked, chunk_doc, k, margin, buf, out_chunks,\n"
"            out_scores, time_budget[, paged[, texts[, rescore]]]) -> (n_out, n_full, cut[, ...])\n\n"
"chunks/impacts: sequences of uint32 / float64 buffers, one pair per term in phrase order\n"
"(rowids ascending, all < n_rows + 1). buf: a float64 buffer of zeros (its length is the\n"
"block size; handed back zeroed). Documents' chunks must be consecutive rowids.\n"
"margin < 0: writes the best chunk of each of the k best documents, best first (score\n"
"descending, then lower rowid). margin >= 0: writes, ascending, every chunk scoring at least\n"
"cut - margin - 2e-9*|cut| (cut = the k-th best document's score) when k documents are\n"
"scored. n_full: min(k, documents scored). time_budget: seconds (<= 0: none); when it runs\n"
"out, returns (-1, 0, 0.0).\n"
"paged (None: none): (file, tables), one table per term: None (the term's chunks/impacts\n"
"buffers are read) or (df, pieces), its posting BLOB left in `file` (a buffer of the whole\n"
"mapped file) as blob_pieces describes it: df float64 impacts, df uint32 rowids, then nothing\n"
"or its block maxima; the term's chunks/impacts (and block_max) entries are then ignored.\n"
"A coded list (schema 5) has its code width w (1 or 2) and table size T, then its T impacts\n"
"(float64, ascending) after the pieces in `pieces`; its BLOB holds that table, df w-byte codes\n"
"(padded to 4 bytes), df rowids and its block maxima, a posting's impact being table[code].\n"
"Every piece is checked to lie within file and the pieces to add up to those bytes (12*df\n"
"for a raw list, + 8 per block maximum): a ValueError otherwise, and for a code >= T.\n"
"texts (None: none; margin < 0 only, else ValueError): texts_snippets' arguments but the\n"
"rowids, as a tuple (file, page_size, usable, root, column, stems, weights, width, deadline\n"
"[, hits]): the chunks written out are read and their snippets made in the same call, without\n"
"the GIL (with hits, (chunk_doc, chunk_ordinal, field_offsets, fields, pieces) as make_hits\n"
"takes them, what make_hits will read of those chunks is read too, into the cache),\n"
"and the result is (n_out, n_full, cut, made): made is texts_snippets' (texts, snippets), None\n"
"when its deadline (or time_budget) passed, or False when reading them failed (no exception:\n"
"the caller reads them by texts_snippets, which reports the failure).\n"
"rescore (None: none; margin >= 0 only, else ValueError): rescore's arguments but the\n"
"candidates and k, as a tuple (terms, file, chunk_len, k1, b, avgdl, k1p1, idf, chunk_doc), no\n"
"term of kind 3: when k documents are scored and the k-th's score exceeds margin + 2e-9*|cut|\n"
"(the candidates settle the top k), the chunks written out are rescored in the same call\n"
"(and with texts, the kept chunks' texts made), and the result is (n_out, n_full, cut, ranked,\n"
"made): rescore's ranking and made as above (None without texts); both None when the\n"
"candidates did not settle the top k or the time ran out.");

static PyObject *
rank_blocks(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ids_seq, *imps_seq, *blocked_obj, *result = NULL;
    Py_ssize_t n_rows;
    Query q;
    memset(&q, 0, sizeof(q));
    PyObject *paged = Py_None, *texts = Py_None, *resc = Py_None;
    if (!PyArg_ParseTuple(args, "OOnOy*ndw*w*w*d|OOO:rank_blocks", &ids_seq, &imps_seq, &n_rows,
                          &blocked_obj, &q.docs, &q.k, &q.margin, &q.buf, &q.out_ids,
                          &q.out_scores, &q.budget, &paged, &texts, &resc))
        return NULL;
    if (query_prepare(&q, ids_seq, imps_seq, NULL, blocked_obj, n_rows, paged) == 0 &&
        query_rescore_arg(&q, resc) == 0 && query_texts(&q, texts) == 0)
        result = query_run(&q);
    query_release(&q);
    return result;
}

PyDoc_STRVAR(rank_maxscore_doc,
"rank_maxscore(chunks, impacts, bounds, n_rows, blocked, chunk_doc, k, margin, buf,\n"
"              out_chunks, out_scores, time_budget[, counts[, block_max, block_postings\n"
"              [, paged[, texts[, rescore]]]]]) -> (n_out, n_full, cut[, ...])\n\n"
"rank_blocks with exact MaxScore and block-max pruning: the same arguments plus bounds, a\n"
"float64 buffer with one upper bound per term (>= every impact of its list), and bit for\n"
"bit the same results. block_max (None: none): one float64 buffer per term, empty or holding\n"
"ceil(len / block_postings) maxima, the j-th >= the impacts of postings\n"
"[j*block_postings, (j+1)*block_postings). Only the postings it visits are checked: a list\n"
"whose last rowid is beyond the last chunk raises ValueError, as does a visited rowid out of\n"
"order. counts: an optional int64 buffer (or None) of 2 or 3, set to (postings accumulated,\n"
"chunks rescored[, windows skipped by their block maxima]): what pruning left. paged, texts,\n"
"rescore: as rank_blocks' (a paged list's block maxima are its BLOB's, when block_max is not\n"
"None).");

static PyObject *
rank_maxscore(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ids_seq, *imps_seq, *blocked_obj, *counts_obj = Py_None, *bmax_obj = Py_None;
    PyObject *result = NULL, *paged = Py_None, *texts = Py_None, *resc = Py_None;
    Py_ssize_t n_rows;
    Query q;
    memset(&q, 0, sizeof(q));
    q.prune = 1;
    if (!PyArg_ParseTuple(args, "OOy*nOy*ndw*w*w*d|OOnOOO:rank_maxscore", &ids_seq, &imps_seq,
                          &q.bounds, &n_rows, &blocked_obj, &q.docs, &q.k, &q.margin, &q.buf,
                          &q.out_ids, &q.out_scores, &q.budget, &counts_obj, &bmax_obj, &q.bp,
                          &paged, &texts, &resc))
        return NULL;
    if (counts_obj != Py_None &&
        PyObject_GetBuffer(counts_obj, &q.counts, PyBUF_WRITABLE | PyBUF_SIMPLE) < 0) {
        query_release(&q);
        return NULL;
    }
    if (query_prepare(&q, ids_seq, imps_seq, bmax_obj == Py_None ? NULL : bmax_obj, blocked_obj,
                      n_rows, paged) == 0 && query_rescore_arg(&q, resc) == 0 &&
        query_texts(&q, texts) == 0)
        result = query_run(&q);
    query_release(&q);
    return result;
}

PyDoc_STRVAR(paged_pick_doc,
"paged_pick(file, df, pieces, keys, out) -> None\n\n"
"The impacts of chunk rowids `keys` (uint32, ascending) in one posting list left in the\n"
"file's pages (df and blob_pieces' table, as rank_blocks' paged): out[i] (float64, one per\n"
"key) is the impact of keys[i], or 0.0 when the list does not hold it. What the exact\n"
"rescoring beside clamped terms needs of a paged list, without copying it. Raises ValueError\n"
"for a table that is not within the file or keys not ascending.");

static PyObject *
paged_pick(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer file, table, keys, out;
    Py_ssize_t df;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*y*w*:paged_pick", &file, &df, &table, &keys, &out))
        return NULL;
    Paged g;
    List l;
    if (check_buffer(&keys, 4, "keys") || check_buffer(&out, 8, "out") ||
        paged_init(&g, &l, &file, &table, df, 0, 1) < 0)
        goto done;
    const Py_ssize_t n = keys.len / 4;
    if (out.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "paged_pick: one output per key");
        goto done;
    }
    const uint32_t *key = (const uint32_t *)keys.buf;
    double *o = (double *)out.buf;
    Py_ssize_t p = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i && key[i] <= key[i - 1]) {
            PyErr_SetString(PyExc_ValueError, "paged_pick: keys not ascending");
            goto done;
        }
        p = gallop(&l, p, l.len, key[i]);
        o[i] = p < l.len && l_id(&l, p) == key[i] ? l_im(&l, p) : 0.0;
    }
    if (l.bad_code) {
        PyErr_SetString(PyExc_ValueError, BAD_CODE);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&file);
    PyBuffer_Release(&table);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&out);
    return result;
}

PyDoc_STRVAR(rescore_doc,
"rescore(cands, terms, file, chunk_len, k1, b, avgdl, k1p1, idf, chunk_doc, k[, texts])\n"
"-> list[tuple[int, float]] | tuple[list[tuple[int, float]], made]\n\n"
"The exact rescoring beside clamped-IDF terms, and its top k: each candidate chunk rowid of\n"
"`cands` (uint32, ascending) scored by every term of `terms` in phrase order (FTS5's sum:\n"
"0.0, then each term's impact, +0.0 where it has none), then ordered by score descending and\n"
"lower rowid, each document's first, the first k as (rowid, score). What Scorer._rescore and\n"
"_finish compute with numpy, bit for bit, without a numpy call per term. A term\n"
"is (0, df, pieces): a posting list left in `file`'s pages (as rank_blocks' paged); (1,\n"
"chunks, impacts): a posting list as arrays (uint32 ascending, float64); (2, pieces): a\n"
"clamped term's tf array (uint16 per chunk rowid, index 0 unused: its dense_tfs BLOB) left in\n"
"`file`'s pages; (3, tfs): that term's tfs of the candidates (uint16, one per candidate). A\n"
"clamped term's impact is idf * ((tf * k1p1) / (tf + norm)) with norm = k1 * ((1 - b) +\n"
"(b * chunk_len[rowid]) / avgdl) (chunk_len: int32 per rowid), chunk_doc (int32 per rowid)\n"
"names each chunk's document. Raises ValueError for inconsistent arguments, candidates not\n"
"ascending or out of range, or a table that is not within the file. texts: as rank_blocks'\n"
"(the k chunks' texts and snippets made in the same call): the result is (ranked, made).\n"
"The GIL is released for the scoring (and texts) but where the work is a few candidates.");

typedef struct {
    int kind;
    Paged g;
    List l;
    Py_ssize_t p;        /* kinds 0 and 1: the list cursor (candidates ascending) */
    const uint16_t *tfs; /* kind 3 */
} RescoreTerm;

typedef struct {
    uint32_t chunk;
    double score;
} Scored;

/* FTS5's order: score descending, then lower rowid. */
static int
scored_cmp(const void *a, const void *b)
{
    const Scored *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->chunk < y->chunk ? -1 : x->chunk > y->chunk;
}

/* The exact rescoring's terms and arrays, prepared with the GIL (rescore_prepare), run with or
   without it (rescore_run: plain C and the raw allocator), its result made with it. */
struct Rescore {
    Py_buffer file, lens, docs; /* held (obj NULL: not) */
    PyObject *terms;            /* PySequence_Fast of the terms */
    RescoreTerm *T;
    Py_buffer *held;
    Py_ssize_t n_held, n_terms, n_rows, k, n_tfs; /* n_tfs: a kind-3 term's tf count, -1 none */
    double k1, b, avgdl, k1p1, idf;
    /* a run's */
    Scored *sc;
    Py_ssize_t taken;
    int nomem;
    int bad_code; /* a list's code beyond its table was read */
};

static void
rescore_release(Rescore *r)
{
    buffers_free(r->held, r->n_held);
    PyMem_RawFree(r->T);
    PyMem_RawFree(r->sc);
    Py_XDECREF(r->terms);
    PyBuffer_Release(&r->file); /* (a no-op on a buffer never acquired) */
    PyBuffer_Release(&r->lens);
    PyBuffer_Release(&r->docs);
}

/* Check and hold the terms and arrays (r->file, r->lens, r->docs already held). 0, or -1 with
   an exception set (r released by the caller). */
static int
rescore_prepare(Rescore *r, PyObject *terms_obj)
{
    r->n_tfs = -1;
    if (check_buffer(&r->lens, 4, "chunk_len") || check_buffer(&r->docs, 4, "chunk_doc"))
        return -1;
    r->n_rows = r->lens.len / 4; /* rowids 1 .. n_rows - 1 */
    if (r->k < 1 || r->docs.len != r->lens.len || !(r->avgdl > 0.0)) {
        PyErr_SetString(PyExc_ValueError, "rescore: inconsistent arguments");
        return -1;
    }
    r->terms = PySequence_Fast(terms_obj, "terms must be a sequence");
    if (!r->terms)
        return -1;
    const Py_ssize_t n_terms = r->n_terms = PySequence_Fast_GET_SIZE(r->terms);
    r->T = PyMem_RawCalloc((size_t)n_terms + 1, sizeof *r->T);
    r->held = PyMem_RawCalloc(2 * (size_t)n_terms + 1, sizeof *r->held);
    if (!r->T || !r->held) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *item = PySequence_Fast_GET_ITEM(r->terms, t), *x = NULL, *y = NULL;
        Py_ssize_t df = 0;
        RescoreTerm *rt = &r->T[t];
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 2 ||
            (rt->kind = PyLong_AsLong(PyTuple_GET_ITEM(item, 0))) < 0 || rt->kind > 3) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "rescore: a term is (kind 0-3, ...)");
            return -1;
        }
        if (rt->kind == 0 && !PyArg_ParseTuple(item, "inO;a paged list is (0, df, pieces)", &rt->kind,
                                               &df, &x))
            return -1;
        if (rt->kind == 1 && !PyArg_ParseTuple(item, "iOO;a list is (1, chunks, impacts)", &rt->kind,
                                               &x, &y))
            return -1;
        if (rt->kind >= 2 && !PyArg_ParseTuple(item, "iO;a clamped term is (2, pieces) or (3, tfs)",
                                               &rt->kind, &x))
            return -1;
        Py_buffer *bx = &r->held[r->n_held];
        if (PyObject_GetBuffer(x, bx, PyBUF_SIMPLE) < 0)
            return -1;
        r->n_held++;
        if (rt->kind == 0) {
            if (paged_init(&rt->g, &rt->l, &r->file, bx, df, 0, 1) < 0)
                return -1;
        } else if (rt->kind == 1) {
            Py_buffer *by = &r->held[r->n_held];
            if (PyObject_GetBuffer(y, by, PyBUF_SIMPLE) < 0)
                return -1;
            r->n_held++;
            if (check_buffer(bx, 4, "chunks") || check_buffer(by, 8, "impacts"))
                return -1;
            if (bx->len / 4 != by->len / 8) {
                PyErr_SetString(PyExc_ValueError, "rescore: a list's chunks and impacts differ in length");
                return -1;
            }
            rt->l.id = (const uint32_t *)bx->buf;
            rt->l.im = (const double *)by->buf;
            rt->l.len = bx->len / 4;
        } else if (rt->kind == 2) {
            if (paged_blob(&rt->g, &r->file, bx) < 0)
                return -1;
            if (rt->g.len != 2 * (int64_t)r->n_rows) {
                PyErr_Format(PyExc_ValueError, "rescore: a tf BLOB of %lld bytes for %zd chunk rowids",
                             (long long)rt->g.len, r->n_rows);
                return -1;
            }
        } else {
            if (check_buffer(bx, 2, "tfs"))
                return -1;
            if (r->n_tfs >= 0 && bx->len / 2 != r->n_tfs) {
                PyErr_SetString(PyExc_ValueError, "rescore: one tf per candidate");
                return -1;
            }
            r->n_tfs = bx->len / 2;
            rt->tfs = (const uint16_t *)bx->buf;
        }
    }
    return 0;
}

/* Score the n candidates (ascending rowids), sort them in FTS5's order and keep each
   document's first, the first k: r->sc[0 .. r->taken). Plain C (the raw allocator: it runs
   without the GIL); r->nomem when memory ran out. */
static void
rescore_run(Rescore *r, const uint32_t *cand, Py_ssize_t n)
{
    const Py_ssize_t k = r->k, n_terms = r->n_terms;
    r->taken = 0;
    Py_ssize_t cap = 16; /* an open-addressing set of the documents taken (at most k) */
    while (cap < 2 * (k < n ? k : n) + 2)
        cap *= 2;
    Scored *sc = r->sc = PyMem_RawMalloc(sizeof *sc * ((size_t)n + 1));
    int32_t *seen = PyMem_RawMalloc(sizeof *seen * (size_t)cap);
    if (!sc || !seen) {
        PyMem_RawFree(seen);
        r->nomem = 1;
        return;
    }
    const int32_t *len_of = (const int32_t *)r->lens.buf, *doc_of = (const int32_t *)r->docs.buf;
    const double k1 = r->k1, b = r->b, avgdl = r->avgdl, k1p1 = r->k1p1, idf = r->idf;
    const double omb = 1.0 - b;
    for (Py_ssize_t t = 0; t < n_terms; t++)
        r->T[t].p = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint32_t c = cand[i];
        double score = 0.0;
        for (Py_ssize_t t = 0; t < n_terms; t++) {
            RescoreTerm *rt = &r->T[t];
            if (rt->kind <= 1) { /* +0.0 where the list does not hold it: exact */
                rt->p = gallop(&rt->l, rt->p, rt->l.len, c);
                score += rt->p < rt->l.len && l_id(&rt->l, rt->p) == c ? l_im(&rt->l, rt->p) : 0.0;
                continue;
            }
            uint16_t tf16;
            if (rt->kind == 2)
                pg_gather(&rt->g, 2 * (int64_t)c, (unsigned char *)&tf16, 2);
            else
                tf16 = rt->tfs[i];
            /* numpy's elementwise order (Scorer.norms, term_impacts): no contraction */
            const double tf = (double)tf16;
            const double norm = k1 * (omb + (b * (double)len_of[c]) / avgdl);
            score += idf * ((tf * k1p1) / (tf + norm));
        }
        sc[i].chunk = c;
        sc[i].score = score;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++)
        if (r->T[t].kind <= 1 && r->T[t].l.bad_code)
            r->bad_code = 1;
    qsort(sc, (size_t)n, sizeof *sc, scored_cmp);
    for (Py_ssize_t j = 0; j < cap; j++)
        seen[j] = -1;
    Py_ssize_t taken = 0;
    for (Py_ssize_t i = 0; i < n && taken < k; i++) {
        const int32_t d = doc_of[sc[i].chunk];
        Py_ssize_t h = (Py_ssize_t)(((uint32_t)d * 2654435761u) & (uint32_t)(cap - 1));
        while (seen[h] != -1 && seen[h] != d)
            h = (h + 1) & (cap - 1);
        if (seen[h] == d)
            continue;
        seen[h] = d;
        sc[taken++] = sc[i]; /* taken <= i: the kept ones packed in order */
    }
    PyMem_RawFree(seen);
    r->taken = taken;
}

/* The texts of the rescored chunks (r->sc[0 .. r->taken)), in order. Plain C. */
static void
rescore_texts(Rescore *r, TextsRun *texts)
{
    int64_t *picked = PyMem_RawMalloc(sizeof *picked * ((size_t)r->taken + 1));
    if (!picked) {
        r->nomem = 1;
        return;
    }
    for (Py_ssize_t i = 0; i < r->taken; i++)
        picked[i] = r->sc[i].chunk;
    texts_run_work(texts, picked, r->taken);
    PyMem_RawFree(picked);
}

/* The run's [(rowid, score)] (a new reference), NULL with an exception set. */
static PyObject *
rescore_result(Rescore *r)
{
    if (r->nomem)
        return PyErr_NoMemory();
    if (r->bad_code) {
        PyErr_SetString(PyExc_ValueError, BAD_CODE);
        return NULL;
    }
    PyObject *out = PyList_New(r->taken);
    for (Py_ssize_t i = 0; out && i < r->taken; i++) {
        PyObject *pair = Py_BuildValue("(kd)", (unsigned long)r->sc[i].chunk, r->sc[i].score);
        if (!pair) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, pair);
    }
    return out;
}

/* The exact rescoring of a ranking's candidates (n ascending rowids, as it writes them out),
   then the texts of the chunks it keeps: plain C, run in the ranking's GIL-free stretch. */
static void
rescore_candidates(Rescore *r, const int64_t *ids, Py_ssize_t n, TextsRun *texts)
{
    uint32_t *cand = PyMem_RawMalloc(sizeof *cand * ((size_t)n + 1));
    if (!cand) {
        r->nomem = 1;
        return;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        cand[i] = (uint32_t)ids[i];
    rescore_run(r, cand, n);
    PyMem_RawFree(cand);
    if (texts && !r->nomem)
        rescore_texts(r, texts);
}

static void
rescore_free(Rescore *r)
{
    if (!r)
        return;
    rescore_release(r);
    PyMem_RawFree(r);
}

/* The `rescore` argument of rank_blocks and rank_maxscore: rescore's arguments but the
   candidates and k, (terms, file, chunk_len, k1, b, avgdl, k1p1, idf, chunk_doc); no term of
   kind 3 (its tfs are the candidates', unknown before the ranking). NULL with an exception. */
static Rescore *
rescore_from_spec(PyObject *spec, Py_ssize_t k)
{
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "rescore: a tuple (terms, file, chunk_len, k1, b, avgdl, "
                                         "k1p1, idf, chunk_doc)");
        return NULL;
    }
    Rescore *r = PyMem_RawCalloc(1, sizeof *r);
    if (!r)
        return (Rescore *)PyErr_NoMemory();
    PyObject *terms;
    r->k = k;
    if (!PyArg_ParseTuple(spec, "Oy*y*dddddy*:rescore", &terms, &r->file, &r->lens, &r->k1, &r->b,
                          &r->avgdl, &r->k1p1, &r->idf, &r->docs) ||
        rescore_prepare(r, terms) < 0)
        goto fail;
    if (r->n_tfs >= 0) {
        PyErr_SetString(PyExc_ValueError, "rescore: a term of kind 3 (tfs per candidate) needs "
                                          "the candidates: call rescore()");
        goto fail;
    }
    return r;
fail:
    rescore_free(r);
    return NULL;
}

static PyObject *
rescore(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer cands;
    PyObject *terms_obj, *out = NULL, *texts_obj = Py_None;
    Rescore r;
    memset(&r, 0, sizeof r);
    TextsRun *texts = NULL;
    if (!PyArg_ParseTuple(args, "y*Oy*y*dddddy*n|O:rescore", &cands, &terms_obj, &r.file, &r.lens,
                          &r.k1, &r.b, &r.avgdl, &r.k1p1, &r.idf, &r.docs, &r.k, &texts_obj))
        return NULL;
    if (check_buffer(&cands, 4, "cands") || rescore_prepare(&r, terms_obj) < 0)
        goto done;
    const Py_ssize_t n = cands.len / 4;
    const uint32_t *cand = (const uint32_t *)cands.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((i && cand[i] <= cand[i - 1]) || cand[i] < 1 || (Py_ssize_t)cand[i] >= r.n_rows) {
            PyErr_SetString(PyExc_ValueError, "rescore: candidates not ascending within the rowids");
            goto done;
        }
    }
    if (r.n_tfs >= 0 && r.n_tfs != n) {
        PyErr_SetString(PyExc_ValueError, "rescore: one tf per candidate");
        goto done;
    }
    if (texts_obj != Py_None && !(texts = texts_run_from_spec(texts_obj, r.k < n ? r.k : n)))
        goto done;
    /* The GIL released for the scoring, its sort and the texts (each candidate galloped into
       every list where it lies in the file's pages: cache misses, ~16 us for a dozen
       candidates and seven terms), kept where the work is a few hundred nanoseconds (a
       hand-off would cost more). */
    GilRelease g = {NULL, 0}; /* (no clock read where it keeps the GIL) */
    if (texts || n * r.n_terms >= RESCORE_NOGIL_MIN)
        g = gil_release();
    rescore_run(&r, cand, n);
    if (texts && !r.nomem)
        rescore_texts(&r, texts);
    if (g.save)
        gil_retake(g);
    out = rescore_result(&r);
    if (out && texts) {
        PyObject *made = texts_run_made(texts);
        PyObject *both = made ? PyTuple_Pack(2, out, made) : NULL;
        Py_XDECREF(made);
        Py_SETREF(out, both);
    }
done:
    texts_run_free(texts);
    rescore_release(&r);
    PyBuffer_Release(&cands);
    return out;
}

PyDoc_STRVAR(rank_one_doc,
"rank_one(chunks, impacts, n_rows, blocked, chunk_doc, k) -> list[tuple[int, float]]\n\n"
"The k best documents of a query of one sparse list, as (best chunk rowid, score) in FTS5's\n"
"order (score descending, then lower rowid): a chunk's score is its impact (FTS5's sum of one\n"
"phrase, 0.0 + impact, the same bits). One pass keeps each document's best chunk (documents'\n"
"chunks are consecutive rowids) into a k-heap; blocked chunks (a bool per rowid, or None) are\n"
"skipped. Raises ValueError for rowids not strictly ascending within 1..n_rows. Keeps the\n"
"GIL (meant for short lists).");

static PyObject *
rank_one(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer ids, imps, docs, blocked = {0};
    PyObject *blocked_obj, *out = NULL;
    Py_ssize_t n_rows, k;
    Best *heap = NULL;
    if (!PyArg_ParseTuple(args, "y*y*nOy*n:rank_one", &ids, &imps, &n_rows, &blocked_obj, &docs, &k))
        return NULL;
    if (blocked_obj != Py_None && PyObject_GetBuffer(blocked_obj, &blocked, PyBUF_SIMPLE) < 0)
        goto done;
    if (check_buffer(&ids, 4, "chunks") || check_buffer(&imps, 8, "impacts") ||
        check_buffer(&docs, 4, "chunk_doc"))
        goto done;
    const Py_ssize_t n = ids.len / 4;
    if (imps.len / 8 != n || k < 1 || n_rows < 0 || docs.len / 4 < n_rows + 1 ||
        (blocked.obj && blocked.len < n_rows + 1)) {
        PyErr_SetString(PyExc_ValueError, "rank_one: inconsistent arguments");
        goto done;
    }
    heap = PyMem_RawMalloc(sizeof(Best) * (size_t)k);
    if (!heap) {
        PyErr_NoMemory();
        goto done;
    }
    const uint32_t *id = (const uint32_t *)ids.buf;
    const double *im = (const double *)imps.buf;
    const int32_t *cd = (const int32_t *)docs.buf;
    const uint8_t *bl = blocked.obj ? (const uint8_t *)blocked.buf : NULL;
    Py_ssize_t hn = 0;
    int64_t prev = 0, doc = -1;
    Best cur = {0.0, 0};
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t r = id[i];
        if (r <= prev || r > n_rows) {
            PyErr_SetString(PyExc_ValueError, BAD_LIST);
            goto done;
        }
        prev = r;
        /* Below the k-th kept score (the heap full): it cannot enter, whatever its document. */
        if ((hn == k && im[i] < heap[0].score) || (bl && bl[r]))
            continue;
        if (cd[r] != doc) {
            if (doc >= 0)
                heap_offer(heap, &hn, k, cur);
            doc = cd[r];
            cur.score = im[i];
            cur.chunk = r;
        } else if (im[i] > cur.score) { /* ties: the lower rowid, seen first, stays */
            cur.score = im[i];
            cur.chunk = r;
        }
    }
    if (doc >= 0)
        heap_offer(heap, &hn, k, cur);
    qsort(heap, (size_t)hn, sizeof(Best), cmp_best);
    out = best_pairs(heap, hn);
done:
    PyMem_RawFree(heap);
    if (blocked.obj)
        PyBuffer_Release(&blocked);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&imps);
    PyBuffer_Release(&docs);
    return out;
}

/* Arguments that describe a mapped file and one of its tables' columns, checked. */
static int
db_geometry_ok(const Py_buffer *file, Py_ssize_t page_size, Py_ssize_t usable, Py_ssize_t root,
               Py_ssize_t column)
{
    return !(page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) ||
             usable < 480 || usable > page_size || file->len % page_size ||
             file->len / page_size > UINT32_MAX || root < 1 || root > file->len / page_size ||
             column < 0 || column > 64);
}

PyDoc_STRVAR(read_blobs_doc,
"read_blobs(file, page_size, usable, root, column, rowids, outs) -> None\n\n"
"Copy the BLOB in column `column` of each row `rowids[i]` of the rowid table whose b-tree\n"
"root page is `root` into the writable buffer outs[i], which must be exactly as long as the\n"
"BLOB. file: the whole SQLite file, read-only (an mmap), of pages of `page_size` bytes with\n"
"`usable` usable bytes each (page_size minus the header's reserved bytes); it must not change\n"
"while mapped (a frozen, immutable index). Columns before `column` must be NULL or integers\n"
"(an INTEGER PRIMARY KEY is stored as NULL). Without the GIL when the bytes are many. Raises\n"
"ValueError naming the row for a damaged file, a missing row or a BLOB of another length;\n"
"nothing is read outside `file`.");

static PyObject *
read_blobs(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer file;
    Py_ssize_t page_size, usable, root, column;
    PyObject *rowids_obj, *outs_obj, *rowids = NULL, *outs = NULL, *result = NULL;
    Py_buffer *bufs = NULL;
    int64_t *ids = NULL;
    Py_ssize_t n = 0, got = 0;
    if (!PyArg_ParseTuple(args, "y*nnnnOO:read_blobs", &file, &page_size, &usable, &root, &column,
                          &rowids_obj, &outs_obj))
        return NULL;
    if (!db_geometry_ok(&file, page_size, usable, root, column)) {
        PyErr_SetString(PyExc_ValueError, "read_blobs: invalid file geometry or table");
        goto done;
    }
    rowids = PySequence_Fast(rowids_obj, "rowids must be a sequence");
    outs = PySequence_Fast(outs_obj, "outs must be a sequence");
    if (!rowids || !outs)
        goto done;
    n = PySequence_Fast_GET_SIZE(rowids);
    if (PySequence_Fast_GET_SIZE(outs) != n) {
        PyErr_SetString(PyExc_ValueError, "read_blobs: rowids and outs differ in length");
        goto done;
    }
    bufs = PyMem_RawCalloc((size_t)n + 1, sizeof(Py_buffer));
    ids = PyMem_RawCalloc((size_t)n + 1, sizeof(int64_t));
    if (!bufs || !ids) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t bytes = 0;
    for (; got < n; got++) {
        ids[got] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(rowids, got));
        if (ids[got] == -1 && PyErr_Occurred())
            goto done;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(outs, got), &bufs[got],
                               PyBUF_WRITABLE | PyBUF_SIMPLE) < 0)
            goto done;
        bytes += bufs[got].len;
    }
    DbFile db = {(const unsigned char *)file.buf, (uint64_t)file.len, (uint32_t)page_size,
                 (uint32_t)usable, (uint32_t)(file.len / page_size)};
    PageError why = NULL;
    Py_ssize_t i = 0;
    if (bytes >= NOGIL_MIN_BYTES) {
        NOGIL_BEGIN
        for (; i < n && !why; i++)
            why = db_read_blob(&db, (uint32_t)root, ids[i], (int)column, (uint64_t)bufs[i].len,
                               bufs[i].buf);
        NOGIL_END
    } else {
        for (; i < n && !why; i++)
            why = db_read_blob(&db, (uint32_t)root, ids[i], (int)column, (uint64_t)bufs[i].len,
                               bufs[i].buf);
    }
    if (why)
        PyErr_Format(PyExc_ValueError, "row %lld: %s", (long long)ids[i - 1], why);
    else
        result = Py_NewRef(Py_None);
done:
    buffers_free(bufs, got);
    PyMem_RawFree(ids);
    Py_XDECREF(rowids);
    Py_XDECREF(outs);
    PyBuffer_Release(&file);
    return result;
}

/* Where the TEXT value of each of the n rowids `ids` lies in column `column` of the table at
   page `root`: vals[i] (a b-tree descent each: cheap). *spilled: the bytes of the values that
   continue on overflow pages, *total: all their bytes. Plain C (runs without the GIL). NULL,
   or the first failing row's reason with *failed its index. */
static PageError
text_find(const DbFile *db, Py_ssize_t root, Py_ssize_t column, const int64_t *ids, Py_ssize_t n,
          DbValue *vals, uint64_t *spilled, uint64_t *total, Py_ssize_t *failed)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PageError why = db_value(db, (uint32_t)root, ids[i], (int)column, &vals[i]);
        if (!why && (vals[i].serial < 13 || vals[i].serial % 2 == 0))
            why = "record column is not TEXT";
        if (why) {
            *failed = i;
            return why;
        }
        if (vals[i].at + vals[i].len > vals[i].n_local)
            *spilled += vals[i].len;
        *total += vals[i].len;
    }
    return NULL;
}

/* Where the TEXT value of each of the n rowids of `rowids` (from PySequence_Fast) lies in
   column `column` of the table at page `root`: vals[i], with ids[i] its rowid (a b-tree
   descent each: cheap). *spilled: the bytes of the values that continue on overflow pages,
   *total: all their bytes. 0, or -1 with an exception set (ValueError naming the row). */
static int
text_values(const DbFile *db, Py_ssize_t root, Py_ssize_t column, PyObject *rowids, Py_ssize_t n,
            DbValue *vals, int64_t *ids, uint64_t *spilled, uint64_t *total)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        ids[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(rowids, i));
        if (ids[i] == -1 && PyErr_Occurred())
            return -1;
    }
    Py_ssize_t failed = -1;
    PageError why = text_find(db, root, column, ids, n, vals, spilled, total, &failed);
    if (why) {
        PyErr_Format(PyExc_ValueError, "row %lld: %s", (long long)ids[failed], why);
        return -1;
    }
    return 0;
}

/* Where each of n values found by text_values lies: src[i] on its leaf page, or its bytes
   copied (one value after another) into `copy` (the spilled bytes text_values counted) when it
   continues on overflow pages. Plain C on the mapped file (runs without the GIL). NULL, or a
   damaged page's reason with *failed the value's index. */
static PageError
text_sources(const DbFile *db, const DbValue *vals, Py_ssize_t n, unsigned char *copy,
             const unsigned char **src, Py_ssize_t *failed)
{
    uint64_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const DbValue *v = &vals[i];
        if (v->at + v->len <= v->n_local) {
            src[i] = v->local + v->at;
            continue;
        }
        PageError why = db_copy_payload(db, v->local, v->n_local, v->payload, v->ovfl, v->at,
                                        v->len, copy + at);
        if (why) {
            *failed = i;
            return why;
        }
        src[i] = copy + at;
        at += v->len;
    }
    return NULL;
}

PyDoc_STRVAR(read_texts_doc,
"read_texts(file, page_size, usable, root, column, rowids) -> list[str]\n\n"
"The TEXT in column `column` of each row `rowids[i]` of the rowid table rooted at `root`,\n"
"decoded from UTF-8 (the file's text encoding must be UTF-8). The file and columns as for\n"
"read_blobs; the copy runs without the GIL when the bytes are many. Raises ValueError naming\n"
"the row for a damaged file, a missing row or a value that is not TEXT, and\n"
"UnicodeDecodeError for bytes that are not UTF-8; nothing is read outside `file`.");

static PyObject *
read_texts(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer file;
    Py_ssize_t page_size, usable, root, column;
    PyObject *rowids_obj, *rowids = NULL, *result = NULL;
    DbValue *vals = NULL;
    int64_t *ids = NULL;
    unsigned char *bytes = NULL;
    const unsigned char **src = NULL;
    if (!PyArg_ParseTuple(args, "y*nnnnO:read_texts", &file, &page_size, &usable, &root, &column,
                          &rowids_obj))
        return NULL;
    if (!db_geometry_ok(&file, page_size, usable, root, column)) {
        PyErr_SetString(PyExc_ValueError, "read_texts: invalid file geometry or table");
        goto done;
    }
    rowids = PySequence_Fast(rowids_obj, "rowids must be a sequence");
    if (!rowids)
        goto done;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(rowids);
    vals = PyMem_RawCalloc((size_t)n + 1, sizeof *vals);
    ids = PyMem_RawCalloc((size_t)n + 1, sizeof *ids);
    src = PyMem_RawCalloc((size_t)n + 1, sizeof *src);
    if (!vals || !ids || !src) {
        PyErr_NoMemory();
        goto done;
    }
    const DbFile db = {(const unsigned char *)file.buf, (uint64_t)file.len, (uint32_t)page_size,
                       (uint32_t)usable, (uint32_t)(file.len / page_size)};
    /* Find every value first (a b-tree descent each: cheap), then copy the ones that continue
       on overflow pages into one buffer (without the GIL when they are many bytes), then
       decode: a value wholly on its leaf page is decoded where it lies. */
    uint64_t spilled = 0, total = 0;
    if (text_values(&db, root, column, rowids, n, vals, ids, &spilled, &total) < 0)
        goto done;
    bytes = PyMem_RawMalloc(spilled ? spilled : 1);
    if (!bytes) {
        PyErr_NoMemory();
        goto done;
    }
    PageError why;
    Py_ssize_t failed = -1;
    if (spilled >= NOGIL_MIN_BYTES) {
        NOGIL_BEGIN
        why = text_sources(&db, vals, n, bytes, src, &failed);
        NOGIL_END
    } else {
        why = text_sources(&db, vals, n, bytes, src, &failed);
    }
    if (why) {
        PyErr_Format(PyExc_ValueError, "row %lld: %s", (long long)ids[failed], why);
        goto done;
    }
    result = PyList_New(n);
    for (Py_ssize_t i = 0; result && i < n; i++) {
        PyObject *text = PyUnicode_DecodeUTF8((const char *)src[i], (Py_ssize_t)vals[i].len, "strict");
        if (!text) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, text);
    }
done:
    PyMem_RawFree(bytes);
    PyMem_RawFree(vals);
    PyMem_RawFree(ids);
    PyMem_RawFree(src);
    Py_XDECREF(rowids);
    PyBuffer_Release(&file);
    return result;
}

PyDoc_STRVAR(find_rows_doc,
"find_rows(file, page_size, usable, root, keys, columns, kinds) -> list | None\n\n"
"The rows of a WITHOUT ROWID table (an index b-tree rooted at `root`) whose TEXT primary key\n"
"(its first column) is each str of `keys`: a tuple of the numbers in `columns` (indices of\n"
"later columns) for a key that is there, else None. kinds: one letter per column, 'i' an\n"
"INTEGER (an int), 'r' a REAL (a float; SQLite stores an integral REAL as an integer). The\n"
"file as for read_blobs; its text encoding must be UTF-8. None instead of the list when a\n"
"cell on a key's path spills to overflow pages (a key of about 1,000 bytes): the caller asks\n"
"SQLite. Raises ValueError naming the key for a damaged file.");

static PyObject *
find_rows(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer file;
    Py_ssize_t page_size, usable, root;
    PyObject *keys_obj, *columns_obj, *keys = NULL, *columns = NULL, *result = NULL;
    const char *kinds;
    Py_ssize_t n_kinds;
    if (!PyArg_ParseTuple(args, "y*nnnOOs#:find_rows", &file, &page_size, &usable, &root, &keys_obj,
                          &columns_obj, &kinds, &n_kinds))
        return NULL;
    int cols[16];
    if (!db_geometry_ok(&file, page_size, usable, root, 0)) {
        PyErr_SetString(PyExc_ValueError, "find_rows: invalid file geometry or table");
        goto done;
    }
    keys = PySequence_Fast(keys_obj, "keys must be a sequence");
    columns = PySequence_Fast(columns_obj, "columns must be a sequence");
    if (!keys || !columns)
        goto done;
    const Py_ssize_t n_cols = PySequence_Fast_GET_SIZE(columns);
    if (n_cols != n_kinds || n_cols > 16) {
        PyErr_SetString(PyExc_ValueError, "find_rows: columns and kinds differ in length (or > 16)");
        goto done;
    }
    for (Py_ssize_t j = 0; j < n_cols; j++) {
        const long c = PyLong_AsLong(PySequence_Fast_GET_ITEM(columns, j));
        if (c == -1 && PyErr_Occurred())
            goto done;
        if (c < 1 || c > 64 || (kinds[j] != 'i' && kinds[j] != 'r')) {
            PyErr_SetString(PyExc_ValueError, "find_rows: a column is not 1..64 or a kind not 'i'/'r'");
            goto done;
        }
        cols[j] = (int)c;
    }
    const DbFile db = {(const unsigned char *)file.buf, (uint64_t)file.len, (uint32_t)page_size,
                       (uint32_t)usable, (uint32_t)(file.len / page_size)};
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(keys);
    result = PyList_New(n);
    for (Py_ssize_t i = 0; result && i < n; i++) {
        PyObject *k = PySequence_Fast_GET_ITEM(keys, i);
        Py_ssize_t len;
        const char *key = PyUnicode_Check(k) ? PyUnicode_AsUTF8AndSize(k, &len) : NULL;
        if (!key) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "find_rows: a key is not a str");
            Py_CLEAR(result);
            break;
        }
        DbIndexCell cell;
        int found = 0;
        PageError why = db_find_key(&db, (uint32_t)root, (const unsigned char *)key, (uint64_t)len,
                                    &found, &cell);
        if (!why && found && cell.n_local < cell.size)
            why = DB_SPILLED;
        if (why == DB_SPILLED) {
            Py_CLEAR(result);
            result = Py_NewRef(Py_None);
            break;
        }
        if (why) {
            PyErr_Format(PyExc_ValueError, "key %R: %s", k, why);
            Py_CLEAR(result);
            break;
        }
        if (!found) {
            PyList_SET_ITEM(result, i, Py_NewRef(Py_None));
            continue;
        }
        PyObject *row = PyTuple_New(n_cols);
        for (Py_ssize_t j = 0; row && j < n_cols; j++) {
            int64_t iv;
            double dv;
            int is_int;
            why = db_cell_number(&cell, cols[j], &iv, &dv, &is_int);
            if (!why && kinds[j] == 'i' && !is_int)
                why = "record column is not an INTEGER";
            if (why) {
                PyErr_Format(PyExc_ValueError, "key %R: %s", k, why);
                Py_CLEAR(row);
                break;
            }
            PyObject *v = kinds[j] == 'i' ? PyLong_FromLongLong(iv) : PyFloat_FromDouble(dv);
            if (!v) {
                Py_CLEAR(row);
                break;
            }
            PyTuple_SET_ITEM(row, j, v);
        }
        if (!row) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i, row);
    }
done:
    Py_XDECREF(keys);
    Py_XDECREF(columns);
    PyBuffer_Release(&file);
    return result;
}

PyDoc_STRVAR(make_hits_doc,
"make_hits(hit_type, chunks, scores, chunk_doc, chunk_ordinal, field_offsets, fields[, pieces\n"
"          [, texts, snippets]]) -> list\n\n"
"The ranked hits: for the i-th chunk rowid of `chunks` (a list of ints) and its score\n"
"(scores[i], the same float object), hit_type((i + 1, docid, url, title, score, ordinal,\n"
"texts[i], snippets[i])) made as tuple.__new__(hit_type, ...) (hit_type: a tuple subclass, the\n"
"engine's Hit; '' for the text and snippet without `texts` and `snippets`, str lists as long\n"
"as `chunks`, the same objects in the hits). chunk_doc / chunk_ordinal: int32 per chunk\n"
"rowid (index 0 unused);\n"
"field_offsets: int64, field f of document d is fields[offs[3d + f] : offs[3d + f + 1]] in\n"
"UTF-8 (DocTable's arrays). Raises ValueError for a rowid or document out of range, a\n"
"document without a docid, offsets outside `fields`, or bytes that are not UTF-8. With\n"
"`pieces` (blob_pieces' table of the fields BLOB; None for none), `fields` is the whole file\n"
"and the fields are read from its pages.");

PyDoc_STRVAR(blob_pieces_doc,
"blob_pieces(file, page_size, usable, root, column, rowid) -> bytes\n\n"
"Where the BLOB in column `column` of row `rowid` (file, geometry, table as for read_blobs)\n"
"lies in `file`: little-endian int64s, [length, bytes of the first piece, bytes of each later\n"
"piece but the last, then each piece's offset in the file], the pieces being the value's part\n"
"on its leaf page and on each overflow page in chain order; byte x of the value is in piece\n"
"0 when x < first, else in piece 1 + (x - first) // per. Walks the chain once. Raises\n"
"ValueError for a damaged file or a value that is not a BLOB.");

static PyObject *
blob_pieces(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer file;
    Py_ssize_t page_size, usable, root, column;
    long long rowid;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*nnnnL:blob_pieces", &file, &page_size, &usable, &root, &column,
                          &rowid))
        return NULL;
    if (!db_geometry_ok(&file, page_size, usable, root, column)) {
        PyErr_SetString(PyExc_ValueError, "blob_pieces: invalid file geometry or table");
        goto done;
    }
    DbFile db = {(const unsigned char *)file.buf, (uint64_t)file.len, (uint32_t)page_size,
                 (uint32_t)usable, (uint32_t)(file.len / page_size)};
    int64_t head[3];
    uint64_t need = 0;
    PageError why = db_blob_pieces(&db, (uint32_t)root, (int64_t)rowid, (int)column, head, 3, &need);
    if (why && strcmp(why, "too small") != 0) {
        PyErr_Format(PyExc_ValueError, "row %lld: %s", rowid, why);
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(8 * need));
    if (!result)
        goto done;
    int64_t *out = (int64_t *)PyBytes_AS_STRING(result);
    if (why) {
        uint64_t got = 0;
        why = db_blob_pieces(&db, (uint32_t)root, (int64_t)rowid, (int)column, out, need, &got);
        if (!why && got != need)
            why = "overflow chain shorter than its payload";
        if (why) {
            PyErr_Format(PyExc_ValueError, "row %lld: %s", rowid, why);
            Py_CLEAR(result);
            goto done;
        }
    } else {
        memcpy(out, head, 8 * need);
    }
done:
    PyBuffer_Release(&file);
    return result;
}

/* One field of a document's (docid, url, title) as a str, or NULL with ValueError set. */
static PyObject *
doc_field(const char *data, Py_ssize_t n_data, int64_t a, int64_t b)
{
    if (a < 0 || b < a || b > n_data) {
        PyErr_SetString(PyExc_ValueError, "document field offsets outside the field table");
        return NULL;
    }
    return PyUnicode_DecodeUTF8(data + a, (Py_ssize_t)(b - a), "strict");
}

/* The same from a BLOB left in the file's pages: `pc` is blob_pieces' table (length, first
   piece's bytes, a middle piece's bytes, then each piece's offset in `file`). A field within
   one piece is decoded where it lies; one across pages is gathered first. */
static PyObject *
paged_field(const char *file, Py_ssize_t file_len, const int64_t *pc, Py_ssize_t n_pc, int64_t a,
            int64_t b)
{
    const int64_t len = pc[0], first = pc[1], per = pc[2];
    if (a < 0 || b < a || b > len) {
        PyErr_SetString(PyExc_ValueError, "document field offsets outside the field table");
        return NULL;
    }
    char small[512], *buf = small, *dst = NULL;
    PyObject *v = NULL;
    int64_t at = a;
    while (at < b) {
        const int64_t i = at < first ? 0 : 1 + (at - first) / per;
        const int64_t skip = at < first ? at : (at - first) % per;
        const int64_t piece = i == 0 ? first : per;
        const int64_t m = piece - skip < b - at ? piece - skip : b - at;
        if (3 + i >= n_pc || pc[3 + i] < 0 || pc[3 + i] + skip + m > file_len || m <= 0) {
            PyErr_SetString(PyExc_ValueError, "document field table pieces outside the file");
            goto done;
        }
        const char *src = file + pc[3 + i] + skip;
        if (at == a && m == b - a) /* wholly in one piece: no copy */
            return PyUnicode_DecodeUTF8(src, (Py_ssize_t)m, "strict");
        if (!dst) {
            if (b - a > (int64_t)sizeof(small) && !(buf = PyMem_RawMalloc((size_t)(b - a))))
                return PyErr_NoMemory();
            dst = buf;
        }
        memcpy(dst, src, (size_t)m);
        dst += m;
        at += m;
    }
    v = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)(b - a), "strict");
done:
    if (buf != small)
        PyMem_RawFree(buf);
    return v;
}

/* What make_hits reads of a hit: the chunks' documents and ordinals, the documents' field
   offsets and the fields (in memory, or with pc, blob_pieces' table, in the file's pages). */
typedef struct {
    const int32_t *doc_of, *ord_of;
    Py_ssize_t n_chunk_rows, n_offs, n_data, n_pc;
    const int64_t *o, *pc;
    const char *data;
} HitFields;

static HitFields
hit_fields(const Py_buffer *cd, const Py_buffer *co, const Py_buffer *offs, const Py_buffer *fields,
           const Py_buffer *pieces)
{
    HitFields h = {(const int32_t *)cd->buf, (const int32_t *)co->buf, cd->len / 4, offs->len / 8,
                   fields->len, pieces ? pieces->len / 8 : 0, (const int64_t *)offs->buf,
                   pieces ? (const int64_t *)pieces->buf : NULL, (const char *)fields->buf};
    return h;
}

/* hit_type((rank, docid, url, title, score, ordinal, text, snippet)) for chunk rowid c, made as
   tuple.__new__(hit_type, ...) makes it: what a NamedTuple's own __new__ does, without its
   Python frame (about half of the per-hit cost at k = 100), and without the argument tuple.
   `score` is stolen, text and snip borrowed. A new reference, or NULL with ValueError (a rowid
   or document out of range, a document without a docid, a field outside the table, bytes that
   are not UTF-8). */
static PyObject *
hit_make(PyTypeObject *type, const HitFields *h, Py_ssize_t rank, long long c, PyObject *score,
         PyObject *text, PyObject *snip)
{
    if (c < 1 || c >= h->n_chunk_rows) {
        Py_DECREF(score);
        PyErr_Format(PyExc_ValueError, "chunk rowid %lld out of range", c);
        return NULL;
    }
    const int64_t d = h->doc_of[c], *o = h->o;
    if (d < 1 || 3 * d + 3 >= h->n_offs || o[3 * d + 1] <= o[3 * d]) {
        Py_DECREF(score);
        PyErr_Format(PyExc_ValueError, "chunk %lld: document rowid %lld has no docid", c,
                     (long long)d);
        return NULL;
    }
    PyObject *hit = type->tp_alloc(type, 8); /* (its items NULL until set) */
    if (!hit) {
        Py_DECREF(score);
        return NULL;
    }
#if PY_VERSION_HEX >= 0x030E0000
    ((PyTupleObject *)hit)->ob_hash = -1; /* a tuple's cached hash: none yet (tuple.__new__'s) */
#endif
    PyTuple_SET_ITEM(hit, 4, score);
    PyTuple_SET_ITEM(hit, 6, Py_NewRef(text));
    PyTuple_SET_ITEM(hit, 7, Py_NewRef(snip));
    PyObject *v = PyLong_FromSsize_t(rank);
    PyTuple_SET_ITEM(hit, 0, v);
    for (int f = 0; f < 3 && v; f++) {
        v = h->pc ? paged_field(h->data, h->n_data, h->pc, h->n_pc, o[3 * d + f], o[3 * d + f + 1])
                  : doc_field(h->data, h->n_data, o[3 * d + f], o[3 * d + f + 1]);
        PyTuple_SET_ITEM(hit, 1 + f, v);
    }
    if (v) {
        v = PyLong_FromLong((long)h->ord_of[c]);
        PyTuple_SET_ITEM(hit, 5, v);
    }
    if (!v) {
        Py_DECREF(hit); /* the items set so far; the rest are NULL */
        return NULL;
    }
    return hit;
}

static PyObject *
make_hits(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *type, *chunks_obj, *scores_obj, *chunks = NULL, *scores = NULL, *out = NULL;
    PyObject *empty = NULL, *pieces_obj = Py_None, *texts_obj = Py_None, *snips_obj = Py_None;
    PyObject *texts = NULL, *snips = NULL;
    Py_buffer cd, co, offs, fields, pieces = {0};
    if (!PyArg_ParseTuple(args, "OOOy*y*y*y*|OOO:make_hits", &type, &chunks_obj, &scores_obj, &cd,
                          &co, &offs, &fields, &pieces_obj, &texts_obj, &snips_obj))
        return NULL;
    if (pieces_obj != Py_None && PyObject_GetBuffer(pieces_obj, &pieces, PyBUF_SIMPLE) < 0)
        goto done;
    const int paged = pieces.obj != NULL;
    if ((texts_obj == Py_None) != (snips_obj == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "make_hits: texts and snippets come together");
        goto done;
    }
    if (texts_obj != Py_None) {
        texts = PySequence_Fast(texts_obj, "texts must be a sequence");
        snips = texts ? PySequence_Fast(snips_obj, "snippets must be a sequence") : NULL;
        if (!snips)
            goto done;
    }
    if (paged && (check_buffer(&pieces, 8, "pieces") || pieces.len < 24)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "make_hits: pieces shorter than their header");
        goto done;
    }
    const int64_t *pc = paged ? (const int64_t *)pieces.buf : NULL;
    if (paged && pc[0] > 0 && (pc[1] <= 0 || pc[2] <= 0 || pc[1] > pc[2])) {
        PyErr_SetString(PyExc_ValueError, "make_hits: malformed pieces header");
        goto done;
    }
    if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "make_hits: hit_type must be a tuple subclass");
        goto done;
    }
    if (check_buffer(&cd, 4, "chunk_doc") || check_buffer(&co, 4, "chunk_ordinal") ||
        check_buffer(&offs, 8, "field_offsets"))
        goto done;
    chunks = PySequence_Fast(chunks_obj, "chunks must be a sequence");
    scores = PySequence_Fast(scores_obj, "scores must be a sequence");
    empty = PyUnicode_FromStringAndSize("", 0);
    if (!chunks || !scores || !empty)
        goto done;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(chunks);
    if (PySequence_Fast_GET_SIZE(scores) != n || cd.len != co.len ||
        (texts && (PySequence_Fast_GET_SIZE(texts) != n || PySequence_Fast_GET_SIZE(snips) != n))) {
        PyErr_SetString(PyExc_ValueError, "make_hits: chunks and scores (or the chunk arrays, "
                                          "texts or snippets) differ in length");
        goto done;
    }
    for (Py_ssize_t i = 0; texts && i < n; i++) {
        if (!PyUnicode_Check(PySequence_Fast_GET_ITEM(texts, i)) ||
            !PyUnicode_Check(PySequence_Fast_GET_ITEM(snips, i))) {
            PyErr_SetString(PyExc_TypeError, "make_hits: a text or snippet is not a str");
            goto done;
        }
    }
    const HitFields hf = hit_fields(&cd, &co, &offs, &fields, paged ? &pieces : NULL);
    out = PyList_New(n);
    if (!out)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        const long long c = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(chunks, i));
        if (c == -1 && PyErr_Occurred())
            goto fail;
        PyObject *hit = hit_make((PyTypeObject *)type, &hf, i + 1, c,
                                 Py_NewRef(PySequence_Fast_GET_ITEM(scores, i)),
                                 texts ? PySequence_Fast_GET_ITEM(texts, i) : empty,
                                 texts ? PySequence_Fast_GET_ITEM(snips, i) : empty);
        if (!hit)
            goto fail;
        PyList_SET_ITEM(out, i, hit);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(empty);
    Py_XDECREF(chunks);
    Py_XDECREF(scores);
    Py_XDECREF(texts);
    Py_XDECREF(snips);
    PyBuffer_Release(&cd);
    PyBuffer_Release(&co);
    PyBuffer_Release(&offs);
    PyBuffer_Release(&fields);
    if (pieces.obj)
        PyBuffer_Release(&pieces);
    return out;
}


#endif /* DRSEARCH_K_ENTRY_H */
