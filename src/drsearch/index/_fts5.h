/*
 * Reading every term's doclist out of the leaf pages of FTS5's own index (one segment,
 * detail=full, one column): the build's posting lists are derived from it, so FTS5 tokenizes
 * each chunk once and the postings hold exactly what FTS5 indexed (drsearch.index.fts5index
 * has the Python side and a Python mirror of this decoder, which the tests hold to the same
 * results and the same errors).
 *
 * The leaf format (SQLite's ext/fts5/fts5_index.c, "Segment leaf pages"): a 4-byte header
 * (big-endian u16 offset of the first rowid that starts a page's doclist part, 0 if none;
 * u16 offset of the page index, "szLeaf"), the data, then the page index: varints of the
 * offsets of the terms that start on the page (the first absolute, then deltas). A term is
 * a varint length and its bytes when it is the page's first, else a varint prefix length
 * shared with the previous term, a varint suffix length and the suffix; its key is the index
 * byte ('0': the main index) and the token's bytes. Its doclist follows: the first rowid of
 * a doclist, and the first on a page, is absolute, later ones deltas; each rowid is
 * followed by a varint (position list bytes << 1 | delete flag) and the position list, one
 * varint per position (+2, so never 0 or 1; a 1 would switch columns). A position list may
 * continue on the next page(s), always cut between varints. Nothing else is on a leaf.
 *
 * What is counted: a term's document frequency (its rowids) and each rowid's term frequency
 * (its positions, the bytes below 0x80 of its position list). Everything read is checked
 * (offsets within their page, varints within their bounds, rowids ascending and within
 * 1..n_rows, keys ascending, no delete marker, no second column, no empty position list):
 * a page that is not what FTS5 writes is an error message, never a wrong count or a read
 * outside a page.
 */
#ifndef DRSEARCH_FTS5_H
#define DRSEARCH_FTS5_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FTS5_MAX_KEY 65536 /* bytes of an index key: FTS5 cuts tokens at 32,768 */

typedef struct {
    const unsigned char *const *pages; /* the window's leaf pages, in page order */
    const Py_ssize_t *lens;
    Py_ssize_t n_pages;
    int64_t first_pgno; /* the first page's number in its segment (for messages) */
    int to_end;         /* decode the last page to its end (else stop at its first term) */
    int64_t n_rows;     /* rowids run 1..n_rows */
    uint32_t *chunks, *tfs; /* out: every posting, term after term, rowid after rowid */
    Py_ssize_t cap, n_out;
    int64_t *lengths; /* out: += tf for each posting, by rowid (n_rows + 1 entries) */
    /* called once per term, in key order, when its doclist is complete: -1 stops (a Python
       error is set) */
    int (*term)(void *ctx, const unsigned char *key, Py_ssize_t n, int64_t df);
    void *ctx;
    unsigned char *key; /* FTS5_MAX_KEY bytes of scratch */
    char err[200];      /* why decoding failed, when it returns -1 with no Python error */
} Fts5Decode;

/* Positions in p[0:n) of a position list that began at a varint boundary (*run: continuation
   bytes since the last varint ended, carried across pages). Sets *tf += positions; -1 when a
   varint starts with 0 or 1 (a column switch: the index holds a second column) or runs past 5
   bytes (a position beyond 32 bits). */
static inline int
fts5_positions(const unsigned char *p, Py_ssize_t n, int *run, uint32_t *tf)
{
    uint32_t count = 0;
    int r = *run;
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned b = p[i];
        if (r == 0 && b < 2)
            return -1;
        if (b & 0x80) {
            if (++r > 4)
                return -1;
        } else {
            r = 0;
            count++;
        }
    }
    *run = r;
    *tf += count;
    return 0;
}

/* A complete position list: rowid's posting, with its tf; why it cannot be, or NULL. */
static inline const char *
fts5_posting(Fts5Decode *d, int64_t rowid, uint32_t tf, int run)
{
    if (run)
        return "a position list ends inside a varint";
    if (d->n_out == d->cap)
        return "more postings than the window's bytes allow";
    d->chunks[d->n_out] = (uint32_t)rowid;
    d->tfs[d->n_out++] = tf;
    d->lengths[rowid] += tf;
    return NULL;
}

