/* _k_query.h: part of the drsearch.index._kernels module, included once by _kernels.c (one
 * translation unit: its static functions inline across parts). The query: its posting lists and buffers, acquired from Python (with the GIL) and released after. */
#ifndef DRSEARCH_K_QUERY_H
#define DRSEARCH_K_QUERY_H

/* ------------------------------------------------------------------------------------------
 * The query: its lists and buffers, acquired from Python (with the GIL) and released after.
 * ------------------------------------------------------------------------------------------ */

/* A posting BLOB left in the file's pages (the engine's lists: no copy), as blob_pieces
   describes it: `len` bytes, the first `first` of them at base + off[0], then `per` bytes at
   base + off[i] for each later piece i (the last one shorter). The BLOB is the stored list:
   df float64 impacts, df uint32 rowids, then its block maxima; a value may straddle two
   pieces. */
typedef struct {
    const unsigned char *base;
    const int64_t *off;
    int64_t len, first, per;
    double inv_per; /* 1 / per: a piece's index by a multiply (then made exact) */
} Paged;

/* The piece holding byte x (0 <= x < len, checked by the caller) of a paged BLOB: its
   address, and in *ps, *pe the BLOB bytes [ps, pe) it holds. */
static inline const unsigned char *
pg_piece(const Paged *g, int64_t x, int64_t *ps, int64_t *pe)
{
    if (x < g->first) {
        *ps = 0;
        *pe = g->first;
        return g->base + g->off[0];
    }
    const int64_t y = x - g->first;
    int64_t i = (int64_t)((double)y * g->inv_per); /* floor(y / per), or one off */
    while (i > 0 && i * g->per > y)
        i--;
    while ((i + 1) * g->per <= y)
        i++;
    *ps = g->first + i * g->per;
    *pe = *ps + g->per < g->len ? *ps + g->per : g->len;
    return g->base + g->off[1 + i];
}

/* The address of byte x of a paged BLOB; *left: the bytes from there to its piece's end. */
static inline const unsigned char *
pg_at(const Paged *g, int64_t x, int64_t *left)
{
    int64_t ps, pe;
    const unsigned char *p = pg_piece(g, x, &ps, &pe);
    *left = pe - x;
    return p + (x - ps);
}

/* n bytes of a paged BLOB from byte x, across pieces. */
static void
pg_gather(const Paged *g, int64_t x, unsigned char *dst, int64_t n)
{
    while (n > 0) {
        int64_t left;
        const unsigned char *p = pg_at(g, x, &left);
        const int64_t m = left < n ? left : n;
        memcpy(dst, p, (size_t)m);
        dst += m;
        x += m;
        n -= m;
    }
}

/* One piece's worth of a paged list's rowids or impacts, kept by the list while the loop
   walks it: items [lo, hi) lie whole in that piece, item p at address base + w*p (base is an
   integer: it can point before the piece). Most reads hit it: two compares and a load. */
typedef struct {
    uintptr_t base;
    Py_ssize_t lo, hi;
} Span;

/* Point s at the piece holding item p of a stream of w-byte items at BLOB offset `at`. Item p
   itself may straddle that piece's end (it is then not in [lo, hi)). */
static inline void
span_load(const Paged *g, Span *s, int64_t at, int w, Py_ssize_t p)
{
    int64_t ps, pe;
    const unsigned char *a = pg_piece(g, at + w * (int64_t)p, &ps, &pe);

    const int64_t lo = ps <= at ? 0 : (ps - at + w - 1) / w, hi = (pe - at) / w;
    s->lo = (Py_ssize_t)lo;
    s->hi = (Py_ssize_t)(hi > lo ? hi : lo);
    s->base = (uintptr_t)a + (uintptr_t)(at - ps); /* unsigned: wraps, never overflows */
}

