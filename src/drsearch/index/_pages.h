/*
 * Reading a rowid table's BLOB or TEXT column straight from the bytes of a frozen SQLite file.
 *
 * Why: a query's long posting lists were each read with SQLite's incremental blob API through
 * apsw (open, read into the arena, close: three calls that each release and retake the GIL).
 * With two threads serving, every release hands the GIL to the other thread and every retake
 * waits for it: on this machine a thread's 34 us read became 78 us, and two threads fetched
 * postings at 0.83x one thread's rate (docs/ENGINE.md, "Threads"). Reading the file's pages here,
 * every list of a query in one call without the GIL, has no hand-off at all.
 *
 * Only what the SQLite file format (https://sqlite.org/fileformat2.html, sections 1.6 and
 * 2.3) fixes is used: a table b-tree is searched by rowid from its root page (interior pages
 * 0x05: cells of a 4-byte left child and a varint key, keys <= it on the left, the right-most
 * child in the page header; leaf pages 0x0D: cells of a varint payload size, the varint rowid
 * and the payload), a payload beyond what the leaf holds continues on a chain of overflow pages
 * (a 4-byte next page number, then usable_size - 4 bytes), and the payload is a record (a
 * varint header length, one varint serial type per column, the values). Every page number is
 * checked against the page count, every offset against its page, every chain against the
 * payload's length (a cycle cannot run on), and the record against the expected column
 * layout and length: a damaged file is an error message, never a read outside the mapping.
 *
 * The file must not change while it is mapped: drsearch opens its indexes immutable (frozen;
 * SQLite itself then takes no locks and reads no journal), and so does this reader.
 */
#ifndef DRSEARCH_PAGES_H
#define DRSEARCH_PAGES_H

#include <stdint.h>
#include <string.h>

typedef struct {
    const unsigned char *base; /* the whole file, mapped read-only */
    uint64_t size;             /* its bytes */
    uint32_t page_size;
    uint32_t usable;           /* page_size - the header's reserved bytes per page */
    uint32_t n_pages;
} DbFile;

/* Why a read failed (a static string), or NULL. */
typedef const char *PageError;

static inline uint32_t
be16(const unsigned char *p)
{
    return ((uint32_t)p[0] << 8) | p[1];
}

static inline uint32_t
be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* A SQLite varint at p (1-9 bytes, big-endian, 7 bits a byte, all 8 in the ninth) not reading
   at or past end; its length in *n, 0 when it runs past end. */
static inline uint64_t
get_varint(const unsigned char *p, const unsigned char *end, int *n)
{
    uint64_t v = 0;
    for (int i = 0; i < 9; i++) {
        if (p + i >= end) {
            *n = 0;
            return 0;
        }
        if (i == 8) {
            *n = 9;
            return (v << 8) | p[8];
        }
        v = (v << 7) | (p[i] & 0x7f);
        if (!(p[i] & 0x80)) {
            *n = i + 1;
            return v;
        }
    }
    *n = 0; /* unreachable */
    return 0;
}

/* Page `pgno` (1-based), or NULL when it is not a page of the file. */
static inline const unsigned char *
db_page(const DbFile *db, uint64_t pgno)
{
    if (pgno < 1 || pgno > db->n_pages)
        return NULL;
    return db->base + (pgno - 1) * (uint64_t)db->page_size;
}

/* Cell `i` of a b-tree page whose cell pointer array (of n cells) is at `ptrs`, or NULL when
   its offset points into the page header or pointer array or leaves fewer than `need` bytes
   before `end`. */
static inline const unsigned char *
db_cell(const unsigned char *page, const unsigned char *ptrs, uint32_t n, const unsigned char *end,
        uint32_t i, uint32_t need)
{
    const uint32_t off = be16(ptrs + 2 * i);
    const unsigned char *c = page + off;
    if (c < ptrs + 2 * (uint64_t)n || c + need > end)
        return NULL;
    return c;
}

/* A b-tree page on the way down a search: page `pgno` of the kind `interior_type` /
   `leaf_type` (0x05 / 0x0D for a table b-tree, 0x02 / 0x0A for an index b-tree), with its cell
   pointer array checked to lie within its usable bytes. */
typedef struct {
    const unsigned char *page, *end, *hdr, *ptrs;
    uint32_t n_cells;
    int interior;
} DbTreePage;