/* Decode the window; 0, or -1 with d->err set (or a Python error from d->term). */
static int
fts5_decode(Fts5Decode *d)
{
    const Py_ssize_t last = d->n_pages - 1;
    Py_ssize_t key_len = 0, offs_cap = 0, *offs = NULL;
    int have_term = 0, first_in_doclist = 0, run = 0;
    int64_t df = 0, rowid = 0;
    Py_ssize_t left = 0; /* bytes of the current position list still to come, on later pages */
    uint32_t tf = 0;
    const char *why;
    int rc = -1;
#define FAIL_AT(...)                                                                              \
    do {                                                                                          \
        char why_[120];                                                                           \
        snprintf(why_, sizeof why_, __VA_ARGS__);                                                 \
        snprintf(d->err, sizeof d->err, "leaf page %lld, offset %lld: %s",                       \
                 (long long)(d->first_pgno + pi), (long long)(q - p), why_);                      \
        goto done;                                                                                \
    } while (0)
    for (Py_ssize_t pi = 0; pi < d->n_pages; pi++) {
        const unsigned char *p = d->pages[pi], *q = p;
        const Py_ssize_t len = d->lens[pi];
        if (len < 4)
            FAIL_AT("a page of %lld bytes, shorter than its header", (long long)len);
        const Py_ssize_t first_rowid = (Py_ssize_t)be16(p), szleaf = (Py_ssize_t)be16(p + 2);
        if (szleaf < 4 || szleaf > len || (first_rowid && (first_rowid < 4 || first_rowid >= szleaf)))
            FAIL_AT("header offsets %lld/%lld outside the page", (long long)first_rowid, (long long)szleaf);
        /* the page index: where each term that starts on this page begins */
        Py_ssize_t n_terms = 0;
        if (offs_cap < len - szleaf + 1) {
            PyMem_Free(offs);
            offs_cap = len - szleaf + 1;
            offs = PyMem_Malloc(sizeof *offs * (size_t)offs_cap);
            if (!offs) {
                PyErr_NoMemory();
                goto done;
            }
        }
        for (const unsigned char *x = p + szleaf, *end = p + len; x < end;) {
            int n;
            const uint64_t v = get_varint(x, end, &n);
            const Py_ssize_t at = (n_terms ? offs[n_terms - 1] : 0) + (Py_ssize_t)(v < 1u << 20 ? v : 1u << 20);
            if (!n || (n_terms && v == 0) || at < 4 || at >= szleaf)
                FAIL_AT("the page index names a term outside the page");
            offs[n_terms++] = at;
            x += n;
        }
        Py_ssize_t ti = 0; /* the next term on the page */
        const unsigned char *end = p + szleaf;
        q = p + 4;
        if (pi == 0) { /* a window starts at a term */
            if (!n_terms)
                FAIL_AT("the window's first page starts no term");
            q = p + offs[0];
        }
        if (pi == last && !d->to_end) { /* ... and ends where its last page's first term starts */
            if (!n_terms)
                FAIL_AT("the window's last page starts no term");
            end = p + offs[0];
            n_terms = 0; /* the terms from there on are the next window's */
        }
        /* the header's first rowid, when it lies in what this window decodes, must be read there */
        int rowid_due = first_rowid && p + first_rowid >= q && p + first_rowid < end;
        if (left) { /* the rest of a position list begun on an earlier page */
            const Py_ssize_t avail = (ti < n_terms ? p + offs[ti] : end) - q;
            const Py_ssize_t take = left < avail ? left : avail;
            if (fts5_positions(q, take, &run, &tf) < 0)
                FAIL_AT("a position list holds a column marker or a position beyond 32 bits");
            q += take;
            left -= take;
            if (left) {
                if (q != p + szleaf || first_rowid)
                    FAIL_AT("a position list runs into a term or a rowid");
                continue;
            }
            if ((why = fts5_posting(d, rowid, tf, run)))
                FAIL_AT("%s", why);
        }
        int page_rowids = 0;
        while (q < end) {
            const Py_ssize_t off = q - p;
            int n;
            if (ti < n_terms && off == offs[ti]) { /* a term: the previous one is complete */
                if (have_term && df && d->term(d->ctx, d->key + 1, key_len - 1, df) < 0)
                    goto done;
                if (have_term && !df)
                    FAIL_AT("a term without a doclist");
                uint64_t prefix = 0;
                if (ti > 0) {
                    prefix = get_varint(q, end, &n);
                    if (!n)
                        FAIL_AT("a term's prefix length runs past the page");
                    q += n;
                    if (prefix > (uint64_t)key_len)
                        FAIL_AT("a term shares more bytes than the previous term has");
                }
                const uint64_t suffix = get_varint(q, end, &n);
                if (!n || suffix == 0 || suffix > (uint64_t)(end - q - n) || prefix + suffix > FTS5_MAX_KEY)
                    FAIL_AT("a term's length runs past the page");
                q += n;
                const Py_ssize_t new_len = (Py_ssize_t)(prefix + suffix);
                const Py_ssize_t common = (Py_ssize_t)prefix;
                const int cmp_head = have_term ? memcmp(q, d->key + common,
                    (size_t)(key_len - common < (Py_ssize_t)suffix ? key_len - common : (Py_ssize_t)suffix)) : 1;
                if (have_term && (cmp_head < 0 || (cmp_head == 0 && new_len <= key_len)))
                    FAIL_AT("terms out of order");
                memcpy(d->key + common, q, (size_t)suffix);
                key_len = new_len;
                q += suffix;
                if (d->key[0] != '0')
                    FAIL_AT("a key of index %d, not the main index (prefix indexes are not read)", d->key[0]);
                if (key_len < 2)
                    FAIL_AT("an empty term");
                have_term = 1;
                first_in_doclist = 1;
                df = 0;
                ti++;
                continue;
            }
            if (!have_term)
                FAIL_AT("a rowid before any term");
            if (!first_in_doclist && !page_rowids && pi > 0 && off != first_rowid)
                FAIL_AT("the page's first rowid is not where its header says");
            const int absolute = first_in_doclist || off == first_rowid;
            if (off == first_rowid)
                rowid_due = 0;
            const uint64_t v = get_varint(q, end, &n);
            if (!n)
                FAIL_AT("a rowid runs past the page");
            q += n;
            const int64_t next = absolute ? (int64_t)(v < (uint64_t)INT64_MAX ? v : 0)
                                          : (v && v <= (uint64_t)d->n_rows ? rowid + (int64_t)v : 0);
            if (next < 1 || next > d->n_rows || (!first_in_doclist && next <= rowid))
                FAIL_AT("a rowid out of order or outside 1..%lld", (long long)d->n_rows);
            rowid = next;
            first_in_doclist = 0;
            page_rowids++;
            const uint64_t size = get_varint(q, end, &n);
            if (!n)
                FAIL_AT("a position list's size runs past the page");
            q += n;
            if (size & 1)
                FAIL_AT("a delete marker (the index is not a merged, optimized one)");
            if (size >> 1 == 0 || size >> 1 > (uint64_t)INT32_MAX)
                FAIL_AT("a position list of %llu bytes", (unsigned long long)(size >> 1));
            const Py_ssize_t want = (Py_ssize_t)(size >> 1);
            const Py_ssize_t avail = (ti < n_terms ? p + offs[ti] : end) - q;
            const Py_ssize_t take = want < avail ? want : avail;
            run = 0;
            tf = 0;
            df++;
            if (fts5_positions(q, take, &run, &tf) < 0)
                FAIL_AT("a position list holds a column marker or a position beyond 32 bits");
            q += take;
            if (want > take) { /* continued on the next page, if this one ends here */
                if (q != p + szleaf || (ti < n_terms) || pi == last)
                    FAIL_AT("a position list runs into a term or past the window");
                left = want - take;
                break;
            }
            if ((why = fts5_posting(d, rowid, tf, run)))
                FAIL_AT("%s", why);
        }
        if (ti < n_terms)
            FAIL_AT("the page index names a term inside a doclist");
        if (rowid_due)
            FAIL_AT("no rowid where the page's header says one starts");
    }
    if (left) {
        snprintf(d->err, sizeof d->err, "the last position list runs past the window's last page");
        goto done;
    }
    if (have_term && !df) {
        snprintf(d->err, sizeof d->err, "the last term has no doclist");
        goto done;
    }
    if (have_term && d->term(d->ctx, d->key + 1, key_len - 1, df) < 0)
        goto done;
    rc = 0;
done:
    PyMem_Free(offs);
    return rc;
#undef FAIL_AT
}

#endif