typedef struct {
    const uint32_t *id;   /* chunk rowids, ascending (NULL when paged) */
    const double *im;     /* impacts (NULL when paged) */
    Py_ssize_t len;
    const unsigned char *bmax; /* block maxima (float64 at 8*j, any alignment: load_f64):
                                  the j-th >= im[j*bp .. (j+1)*bp) (NULL: none) */
    double bound;         /* >= every impact (rank_blocks: unused) */
    const Paged *pg;      /* the list in the file's pages, or NULL: id, im and bmax above */
    int64_t id_at, bm_at; /* paged: the BLOB offsets of its rowids and block maxima (0: none) */
    int64_t im_at;        /* paged: the BLOB offset of its impacts or codes */
    /* paged, schema 5: a posting's impact is tab[code], its code a w-byte (1 or 2) integer;
       w 8 (tab NULL): the impact itself, a float64 (schema 4's layout) */
    const double *tab;
    Py_ssize_t ntab;
    int w;
    int bad_code;         /* set when a code >= ntab was read (then read as 0.0) */
    Span sid, sim, sbm;   /* paged: the pieces of rowids, impacts and block maxima last read */
} List;

static const char BAD_CODE[] = "a posting list holds an impact code beyond its table";

/* Item p (w bytes) of a paged stream at BLOB offset `at` into dst, when it is not in the span
   s: s is moved to its piece, and an item across two pieces is gathered. */
static void
span_read_slow(const Paged *g, Span *s, int64_t at, int w, Py_ssize_t p, void *dst)
{
    span_load(g, s, at, w, p);
    if (p >= s->lo && p < s->hi)
        memcpy(dst, (const void *)(s->base + (uintptr_t)w * (uintptr_t)p), (size_t)w);
    else
        pg_gather(g, at + w * (int64_t)p, (unsigned char *)dst, w);
}

static uint32_t
l_id_slow(List *l, Py_ssize_t p)
{
    uint32_t v;
    span_read_slow(l->pg, &l->sid, l->id_at, 4, p, &v);
    return v;
}

/* tab[code] of a coded list, or 0.0 with bad_code set for a code beyond its table (a
   damaged list: the caller reports it once its loop is done). */
static inline double
l_tab(List *l, unsigned code)
{
    if (__builtin_expect((Py_ssize_t)code < l->ntab, 1))
        return l->tab[code];
    l->bad_code = 1;
    return 0.0;
}

static double
l_im_slow(List *l, Py_ssize_t p)
{
    if (l->w == 8) {
        double v;
        span_read_slow(l->pg, &l->sim, l->im_at, 8, p, &v);
        return v;
    }
    unsigned char b[2] = {0, 0};
    span_read_slow(l->pg, &l->sim, l->im_at, l->w, p, b);
    return l_tab(l, l->w == 1 ? b[0] : (unsigned)b[0] | (unsigned)b[1] << 8);
}

/* A list's p-th rowid and impact, wherever it lies. */
static inline uint32_t
l_id(List *l, Py_ssize_t p)
{
    if (!l->pg)
        return l->id[p];
    if (__builtin_expect(p >= l->sid.lo && p < l->sid.hi, 1)) {
        uint32_t v;
        memcpy(&v, (const void *)(l->sid.base + 4 * (uintptr_t)p), 4);
        return v;
    }
    return l_id_slow(l, p);
}

static inline double
l_im(List *l, Py_ssize_t p)
{
    if (!l->pg)
        return l->im[p];
    if (__builtin_expect(p >= l->sim.lo && p < l->sim.hi, 1)) {
        if (l->w == 8) {
            double v;
            memcpy(&v, (const void *)(l->sim.base + 8 * (uintptr_t)p), 8);
            return v;
        }
        if (l->w == 1)
            return l_tab(l, *(const unsigned char *)(l->sim.base + (uintptr_t)p));
        uint16_t c;
        memcpy(&c, (const void *)(l->sim.base + 2 * (uintptr_t)p), 2);
        return l_tab(l, c);
    }
    return l_im_slow(l, p);
}


typedef struct {
    double bound;
    Py_ssize_t term;
} ByBound;