static PageError
db_tree_page(const DbFile *db, uint64_t pgno, unsigned char interior_type, unsigned char leaf_type,
             const char *not_kind, DbTreePage *p)
{
    p->page = db_page(db, pgno);
    if (!p->page)
        return "b-tree page number out of range";
    p->end = p->page + db->usable;
    p->hdr = p->page + (pgno == 1 ? 100 : 0);
    p->interior = p->hdr[0] == interior_type;
    if (!p->interior && p->hdr[0] != leaf_type)
        return not_kind;
    p->n_cells = be16(p->hdr + 3);
    p->ptrs = p->hdr + (p->interior ? 12 : 8);
    if (p->ptrs + 2 * (uint64_t)p->n_cells > p->end)
        return "cell pointer array beyond its page";
    return NULL;
}

/* The leaf cell of `rowid` in the table b-tree rooted at `root`: *cell points at its payload
   size varint, *page_end at the end of its page's usable bytes. */
static PageError
db_find_row(const DbFile *db, uint32_t root, int64_t rowid, const unsigned char **cell,
            const unsigned char **page_end)
{
    uint64_t pgno = root;
    for (int depth = 0; depth < 40; depth++) { /* a b-tree of 2^32 pages is under 40 deep */
        DbTreePage tp;
        PageError why = db_tree_page(db, pgno, 0x05, 0x0D, "not a table b-tree page", &tp);
        if (why)
            return why;
        const unsigned char *page = tp.page, *end = tp.end, *hdr = tp.hdr, *ptrs = tp.ptrs;
        const uint32_t n_cells = tp.n_cells;
        const int interior = tp.interior;
        /* Binary search: the first cell whose key (interior) or rowid (leaf) >= rowid. */
        uint32_t lo = 0, hi = n_cells;
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            const unsigned char *c = db_cell(page, ptrs, n_cells, end, mid, interior ? 5 : 2);
            if (!c)
                return "cell offset beyond its page";
            int n = 0;
            uint64_t key;
            if (interior) {
                key = get_varint(c + 4, end, &n);
            } else {
                get_varint(c, end, &n);
                if (n)
                    key = get_varint(c + n, end, &n);
                else
                    key = 0;
            }
            if (!n)
                return "cell runs past its page";
            if ((int64_t)key < rowid)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* The search ends on a cell it probed (or past the last): checked again all the same,
           so that nothing below reads a cell unchecked whatever the loop above becomes. */
        const unsigned char *c = lo < n_cells ? db_cell(page, ptrs, n_cells, end, lo, interior ? 5 : 2)
                                              : NULL;
        if (lo < n_cells && !c)
            return "cell offset beyond its page";
        if (interior) {
            pgno = c ? be32(c) : be32(hdr + 8);
            continue;
        }
        if (!c)
            return "no such row";
        int n1 = 0, n2 = 0;
        get_varint(c, end, &n1);
        const uint64_t found = n1 ? get_varint(c + n1, end, &n2) : 0;
        if (!n1 || !n2)
            return "cell runs past its page";
        if ((int64_t)found != rowid)
            return "no such row";
        *cell = c;
        *page_end = end;
        return NULL;
    }
    return "b-tree deeper than any valid one (a cycle?)";
}

/* Copy `len` bytes of the payload starting at `from`, the payload's first `local` bytes at
   `p` (on its leaf page) and the rest on the overflow chain from page `ovfl`. */
static PageError
db_copy_payload(const DbFile *db, const unsigned char *p, uint64_t local, uint64_t payload,
                uint32_t ovfl, uint64_t from, uint64_t len, unsigned char *dst)
{
    uint64_t at = from, left = len;
    if (at < local) {
        const uint64_t m = local - at < left ? local - at : left;
        memcpy(dst, p + at, m);
        dst += m;
        at += m;
        left -= m;
    }
    const uint64_t per = db->usable - 4;
    uint64_t pos = local;                 /* payload offset of the current overflow page */
    uint64_t pages_left = (payload - local + per - 1) / per; /* the chain's length */
    uint64_t pgno = ovfl;
    while (left) {
        if (!pages_left)
            return "overflow chain longer than its payload";
        const unsigned char *page = db_page(db, pgno);
        if (!page)
            return "overflow page number out of range";
        if (at < pos + per) { /* this page holds bytes we want */
            const uint64_t skip = at - pos;
            const uint64_t m = per - skip < left ? per - skip : left;
            memcpy(dst, page + 4 + skip, m);
            dst += m;
            at += m;
            left -= m;
        }
        pos += per;
        pages_left--;
        pgno = be32(page);
    }
    return NULL;
}

/* Where column `column` (0-based; earlier columns must be NULL or integers, as an INTEGER
   PRIMARY KEY is stored) of the row `rowid` of the table rooted at `root` lies. */