typedef struct {
    /* held Python objects and buffers (released by query_release) */
    PyObject *ids_fast, *imps_fast, *bmax_fast, *tables_fast;
    Py_buffer *tb; /* 3 per term: ids, impacts, block maxima (a paged list: its table) */
    Py_ssize_t n_tb;
    Py_buffer docs, buf, out_ids, out_scores, blocked, bounds, counts, file;
    Paged *G; /* one per term when lists are paged */
    /* what the loop reads */
    Py_ssize_t n_terms, n, k, block, bp;
    Py_ssize_t span_max; /* the longest window (rank_maxscore: PRUNE_SPAN_MAX or _ONE) */
    double margin, budget;
    int prune;
    List *L;
    double *acc;
    const int32_t *cd;
    const uint8_t *bl;
    int64_t *oi;
    double *os;
    /* scratch, one entry per term unless said */
    Py_ssize_t *pos, *rc, *wa, *wb, *act;
    double *wmax, *pre, *lpre;
    ByBound *ord, *lord;
    uint8_t *ess, *loc;
    uint64_t *bits; /* one bit per chunk of the buffer */
    Best *heap;     /* k */
    struct TextsRun *texts; /* the optional `texts` argument, or NULL */
    struct Rescore *rescore; /* the optional `rescore` argument (with margin >= 0), or NULL */
} Query;

/* A complete search's chunk texts and snippets, made in the same GIL-free stretch as the
   ranking that picks the chunks (the optional `texts` argument of rank_blocks, rank_maxscore
   and rescore): a second thread then takes the GIL once a query rather than after each call
   (docs/ENGINE.md, "Threads"). Defined with texts_snippets, below. */
typedef struct TextsRun TextsRun;
static TextsRun *texts_run_from_spec(PyObject *spec, Py_ssize_t max_rows);
static void texts_run_work(TextsRun *r, const int64_t *ids, Py_ssize_t n);
static PyObject *texts_run_made(TextsRun *r);
static void texts_run_free(TextsRun *r);

/* The exact rescoring beside clamped terms (rescore), which rank_maxscore and rank_blocks run
   on their candidates in the same GIL-free stretch when given its arguments (`rescore`).
   Defined with rescore, below. */
typedef struct Rescore Rescore;
static int rescore_prepare(Rescore *r, PyObject *terms_obj);
static void rescore_run(Rescore *r, const uint32_t *cand, Py_ssize_t n);
static void rescore_texts(Rescore *r, TextsRun *texts);
static PyObject *rescore_result(Rescore *r);
static void rescore_release(Rescore *r);
static Rescore *rescore_from_spec(PyObject *spec, Py_ssize_t k);
static void rescore_candidates(Rescore *r, const int64_t *ids, Py_ssize_t n, TextsRun *texts);
static void rescore_free(Rescore *r);

/* Release the n buffers of array b (those acquired: a no-op on one never acquired, obj NULL),
   then free the array. */
static void
buffers_free(Py_buffer *b, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; b && i < n; i++)
        PyBuffer_Release(&b[i]);
    PyMem_RawFree(b);
}

static void
query_release(Query *q)
{
    buffers_free(q->tb, q->n_tb);
    PyMem_RawFree(q->L);
    void *scratch[] = {q->pos, q->rc, q->wa, q->wb, q->act, q->wmax, q->pre, q->lpre, q->ord,
                       q->lord, q->ess, q->loc, q->bits, q->heap};
    for (size_t i = 0; i < sizeof(scratch) / sizeof(scratch[0]); i++)
        PyMem_RawFree(scratch[i]);
    Py_XDECREF(q->ids_fast);
    Py_XDECREF(q->imps_fast);
    Py_XDECREF(q->bmax_fast);
    Py_XDECREF(q->tables_fast);
    PyMem_RawFree(q->G);
    texts_run_free(q->texts);
    rescore_free(q->rescore);
    Py_buffer *held[] = {&q->docs, &q->buf, &q->out_ids, &q->out_scores, &q->blocked, &q->bounds,
                         &q->counts, &q->file};
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
        PyBuffer_Release(held[i]); /* a no-op on a buffer never acquired (obj NULL) */
}

static const char BAD_LIST[] = "a posting list is not ascending or holds a rowid beyond the last chunk";

/* How many int64 entries of blob_pieces' table `pc` (n of them) describe the BLOB (its length,
   first piece, piece size and one offset per piece); -1 for a header that describes none. What
   follows them (a posting list's codes: paged_init) is no part of the BLOB's table. */
static Py_ssize_t
pieces_entries(const int64_t *pc, Py_ssize_t n)
{
    if (n < 3)
        return -1;
    const int64_t len = pc[0], first = pc[1], per = pc[2];
    if (len < 0 || per < 1 || len > (int64_t)1 << 40)
        return -1;
    if (len == 0)
        return 3;
    if (first < 1 || first > len)
        return -1;
    return (Py_ssize_t)(4 + (len - first + per - 1) / per);
}

/* A BLOB left in `file`'s pages, from the first n entries of blob_pieces' table pc: the table
   checked against the file (every piece within it, the pieces adding up to the BLOB's
   length). -1 with ValueError otherwise. */
static int
paged_blob_n(Paged *g, const Py_buffer *file, const int64_t *pc, Py_ssize_t n)
{
    const Py_ssize_t n_pieces = n - 3;
    int ok = n_pieces >= 0;
    const int64_t len = ok ? pc[0] : -1, first = ok ? pc[1] : 0, per = ok ? pc[2] : 0;
    ok = ok && len >= 0 && per >= 1 && len <= (int64_t)1 << 40;
    if (ok && len == 0)
        ok = n_pieces == 0;
    else if (ok)
        ok = first >= 1 && first <= len && n_pieces == 1 + (len - first + per - 1) / per;
    for (Py_ssize_t i = 0; ok && i < n_pieces; i++) {
        const int64_t rest = len - first - (int64_t)(i - 1) * per;
        const int64_t plen = i == 0 ? first : (per < rest ? per : rest);
        ok = pc[3 + i] >= 0 && pc[3 + i] <= (int64_t)file->len - plen;
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "pieces: not a table of a BLOB within the file");
        return -1;
    }
    g->base = (const unsigned char *)file->buf;
    g->off = pc + 3;
    g->len = len;
    g->first = first;
    g->per = per;
    g->inv_per = 1.0 / (double)per;
    return 0;
}

/* A BLOB left in `file`'s pages, from blob_pieces' table `tb` (paged_blob_n of all of it). */
static int
paged_blob(Paged *g, const Py_buffer *file, const Py_buffer *tb)
{
    if (check_buffer(tb, 8, "pieces"))
        return -1;
    return paged_blob_n(g, file, (const int64_t *)tb->buf, tb->len / 8);
}

/* The bytes of a posting BLOB before its rowids: its table of T distinct impacts, then df
   codes of w bytes padded to a multiple of 4 (schema 5); w 8, T 0: df float64 impacts. */
static inline int64_t
list_rowids_at(int64_t df, int w, int64_t ntab)
{
    return 8 * ntab + ((int64_t)w * df + 3) / 4 * 4;
}

/* A List over a posting BLOB left in `file`'s pages. `tb` is blob_pieces' table of the BLOB,
   then for a coded list (schema 5) its codes: the code width w (1 or 2) and the table size T
   (1..256 for w 1, 1..65536 for w 2) as int64s, then the T float64 impacts of its table
   (strictly ascending; the engine copies them out of the BLOB's head once per term). Without
   them the list is raw: float64 impacts (schema 4's layout). The BLOB's length is checked
   against df: its table, df codes (padded to 4 bytes), df rowids, then nothing or (with_bmax)
   exactly its ceil(df / bp) block maxima. -1 with ValueError otherwise. */