typedef struct {
    const unsigned char *local; /* the payload's first bytes, on its leaf page */
    uint64_t n_local, payload;  /* bytes there, bytes in all */
    uint32_t ovfl;              /* the overflow chain's first page (0: none) */
    uint64_t at, len;           /* the value: its offset in the payload, its bytes */
    uint64_t serial;            /* its serial type (BLOB: even >= 12, TEXT: odd >= 13) */
} DbValue;

static PageError
db_value(const DbFile *db, uint32_t root, int64_t rowid, int column, DbValue *v)
{
    const unsigned char *c, *end;
    PageError why = db_find_row(db, root, rowid, &c, &end);
    if (why)
        return why;
    int n = 0;
    const uint64_t payload = get_varint(c, end, &n);
    c += n;
    get_varint(c, end, &n);
    c += n;
    const uint64_t u = db->usable, x = u - 35;
    uint64_t local = payload;
    if (payload > x) {
        const uint64_t m = ((u - 12) * 32 / 255) - 23, k = m + ((payload - m) % (u - 4));
        local = k <= x ? k : m;
    }
    if (c + local + (payload > local ? 4 : 0) > end)
        return "cell payload beyond its page";
    /* The record header, always within the local bytes (at least 480 of them when it spills). */
    const unsigned char *rec_end = c + local;
    const uint64_t hdr_len = get_varint(c, rec_end, &n);
    if (!n || hdr_len > local)
        return "record header beyond the cell";
    const unsigned char *t = c + n;
    uint64_t body = 0; /* bytes of the values before the column */
    uint64_t st = 0;
    for (int i = 0; i <= column; i++) {
        st = get_varint(t, c + hdr_len, &n);
        if (!n)
            return "record header shorter than the table's columns";
        t += n;
        if (i < column) { /* skip it: its bytes by its serial type (10, 11: reserved) */
            static const unsigned char int_bytes[10] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
            if (st == 10 || st == 11)
                return "record column before the value of a reserved serial type";
            body += st >= 12 ? (st - 12) / 2 : int_bytes[st];
        }
    }
    const uint64_t len = st >= 12 ? (st - 12) / 2 : 0;
    if (hdr_len + body + len > payload)
        return "value beyond its record";
    v->local = c;
    v->n_local = local;
    v->payload = payload;
    v->ovfl = payload > local ? be32(c + local) : 0;
    v->at = hdr_len + body;
    v->len = len;
    v->serial = st;
    return NULL;
}

/* Where the BLOB in column `column` of the row `rowid` of the table rooted at `root` lies
   (db_value, and the value checked to be a BLOB). */
static PageError
db_blob_value(const DbFile *db, uint32_t root, int64_t rowid, int column, DbValue *v)
{
    PageError why = db_value(db, root, rowid, column, v);
    if (!why && (v->serial < 12 || v->serial % 2))
        why = "record column is not a BLOB";
    return why;
}

/* Copy the BLOB in column `column` of the row `rowid` of the table rooted at `root` into dst,
   checking that it is exactly `len` bytes. */
static PageError
db_read_blob(const DbFile *db, uint32_t root, int64_t rowid, int column, uint64_t len,
             unsigned char *dst)
{
    DbValue v;
    PageError why = db_blob_value(db, root, rowid, column, &v);
    if (why)
        return why;
    if (v.len != len)
        return "BLOB length differs from the expected length";
    return db_copy_payload(db, v.local, v.n_local, v.payload, v.ovfl, v.at, len, dst);
}

/* Where the BLOB in column `column` of row `rowid` lies in the file, as pieces: out[0] = its
   length, out[1] = the bytes of its first piece, out[2] = the bytes of every later piece but
   the last (a page's usable bytes less its 4-byte link), then each piece's file offset, in
   order (out[3 + i]); piece 0 is on the leaf page (or, when the value starts past the leaf's
   bytes, on the first overflow page holding it). The chain is walked once and every page
   number checked. `out` has room for `cap` entries; *n_out is set to the entries used (3 +
   pieces), or to the entries needed when `cap` is too small (and "too small" returned). */