static int
paged_init(Paged *g, List *l, const Py_buffer *file, const Py_buffer *tb, Py_ssize_t df,
           int with_bmax, Py_ssize_t bp)
{
    if (check_buffer(tb, 8, "pieces"))
        return -1;
    const int64_t *pc = (const int64_t *)tb->buf;
    const Py_ssize_t n = tb->len / 8, m = pieces_entries(pc, n);
    if (m < 0 || m > n) {
        PyErr_SetString(PyExc_ValueError, "pieces: not a table of a BLOB within the file");
        return -1;
    }
    if (paged_blob_n(g, file, pc, m) < 0)
        return -1;
    if (df < 0) {
        PyErr_SetString(PyExc_ValueError, "pieces: not a table of a BLOB within the file");
        return -1;
    }
    int w = 8;
    int64_t ntab = 0;
    if (n > m) {
        const int64_t cw = n >= m + 2 ? pc[m] : 0, ct = n >= m + 2 ? pc[m + 1] : 0;
        if (!((cw == 1 && ct >= 1 && ct <= 256) || (cw == 2 && ct >= 1 && ct <= 65536)) ||
            n - m - 2 != ct) {
            PyErr_SetString(PyExc_ValueError,
                            "pieces: a coded list's code width is not 1 or 2 bytes or its table "
                            "not of its size (1..256 or 1..65536 impacts)");
            return -1;
        }
        w = (int)cw;
        ntab = ct;
    }
    const int64_t len = g->len, id_at = list_rowids_at(df, w, ntab);
    const int64_t extra = len - id_at - 4 * (int64_t)df, nb = extra / 8;
    if (extra < 0 || extra % 8 || (with_bmax && nb && nb != ((int64_t)df + bp - 1) / bp)) {
        PyErr_SetString(PyExc_ValueError,
                        w == 8 ? "a paged list's BLOB is not 12 bytes a posting and its block maxima"
                               : "a paged list's BLOB is not its table, codes, rowids and block maxima");
        return -1;
    }
    memset(l, 0, sizeof(*l));
    l->pg = g;
    l->len = df;
    l->w = w;
    l->ntab = (Py_ssize_t)ntab;
    l->tab = ntab ? (const double *)(pc + m + 2) : NULL;
    l->im_at = 8 * ntab;
    l->id_at = id_at;
    l->bm_at = with_bmax && nb ? id_at + 4 * (int64_t)df : 0;
    return 0;
}

/* Term t's list left in the file's pages: `item` is (df, blob_pieces' table of its BLOB). */
static int
list_paged(Query *q, Py_ssize_t t, PyObject *item)
{
    Py_ssize_t df;
    PyObject *table;
    if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "nO;a paged list is (df, pieces)", &df, &table))
        return -1;
    Py_buffer *tb = &q->tb[q->n_tb];
    if (PyObject_GetBuffer(table, tb, PyBUF_SIMPLE) < 0)
        return -1;
    q->n_tb++;
    return paged_init(&q->G[t], &q->L[t], &q->file, tb, df, q->prune && q->bmax_fast, q->bp);
}

/* List l bound to an in-memory list's two buffers, its rowids (ib) and impacts (mb): the
   one binding of rank_maxscore's / rank_blocks' arrays (list_flat) and search_hits' SparseTerm
   (search_term). -1 with an exception set otherwise. */
static int
list_bind(List *l, const Py_buffer *ib, const Py_buffer *mb)
{
    if (check_buffer(ib, 4, "chunks") || check_buffer(mb, 8, "impacts"))
        return -1;
    l->id = (const uint32_t *)ib->buf;
    l->im = (const double *)mb->buf;
    l->len = ib->len / 4;
    if (l->len != mb->len / 8) {
        PyErr_SetString(PyExc_ValueError, "a term has different numbers of chunks and impacts");
        return -1;
    }
    return 0;
}

/* Term t's list as two buffers, its rowids and impacts. -1 with an exception set otherwise. */
static int
list_flat(Query *q, Py_ssize_t t)
{
    Py_buffer *ib = &q->tb[q->n_tb];
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(q->ids_fast, t), ib, PyBUF_SIMPLE) < 0)
        return -1;
    q->n_tb++;
    Py_buffer *mb = &q->tb[q->n_tb];
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(q->imps_fast, t), mb, PyBUF_SIMPLE) < 0)
        return -1;
    q->n_tb++;
    return list_bind(&q->L[t], ib, mb);
}

/* What every query needs beside its lists (q->n_terms, q->k and q->prune set, the buffers
   docs, buf, out_ids and out_scores acquired): the blocked buffer, the checks of the shared
   buffers' lengths, the window size and the scratch, one entry per term. -1 with an exception
   set otherwise (query_release still releases what was acquired). */
/* What every query checks, the windowed kernels and one_pass alike: the blocked buffer acquired,
   q->n set, chunk_doc's, blocked's and the outputs' items and lengths. -1 with an exception set. */
static int
query_alloc_shared(Query *q, PyObject *blocked_obj, Py_ssize_t n_rows)
{
    if (blocked_obj != Py_None && PyObject_GetBuffer(blocked_obj, &q->blocked, PyBUF_SIMPLE) < 0)
        return -1;
    const Py_ssize_t n = q->n = n_rows + 1;
    if (n_rows < 0 || q->k < 1) {
        PyErr_SetString(PyExc_ValueError, "n_rows must be >= 0 and k >= 1");
        return -1;
    }
    if (check_buffer(&q->docs, 4, "chunk_doc") || check_buffer(&q->out_ids, 8, "out_chunks") ||
        check_buffer(&q->out_scores, 8, "out_scores"))
        return -1;
    if (q->docs.len / 4 < n || q->out_ids.len / 8 < n || q->out_scores.len / 8 < n ||
        (q->blocked.obj && q->blocked.len < n)) {
        PyErr_SetString(PyExc_ValueError, "chunk_doc, blocked, buf or output buffers too short");
        return -1;
    }
    return 0;
}