static PageError
db_blob_pieces(const DbFile *db, uint32_t root, int64_t rowid, int column, int64_t *out,
               uint64_t cap, uint64_t *n_out)
{
    DbValue v;
    PageError why = db_blob_value(db, root, rowid, column, &v);
    if (why)
        return why;
    const uint64_t per = db->usable - 4, end = v.at + v.len;
    const uint64_t chain = v.payload > v.n_local ? (v.payload - v.n_local + per - 1) / per : 0;
    /* pieces: the local part if the value starts there, then every overflow page j holding
       value bytes (page j holds the payload's bytes from n_local + j * per) */
    uint64_t n_pieces = v.at < v.n_local && v.len ? 1 : 0;
    if (end > v.n_local) {
        const uint64_t jf = v.at < v.n_local ? 0 : (v.at - v.n_local) / per;
        const uint64_t jl = (end - 1 - v.n_local) / per;
        n_pieces += jl - jf + 1;
    }
    *n_out = 3 + (v.len ? n_pieces : 0);
    if (*n_out > cap)
        return "too small";
    out[0] = (int64_t)v.len;
    out[2] = (int64_t)per;
    uint64_t k = 3;
    if (!v.len) {
        out[1] = 0;
        return NULL;
    }
    if (v.at < v.n_local) {
        out[1] = (int64_t)((end < v.n_local ? end : v.n_local) - v.at);
        out[k++] = (int64_t)(v.local - db->base) + (int64_t)v.at;
    }
    uint64_t pgno = v.ovfl, pos = v.n_local; /* payload offset of page `pgno`'s first byte */
    for (uint64_t i = 0; i < chain && pos < end; i++) {
        const unsigned char *page = db_page(db, pgno);
        if (!page)
            return "overflow page number out of range";
        if (pos + per > v.at) { /* holds value bytes */
            const uint64_t skip = v.at > pos ? v.at - pos : 0;
            if (k == 3)
                out[1] = (int64_t)((pos + per < end ? pos + per : end) - pos - skip);
            if (k >= cap)
                return "overflow chain longer than its payload";
            out[k++] = (int64_t)(page - db->base) + 4 + (int64_t)skip;
        }
        pos += per;
        pgno = be32(page);
    }
    if (pos < end)
        return "overflow chain shorter than its payload";
    *n_out = k;
    return NULL;
}

/* ---- WITHOUT ROWID tables: an index b-tree searched by its first column's TEXT ------------
 *
 * A WITHOUT ROWID table is an index b-tree (https://sqlite.org/fileformat2.html, 1.6): interior
 * pages 0x02 (cells of a 4-byte left child, a varint payload size and the payload: a whole row,
 * every entry of the tree being in exactly one cell, interior or leaf), leaf pages 0x0A (a
 * varint payload size and the payload). Keys are compared as SQLite compares them: here the
 * first column alone, a TEXT primary key under the BINARY collation (memcmp, then the shorter
 * first), unique, so an equal first column is the row. A payload over the page's local limit
 * for index cells spills; such a cell's key cannot be compared from its leaf page alone and is
 * reported ("spilled"), not followed: the caller asks SQLite instead (keys of ~1,000 bytes). */

/* The key (first column, TEXT) and the whole local payload of an index cell at c. */
typedef struct {
    const unsigned char *payload; /* the record */
    uint64_t n_local, size;       /* bytes on the page, bytes in all */
    const unsigned char *key;     /* the first column's bytes */
    uint64_t key_len;
} DbIndexCell;

static PageError
db_index_cell(const DbFile *db, const unsigned char *c, const unsigned char *end, DbIndexCell *out)
{
    int n = 0;
    const uint64_t size = get_varint(c, end, &n);
    if (!n)
        return "cell runs past its page";
    c += n;
    const uint64_t u = db->usable, x = ((u - 12) * 64 / 255) - 23;
    uint64_t local = size;
    if (size > x) {
        const uint64_t m = ((u - 12) * 32 / 255) - 23, k = m + ((size - m) % (u - 4));
        local = k <= x ? k : m;
    }
    if (c + local > end)
        return "cell payload beyond its page";
    const uint64_t hdr_len = get_varint(c, c + local, &n);
    if (!n || hdr_len > local || hdr_len < 2)
        return "record header beyond the cell";
    const uint64_t st = get_varint(c + n, c + hdr_len, &n);
    if (!n)
        return "record header shorter than the table's columns";
    if (st < 13 || st % 2 == 0)
        return "record key is not TEXT";
    out->payload = c;
    out->n_local = local;
    out->size = size;
    out->key = c + hdr_len;
    out->key_len = (st - 13) / 2;
    if (hdr_len + out->key_len > size)
        return "key beyond its record";
    return NULL;
}

static const char DB_SPILLED[] = "spilled";

/* Compare `key` with a cell's key: <0, 0, >0 in *cmp; DB_SPILLED when the cell's key is not
   all on its page and the bytes there do not decide. */