static int
query_alloc(Query *q, PyObject *blocked_obj, Py_ssize_t n_rows)
{
    const Py_ssize_t n_terms = q->n_terms;
    if (query_alloc_shared(q, blocked_obj, n_rows) < 0 || check_buffer(&q->buf, 8, "buf"))
        return -1;
    if (q->buf.len < 8 * 64) {
        PyErr_SetString(PyExc_ValueError, "chunk_doc, blocked, buf or output buffers too short");
        return -1;
    }
    const Py_ssize_t block = q->block = q->buf.len / 8;
    const Py_ssize_t span_cap = n_terms == 1 ? PRUNE_SPAN_ONE : PRUNE_SPAN_MAX;
    q->span_max = q->prune && block > span_cap ? span_cap : block;
    const size_t nt = (size_t)n_terms + 1;
    q->tb = PyMem_RawCalloc(3 * nt, sizeof(Py_buffer));
    q->L = PyMem_RawCalloc(nt, sizeof(List));
    q->pos = PyMem_RawCalloc(nt, sizeof(Py_ssize_t));
    q->rc = PyMem_RawCalloc(nt, sizeof(Py_ssize_t));
    q->wa = PyMem_RawCalloc(nt, sizeof(Py_ssize_t));
    q->wb = PyMem_RawCalloc(nt, sizeof(Py_ssize_t));
    q->act = PyMem_RawCalloc(nt, sizeof(Py_ssize_t));
    q->wmax = PyMem_RawCalloc(nt, sizeof(double));
    q->pre = PyMem_RawCalloc(nt, sizeof(double));
    q->lpre = PyMem_RawCalloc(nt, sizeof(double));
    q->ord = PyMem_RawCalloc(nt, sizeof(ByBound));
    q->lord = PyMem_RawCalloc(nt, sizeof(ByBound));
    q->ess = PyMem_RawCalloc(nt, 1);
    q->loc = PyMem_RawCalloc(nt, 1);
    q->bits = PyMem_RawCalloc((size_t)((block + 63) / 64), sizeof(uint64_t));
    q->heap = PyMem_RawMalloc(sizeof(Best) * (size_t)q->k);
    if (!q->tb || !q->L || !q->pos || !q->rc || !q->wa || !q->wb || !q->act || !q->wmax || !q->pre ||
        !q->lpre || !q->ord || !q->lord || !q->ess || !q->loc || !q->bits || !q->heap) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The pointers the loop reads, from the acquired buffers. */
static void
query_bind(Query *q)
{
    q->acc = (double *)q->buf.buf;
    q->cd = (const int32_t *)q->docs.buf;
    q->bl = q->blocked.obj ? (const uint8_t *)q->blocked.buf : NULL;
    q->oi = (int64_t *)q->out_ids.buf;
    q->os = (double *)q->out_scores.buf;
}

static int
query_prepare(Query *q, PyObject *ids_seq, PyObject *imps_seq, PyObject *bmax_seq,
              PyObject *blocked_obj, Py_ssize_t n_rows, PyObject *paged)
{
    q->ids_fast = PySequence_Fast(ids_seq, "chunks must be a sequence");
    q->imps_fast = PySequence_Fast(imps_seq, "impacts must be a sequence");
    if (!q->ids_fast || !q->imps_fast)
        return -1;
    if (bmax_seq && !(q->bmax_fast = PySequence_Fast(bmax_seq, "block_max must be a sequence")))
        return -1;
    const Py_ssize_t n_terms = q->n_terms = PySequence_Fast_GET_SIZE(q->ids_fast);
    if (PySequence_Fast_GET_SIZE(q->imps_fast) != n_terms ||
        (q->bmax_fast && PySequence_Fast_GET_SIZE(q->bmax_fast) != n_terms)) {
        PyErr_SetString(PyExc_ValueError, "one impacts (and block_max) buffer per chunks buffer");
        return -1;
    }
    if (q->prune) {
        if (check_buffer(&q->bounds, 8, "bounds"))
            return -1;
        if (q->bounds.len / 8 != n_terms) {
            PyErr_SetString(PyExc_ValueError, "one bound per term");
            return -1;
        }
        if (q->counts.obj && q->counts.len < 16) {
            PyErr_SetString(PyExc_ValueError, "counts: room for 2 int64 needed");
            return -1;
        }
        if (q->counts.obj && (uintptr_t)q->counts.buf % 8 != 0) {
            PyErr_SetString(PyExc_ValueError, "counts: not 8-byte aligned");
            return -1;
        }
        if (q->bmax_fast && q->bp < 1) {
            PyErr_SetString(PyExc_ValueError, "block_postings must be >= 1");
            return -1;
        }
    }
    if (query_alloc(q, blocked_obj, n_rows) < 0)
        return -1;
    const size_t nt = (size_t)n_terms + 1;
    if (paged && paged != Py_None) {
        PyObject *file_obj, *tables;
        if (!PyTuple_Check(paged) ||
            !PyArg_ParseTuple(paged, "OO;paged is (file, tables)", &file_obj, &tables))
            return -1;
        if (PyObject_GetBuffer(file_obj, &q->file, PyBUF_SIMPLE) < 0)
            return -1;
        if (!(q->tables_fast = PySequence_Fast(tables, "paged tables must be a sequence")))
            return -1;
        if (PySequence_Fast_GET_SIZE(q->tables_fast) != n_terms) {
            PyErr_SetString(PyExc_ValueError, "one paged entry (or None) per term");
            return -1;
        }
        if (!(q->G = PyMem_RawCalloc(nt, sizeof(Paged)))) {
            PyErr_NoMemory();
            return -1;
        }
    }
    const double *bounds = q->prune ? (const double *)q->bounds.buf : NULL;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *pt = q->tables_fast ? PySequence_Fast_GET_ITEM(q->tables_fast, t) : Py_None;
        List *l = &q->L[t];
        if (pt != Py_None ? list_paged(q, t, pt) : list_flat(q, t))
            return -1; /* (its last rowid is checked by query_run: query_lists_in_range) */
        if (q->prune) {
            l->bound = bounds[t];
            if (!(l->bound >= 0.0)) {
                PyErr_SetString(PyExc_ValueError, "a term's bound is negative or NaN");
                return -1;
            }
        }
        if (q->prune && q->bmax_fast && !l->pg) {
            Py_buffer *xb = &q->tb[q->n_tb];
            if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(q->bmax_fast, t), xb, PyBUF_SIMPLE) < 0)
                return -1;
            q->n_tb++;
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
    query_bind(q);
    return 0;
}


#endif /* DRSEARCH_K_QUERY_H */