static PageError
db_compare_key(const DbIndexCell *cell, const unsigned char *key, uint64_t len, int *cmp)
{
    const uint64_t on_page = cell->n_local - (uint64_t)(cell->key - cell->payload);
    const uint64_t have = cell->key_len < on_page ? cell->key_len : on_page;
    const uint64_t n = len < have ? len : have;
    const int r = n ? memcmp(key, cell->key, n) : 0;
    if (r) {
        *cmp = r;
        return NULL;
    }
    if (have < cell->key_len && len > n) /* the rest of the cell's key is on overflow pages */
        return DB_SPILLED;
    *cmp = len < cell->key_len ? -1 : len > cell->key_len ? 1 : 0;
    return NULL;
}

/* The cell whose first column is `key` in the index b-tree rooted at `root`: *found 1 and *cell
   filled, or *found 0 (no such key). */
static PageError
db_find_key(const DbFile *db, uint32_t root, const unsigned char *key, uint64_t len, int *found,
            DbIndexCell *cell)
{
    uint64_t pgno = root;
    *found = 0;
    for (int depth = 0; depth < 40; depth++) {
        DbTreePage tp;
        PageError why = db_tree_page(db, pgno, 0x02, 0x0A, "not an index b-tree page", &tp);
        if (why)
            return why;
        const unsigned char *page = tp.page, *end = tp.end, *hdr = tp.hdr, *ptrs = tp.ptrs;
        const uint32_t n_cells = tp.n_cells;
        const int interior = tp.interior;
        /* Binary search: the first cell whose key >= key. */
        uint32_t lo = 0, hi = n_cells;
        while (lo < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            const unsigned char *c = db_cell(page, ptrs, n_cells, end, mid, interior ? 5 : 1);
            if (!c)
                return "cell offset beyond its page";
            DbIndexCell here;
            int cmp = 0;
            why = db_index_cell(db, c + (interior ? 4 : 0), end, &here);
            if (!why)
                why = db_compare_key(&here, key, len, &cmp);
            if (why)
                return why;
            if (cmp == 0) {
                *found = 1;
                *cell = here;
                return NULL;
            }
            if (cmp > 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (!interior)
            return NULL; /* not in the tree */
        if (lo < n_cells) {
            const unsigned char *c = db_cell(page, ptrs, n_cells, end, lo, 5);
            if (!c)
                return "cell offset beyond its page";
            pgno = be32(c);
        } else {
            pgno = be32(hdr + 8);
        }
    }
    return "b-tree deeper than any valid one (a cycle?)";
}

/* Integer or real column `column` (> 0) of an index cell's record, all on its page, as a
   double (*is_int set for an integer serial type; REAL columns store integral values as
   integers) and, for integers, exactly in *ival. */
static PageError
db_cell_number(const DbIndexCell *cell, int column, int64_t *ival, double *dval, int *is_int)
{
    int n = 0;
    const unsigned char *rec_end = cell->payload + cell->n_local;
    const uint64_t hdr_len = get_varint(cell->payload, rec_end, &n);
    const unsigned char *t = cell->payload + n, *hdr_end = cell->payload + hdr_len;
    uint64_t body = 0;
    static const unsigned char int_bytes[10] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
    for (int i = 0; i <= column; i++) {
        const uint64_t st = get_varint(t, hdr_end, &n);
        if (!n)
            return "record header shorter than the table's columns";
        t += n;
        if (i < column) {
            body += st >= 12 ? (st - 12) / 2 : st <= 9 ? int_bytes[st] : 0;
            if (st == 10 || st == 11)
                return "record holds a reserved serial type";
            continue;
        }
        const unsigned char *v = cell->payload + hdr_len + body;
        if (st == 0 || st == 10 || st == 11 || st >= 12)
            return "record column is not a number";
        if (v + int_bytes[st] > rec_end)
            return "record value beyond the cell";
        if (st == 7) {
            uint64_t bits = 0;
            for (int j = 0; j < 8; j++)
                bits = (bits << 8) | v[j];
            memcpy(dval, &bits, 8);
            *is_int = 0;
            *ival = 0;
            return NULL;
        }
        int64_t x = 0;
        if (st == 8 || st == 9) {
            x = (int64_t)st - 8;
        } else {
            const int nb = int_bytes[st];
            uint64_t u = (v[0] & 0x80) ? ~(uint64_t)0 : 0; /* sign-extended big-endian */
            for (int j = 0; j < nb; j++)
                u = (u << 8) | v[j];
            x = (int64_t)u;
        }
        *ival = x;
        *dval = (double)x;
        *is_int = 1;
        return NULL;
    }
    return "record header shorter than the table's columns"; /* unreachable */
}

#endif /* DRSEARCH_PAGES_H */
