/* _k_texts.h: part of the drsearch.index._kernels module, included once by _kernels.c (one
 * translation unit: its static functions inline across parts). Chunk texts and their snippets in one call; str.split() / " ".join() without an object per word. */
#ifndef DRSEARCH_K_TEXTS_H
#define DRSEARCH_K_TEXTS_H

/* ------------------------------------------------------------------------------------------
 * Chunk texts and their snippets in one call (a complete search's last stage), without the GIL.
 * ------------------------------------------------------------------------------------------ */

/* The code points of the n bytes at `s` when they are UTF-8 as CPython's strict decoder takes
   it (RFC 3629: no surrogates, no overlong forms, nothing past U+10FFFF), and in *maxchar the
   largest code point above U+007F (0 for none); -1 for bytes it would refuse. */
static Py_ssize_t
utf8_scan(const unsigned char *s, uint64_t n, Py_UCS4 *maxchar)
{
    uint64_t i = 0;
    Py_ssize_t chars = 0;
    Py_UCS4 mx = 0;
    while (i < n) {
        while (i + 8 <= n) { /* a run of ASCII, a word at a time */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & UINT64_C(0x8080808080808080))
                break;
            i += 8;
            chars += 8;
        }
        if (i >= n)
            break;
        const unsigned c = s[i];
        Py_UCS4 cp;
        if (c < 0x80) {
            i++;
            chars++;
            continue;
        }
        if (c < 0xC2) {
            return -1;
        } else if (c < 0xE0) {
            if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80)
                return -1;
            cp = ((Py_UCS4)(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
            i += 2;
        } else if (c < 0xF0) {
            if (n - i < 3)
                return -1;
            const unsigned c1 = s[i + 1], c2 = s[i + 2];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80 || (c == 0xE0 && c1 < 0xA0) ||
                (c == 0xED && c1 >= 0xA0))
                return -1;
            cp = ((Py_UCS4)(c & 0x0F) << 12) | ((Py_UCS4)(c1 & 0x3F) << 6) | (c2 & 0x3F);
            i += 3;
        } else if (c < 0xF5) {
            if (n - i < 4)
                return -1;
            const unsigned c1 = s[i + 1], c2 = s[i + 2], c3 = s[i + 3];
            if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80 || (c3 & 0xC0) != 0x80 ||
                (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))
                return -1;
            cp = ((Py_UCS4)(c & 0x07) << 18) | ((Py_UCS4)(c1 & 0x3F) << 12) |
                 ((Py_UCS4)(c2 & 0x3F) << 6) | (c3 & 0x3F);
            i += 4;
        } else {
            return -1;
        }
        mx = cp > mx ? cp : mx;
        chars++;
    }
    *maxchar = mx;
    return chars;
}

/* Decode the n bytes at `s`, which utf8_scan took, into `out` as code points of `kind` bytes
   (CPython's string kinds: 1, 2 or 4; wide enough for every one of them). */
static void
utf8_decode(const unsigned char *s, uint64_t n, int kind, void *out)
{
    uint64_t i = 0;
    Py_ssize_t o = 0;
    while (i < n) {
        const unsigned c = s[i];
        Py_UCS4 cp;
        if (c < 0x80) {
            uint64_t j = i + 1;
            while (j + 8 <= n) { /* the run of ASCII, a word at a time */
                uint64_t w;
                memcpy(&w, s + j, 8);
                if (w & UINT64_C(0x8080808080808080))
                    break;
                j += 8;
            }
            while (j < n && s[j] < 0x80)
                j++;
            if (kind == PyUnicode_1BYTE_KIND) {
                memcpy((unsigned char *)out + o, s + i, j - i);
                o += (Py_ssize_t)(j - i);
            } else {
                for (; i < j; i++, o++)
                    PyUnicode_WRITE(kind, out, o, s[i]);
            }
            i = j;
            continue;
        }
        if (c < 0xE0) {
            cp = ((Py_UCS4)(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
            i += 2;
        } else if (c < 0xF0) {
            cp = ((Py_UCS4)(c & 0x0F) << 12) | ((Py_UCS4)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
            i += 3;
        } else {
            cp = ((Py_UCS4)(c & 0x07) << 18) | ((Py_UCS4)(s[i + 1] & 0x3F) << 12) |
                 ((Py_UCS4)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
            i += 4;
        }
        PyUnicode_WRITE(kind, out, o, cp);
        o++;
    }
}

/* ------------------------------------------------------------------------------------------
 * Schema version 4 (drsearch.index.chunktext): a chunk cut from its document stores no text
 * (chunks.text NULL) but the UTF-8 byte span [start_byte, end_byte) of its words in the
 * document's stored text (doc_texts.text), whose block starts at offset zstart of the BLOB.
 * A joined text (LZ_MAGIC_JOINED, what the build writes: the document's words joined by single
 * spaces, _k_lz.h) gives the chunk's text as it is: the end_byte - start_byte bytes decoded
 * from there. Earlier version-4 files hold the text as it is (drlz, LZ_MAGIC, or zlib with a
 * full flush at each chunk start): the bytes decoded or inflated from there with every run of
 * whitespace (Py_UNICODE_ISSPACE, as str.split()) made one space. What chunktext.chunk_text
 * makes in Python. A run's `column` argument says
 * where to find them (span_column in native.py): bit 30 set, the chunks row's text, doc,
 * start_byte, end_byte and zstart columns and doc_texts' text column in 5 bits each from bit
 * 0, doc_texts' root page from bit 31. Without zlib at build time (SPAN_TEXTS = 0) such a
 * column is refused.
 * ------------------------------------------------------------------------------------------ */

typedef struct {
    int on;
    uint32_t doc_root;                          /* doc_texts' root page */
    int text_col, doc_col, start_col, end_col, zstart_col; /* in chunks */
    int blob_col;                               /* doc_texts.text */
} SpanSrc;

typedef struct {
    DbValue blob;       /* the document's compressed text */
    int64_t start, end; /* start -1: not a span (the row's own TEXT) */
    int64_t zstart;     /* where in the BLOB raw deflate restarts at `start` */
} SpanRow;

#define SPAN_BIT ((Py_ssize_t)1 << 30)


/* Row r's document text's first byte (0 for none): LZ_MAGIC or LZ_MAGIC_JOINED for drlz (zlib's
   never is either). */
static unsigned
span_magic(const SpanRow *r)
{
    return r->blob.len > 0 && r->blob.n_local > r->blob.at ? r->blob.local[r->blob.at] : 0;
}

/* Whether row r's document text is drlz. */
static int
span_is_lz(const SpanRow *r)
{
    const unsigned m = span_magic(r);
    return m == LZ_MAGIC || m == LZ_MAGIC_JOINED;
}

/* Decode a run's `column` argument: the TEXT column, with *s set for a span column. 0, or -1
   for a span column this module cannot read (no zlib) or whose parts are out of range. */
static int
span_decode(Py_ssize_t column, SpanSrc *s, Py_ssize_t *text_col)
{
    memset(s, 0, sizeof *s);
    *text_col = column;
    if (column < 0 || !(column & SPAN_BIT))
        return 0;
#ifndef DRS_ZLIB
    return -1;
#else
    s->on = 1;
    s->text_col = (int)(column & 31);
    s->doc_col = (int)((column >> 5) & 31);
    s->start_col = (int)((column >> 10) & 31);
    s->end_col = (int)((column >> 15) & 31);
    s->zstart_col = (int)((column >> 20) & 31);
    s->blob_col = (int)((column >> 25) & 31);
    const uint64_t root = (uint64_t)column >> 31;
    if (root < 1 || root > UINT32_MAX)
        return -1;
    s->doc_root = (uint32_t)root;
    *text_col = s->text_col;
    return 0;
#endif
}

/* The INTEGER in column `column` of the record whose local bytes db_value found (`row`: any
   column of that row): the row's other columns without another b-tree descent. The record's
   header lies within its local bytes (db_value checked it), and so does every INTEGER before
   its text (a chunks row's integers precede its text). */
static PageError
db_row_int(const DbValue *row, int column, int64_t *out)
{
    static const unsigned char int_bytes[10] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
    const unsigned char *c = row->local, *end = row->local + row->n_local;
    int n = 0;
    const uint64_t hdr_len = get_varint(c, end, &n);
    if (!n || hdr_len > row->n_local)
        return "record header beyond the cell";
    const unsigned char *t = c + n;
    uint64_t body = 0, st = 0;
    for (int i = 0; i <= column; i++) {
        st = get_varint(t, c + hdr_len, &n);
        if (!n)
            return "record header shorter than the table's columns";
        t += n;
        if (i < column) {
            if (st == 10 || st == 11)
                return "record column before the value of a reserved serial type";
            body += st >= 12 ? (st - 12) / 2 : int_bytes[st];
        }
    }
    if (st == 8 || st == 9) {
        *out = (int64_t)st - 8;
        return NULL;
    }
    if (st < 1 || st > 6)
        return "record column is not an INTEGER";
    const unsigned nb = int_bytes[st];
    if (hdr_len + body + nb > row->n_local)
        return "INTEGER beyond its cell";
    const unsigned char *p = c + hdr_len + body;
    uint64_t x = (p[0] & 0x80) ? UINT64_MAX : 0; /* big-endian two's complement, sign-extended */
    for (unsigned i = 0; i < nb; i++)
        x = (x << 8) | p[i];
    *out = (int64_t)x;
    return NULL;
}

/* text_find for a span column: a row whose text is NULL is a span, its document's BLOB found
   (rows[i]); any other row must hold TEXT, as text_find wants. *total counts a span's bytes. */
static PageError
span_find(const DbFile *db, Py_ssize_t root, const SpanSrc *s, const int64_t *ids, Py_ssize_t n,
          DbValue *vals, SpanRow *rows, uint64_t *spilled, uint64_t *total, Py_ssize_t *failed)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint32_t r = (uint32_t)root;
        PageError why = db_value(db, r, ids[i], s->text_col, &vals[i]);
        rows[i].start = -1;
        if (!why && vals[i].serial == 0) {
            int64_t doc = 0, a = 0, b = 0, z = 0;
            why = db_row_int(&vals[i], s->doc_col, &doc);
            if (!why)
                why = db_row_int(&vals[i], s->start_col, &a);
            if (!why)
                why = db_row_int(&vals[i], s->end_col, &b);
            if (!why)
                why = db_row_int(&vals[i], s->zstart_col, &z);
            if (!why && (a < 0 || b < a))
                why = "chunk span is not a span";
            if (!why)
                why = db_blob_value(db, s->doc_root, doc, s->blob_col, &rows[i].blob);
            if (!why && (z < 0 || (uint64_t)z > rows[i].blob.len))
                why = "chunk span starts outside its document's text";
            if (!why && rows[i].blob.len > UINT32_MAX)
                why = "document text too long";
            if (!why && span_is_lz(&rows[i]) && (uint64_t)(b - a) / LZ_MAX_RATIO > rows[i].blob.len - (uint64_t)z)
                why = "chunk span ends past its document's text"; /* (more than drlz can make) */
            rows[i].zstart = z;
            rows[i].start = a;
            rows[i].end = b;
            vals[i].at = vals[i].len = 0; /* nothing of the row itself is read as text */
            if (!why)
                *total += (uint64_t)(b - a);
        } else if (!why && (vals[i].serial < 13 || vals[i].serial % 2 == 0)) {
            why = "record column is not TEXT";
        } else if (!why) {
            if (vals[i].at + vals[i].len > vals[i].n_local)
                *spilled += vals[i].len;
            *total += vals[i].len;
        }
        if (why) {
            *failed = i;
            return why;
        }
    }
    return NULL;
}

#ifdef DRS_ZLIB
/* The first `want` bytes of the raw deflate stream z[0..zlen) into out, by `st` (inflateInit2'd
   for raw deflate; reset here, so one stream and its window serve a run's every span). */
static PageError
inflate_prefix(z_stream *st, const unsigned char *z, uint64_t zlen, unsigned char *out, uint64_t want)
{
    if (!want)
        return NULL;
    if (want > UINT32_MAX)
        return "chunk span too long";
    if (inflateReset(st) != Z_OK)
        return "zlib could not start";
    st->next_in = (Bytef *)z;
    st->avail_in = (uInt)zlen;
    st->next_out = out;
    st->avail_out = (uInt)want;
    const int rc = inflate(st, Z_SYNC_FLUSH);
    const uint64_t got = want - st->avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        return "document text is not zlib data";
    if (got < want)
        return "chunk span ends past its document's text";
    return NULL;
}
#endif

/* From j (s[j - 1] printable ASCII), past the bytes that are printable ASCII or a single ' '
   between two of them: 16 at a time where SSE2 is, then one at a time. */
static inline uint64_t
joined_run(const unsigned char *s, uint64_t j, uint64_t n)
{
#if defined(__SSE2__)
    const __m128i lo = _mm_set1_epi8(0x20), hi = _mm_set1_epi8(0x7F);
    while (j + 16 <= n) {
        const __m128i v = _mm_loadu_si128((const __m128i *)(s + j));
        /* signed compares: a byte >= 0x80 is negative, so never above 0x20 */
        const unsigned print = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(v, lo),
                                                                         _mm_cmplt_epi8(v, hi)));
        const unsigned space = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, lo));
        /* every byte printable or ' ', no two ' ' in a row, and the last not ' ' (the byte
           before the block is printable) */
        if ((print | space) != 0xFFFF || (space & (space >> 1)) || (space & 0x8000))
            break;
        j += 16;
    }
#endif
    while (j < n && s[j] > 0x20 && s[j] < 0x7F)
        j++;
    return j;
}

#if defined(__SSE2__)
static inline __m128i
eq8(__m128i v, int c)
{
    return _mm_cmpeq_epi8(v, _mm_set1_epi8((char)c));
}

/* 0xFF at each byte of v that str.isspace() takes in ASCII: 0x09-0x0D, 0x1C-0x1F and 0x20
   (bytes >= 0x80 compare below 0: never). */
static inline __m128i
ascii_ws(__m128i v)
{
    return _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x20)),
                        _mm_or_si128(_mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x08)),
                                                   _mm_cmplt_epi8(v, _mm_set1_epi8(0x0E))),
                                     _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x1B)),
                                                   _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)))));
}

/* collapse_spaces' fast part, from s[i] after a byte that is not space (its copy ends out[0..*o)):
   16 bytes at a time while each whitespace byte among them is ASCII and alone (the byte after
   the block looked at too: it stands for its run and becomes one ' ') and no other whitespace starts among them (the UTF-8
   of U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, found at
   every byte, two bytes looked ahead: a sequence that collapse_spaces would decode as one is
   never missed). Other bytes are copied as they are. Returns where it stopped. The stores may
   overlap s at or before the bytes just loaded, never bytes not yet read. */
static inline uint64_t
collapse16(const unsigned char *s, uint64_t i, uint64_t n, unsigned char *out, uint64_t *o)
{
    const __m128i sp = _mm_set1_epi8(0x20), lead_ws_top = _mm_set1_epi8((char)0x8B);
    uint64_t at = *o;
    while (i + 18 <= n) {
        const __m128i v = _mm_loadu_si128((const __m128i *)(s + i));
        const __m128i v1 = _mm_loadu_si128((const __m128i *)(s + i + 1));
        unsigned wide_at = 0; /* where whitespace beyond ASCII starts */
        if (_mm_movemask_epi8(v)) { /* bytes >= 0x80: any whitespace beyond ASCII among them? */
            const __m128i v2 = _mm_loadu_si128((const __m128i *)(s + i + 2));
            const __m128i e2_80 = _mm_or_si128(_mm_cmplt_epi8(v2, lead_ws_top), /* 80-8A (signed) */
                                               _mm_or_si128(eq8(v2, 0xA8), _mm_or_si128(eq8(v2, 0xA9),
                                                                                        eq8(v2, 0xAF))));
            const __m128i wide = _mm_or_si128(
                _mm_or_si128(_mm_and_si128(eq8(v, 0xC2), _mm_or_si128(eq8(v1, 0x85), eq8(v1, 0xA0))),
                             _mm_and_si128(eq8(v, 0xE1), _mm_and_si128(eq8(v1, 0x9A), eq8(v2, 0x80)))),
                _mm_or_si128(
                    _mm_and_si128(eq8(v, 0xE2), _mm_or_si128(_mm_and_si128(eq8(v1, 0x80), e2_80),
                                                             _mm_and_si128(eq8(v1, 0x81), eq8(v2, 0x9F)))),
                    _mm_and_si128(eq8(v, 0xE3), _mm_and_si128(eq8(v1, 0x80), eq8(v2, 0x80)))));
            wide_at = (unsigned)_mm_movemask_epi8(wide);
        }
        const __m128i ws = ascii_ws(v), ws1 = ascii_ws(v1);
        const __m128i joined = _mm_or_si128(_mm_andnot_si128(ws, v), _mm_and_si128(ws, sp));
        /* stop at a whitespace byte followed by another (the byte after the block looked at too)
           or at whitespace beyond ASCII: the bytes before it are copied, the rest left to the
           caller, from a byte that follows one not whitespace */
        const unsigned ws_at = (unsigned)_mm_movemask_epi8(ws);
        /* (a last whitespace byte before a byte >= 0x80: that may start whitespace beyond ASCII,
           which this block's look did not reach) */
        const unsigned bad = (unsigned)_mm_movemask_epi8(_mm_and_si128(ws, ws1)) | wide_at |
                             (ws_at & (unsigned)_mm_movemask_epi8(v1) & 0x8000);
        if (bad) {
            unsigned k = (unsigned)__builtin_ctz(bad);
            if (k && (ws_at >> (k - 1)) & 1) /* (wide after an ASCII one) */
                k--;
            unsigned char part[16];
            _mm_storeu_si128((__m128i *)part, joined);
            memmove(out + at, part, k); /* (a store of 16 could overwrite bytes not yet read) */
            i += k;
            at += k;
            break;
        }
        _mm_storeu_si128((__m128i *)(out + at), joined);
        i += 16;
        at += 16;
    }
    *o = at;
    return i;
}
#endif

/* " ".join(s.split()) of the UTF-8 bytes s[0..n) into out (at most n bytes), returned: its
   length. out may be s itself (what is written never passes what is read). A byte that does not start a well-formed sequence is copied as it is (not space):
   utf8_scan refuses it after. */
static uint64_t
collapse_spaces(const unsigned char *s, uint64_t n, unsigned char *out)
{
    uint64_t i = 0, o = 0;
    int gap = 0;
    while (i < n) {
#if defined(__SSE2__)
        if (o && !gap) /* after a byte that is not space: 16 bytes at a time while they allow */
            i = collapse16(s, i, n, out, &o);
        if (i >= n)
            break;
#endif
        /* a run of printable ASCII words each followed by one ' ' and another such word (text
           that is already joined: most of it), copied at once */
        uint64_t j = i;
        if (s[j] > 0x20 && s[j] < 0x7F) {
            j++;
            for (;;) { /* s[j - 1] is printable here */
                j = joined_run(s, j, n);
                if (j + 1 < n && s[j] == ' ' && s[j + 1] > 0x20 && s[j + 1] < 0x7F) {
                    j += 2;
                    continue;
                }
                break;
            }
        }
        if (j > i) {
            if (gap)
                out[o++] = ' ';
            gap = 0;
            if (out + o != s + i)
                memmove(out + o, s + i, j - i);
            o += j - i;
            i = j;
            continue;
        }
        const unsigned c = s[i];
        Py_UCS4 cp = c;
        unsigned len = 1;
        if (c >= 0x80) {
            cp = 0xFFFD;
            if (c >= 0xC2 && c < 0xE0 && n - i >= 2 && (s[i + 1] & 0xC0) == 0x80) {
                cp = ((Py_UCS4)(c & 0x1F) << 6) | (s[i + 1] & 0x3F);
                len = 2;
            } else if (c >= 0xE0 && c < 0xF0 && n - i >= 3 && (s[i + 1] & 0xC0) == 0x80 &&
                       (s[i + 2] & 0xC0) == 0x80) {
                cp = ((Py_UCS4)(c & 0x0F) << 12) | ((Py_UCS4)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
                len = 3;
            } else if (c >= 0xF0 && c < 0xF5 && n - i >= 4 && (s[i + 1] & 0xC0) == 0x80 &&
                       (s[i + 2] & 0xC0) == 0x80 && (s[i + 3] & 0xC0) == 0x80) {
                len = 4; /* (nothing above U+FFFF is whitespace) */
            }
        }
        if (Py_UNICODE_ISSPACE(cp)) {
            gap = o > 0;
            i += len;
            continue;
        }
        if (gap)
            out[o++] = ' ';
        gap = 0;
        memmove(out + o, s + i, len);
        o += len;
        i += len;
    }
    return o;
}

typedef struct {
    const unsigned char *src; /* its UTF-8 bytes (on the leaf page, or in the copy) */
    uint64_t len;
    Py_ssize_t chars;         /* code points */
    Py_UCS4 maxchar;          /* the largest above U+007F, 0 for none */
    int kind;                 /* the str's kind: 1, 2 or 4 bytes a code point */
    size_t off;               /* where its code points start in the decoded buffer */
    const void *data;         /* its code points: `src` itself for ASCII, else decoded */
} TextPart;

typedef struct {
    const DbFile *db;
    const DbValue *vals;
    TextPart *parts;
    Py_ssize_t n;
    uint64_t spilled;
    const SnipStem *stems;
    const SnipBuckets *buckets;
    Py_ssize_t width;
    double deadline;
    const SpanSrc *span;           /* a span column's parts (span->on), rows[i] each row's span */
    SpanRow *rows;
    /* out */
    unsigned char *copy, *decoded; /* PyMem_Raw buffers, freed by the caller */
    unsigned char *cut;            /* the spans' texts (PyMem_Raw, freed by the caller) */
    SnipSpan *spans;
    PageError why;                 /* a damaged page while copying text `failed` */
    Py_ssize_t failed;
    Py_ssize_t bad_utf8;           /* the first text that is not UTF-8, -1 for none */
    int nomem, late;
    unsigned warmed;               /* what span_warm read (kept: see there) */
} TextWork;

/* At most the compressed bytes a span's text takes from its zstart on: a deflate code is at
   most 15 bits a literal, and 48 bits a match of 3 bytes or more (16 bits a byte at most, a
   stored block less), and zlib starts a block at most every 16,384 symbols (level 6), each
   block's header under 1 KiB. No more than that is copied out of the document's pages (or the
   BLOB's rest, when less). */
static uint64_t
span_zlen(const SpanRow *r)
{
    const uint64_t want = (uint64_t)(r->end - r->start), rest = r->blob.len - (uint64_t)r->zstart;
    const uint64_t bound = 2 * want + 1024 * (want / 16384 + 2);
    return bound < rest ? bound : rest;
}

/* A drlz document text (_k_lz.h) spends at most 4 bytes per byte it makes (a sequence makes a
   byte or more; its token, offset and length bytes are 3 plus one per 255 of its length), 16
   more for a header; but a span of text mostly takes less than its own length (on the
   benchmark corpus, 0.73 of it at the median, 0.84 at the 90th percentile, 1.01 at the 99th:
   the writer takes no match under 6 bytes), so 15/16 of it and 64 bytes are copied out of the
   pages first (`first`; 2% of spans need more), the whole bound only when they ran out. */
static uint64_t
span_lz_bound(const SpanRow *r, uint64_t first)
{
    const uint64_t want = (uint64_t)(r->end - r->start), rest = r->blob.len - (uint64_t)r->zstart;
    const uint64_t bound = first ? want - want / 16 + 64 : 4 * want + 16;
    return bound < rest ? bound : rest;
}


/* Point *z at the first span_lz_bound(r, first) bytes of row r's BLOB from its zstart: on its
   page when they lie there, else copied into zbuf (span_lz_bound(r, 0) bytes or more). */
static PageError
span_lz_copy(const DbFile *db, const SpanRow *r, int first, unsigned char *zbuf, const unsigned char **z)
{
    const DbValue *b = &r->blob;
    const uint64_t from = b->at + (uint64_t)r->zstart, zlen = span_lz_bound(r, first);
    *z = b->local + from;
    if (from + zlen <= b->n_local)
        return NULL;
    *z = zbuf;
    return db_copy_payload(db, b->local, b->n_local, b->payload, b->ovfl, from, zlen, zbuf);
}

/* Walk the overflow chains of the spans' documents up to each span's compressed bytes, all
   the chains a step at a time together, before span_cut copies them one by one: a chain is a
   linked list of pages (each step a cache miss, a hit's chain some ten of them deep), and the
   steps of different chains do not wait on each other, so the misses of the hits overlap. What
   it reads is not used (db_copy_payload walks again, from cache, and checks everything): a sum
   of it is returned, so that the reads are not optimised away. */
static unsigned
span_warm(const DbFile *db, const SpanRow *rows, Py_ssize_t n)
{
    enum { WARM = 32 };
    const uint64_t per = db->usable - 4;
    unsigned sink = 0;
    for (Py_ssize_t base = 0; base < n; base += WARM) {
        uint64_t pgno[WARM], steps[WARM];
        int active = 0;
        const Py_ssize_t m = n - base < WARM ? n - base : WARM;
        for (Py_ssize_t i = 0; i < m; i++) {
            const SpanRow *r = &rows[base + i];
            steps[i] = 0;
            if (r->start < 0 || !r->blob.ovfl)
                continue;
            const uint64_t end = r->blob.at + (uint64_t)r->zstart +
                                 (span_is_lz(r) ? span_lz_bound(r, 1) : span_zlen(r));
            if (end <= r->blob.n_local)
                continue;
            steps[i] = (end - r->blob.n_local + per - 1) / per;
            pgno[i] = r->blob.ovfl;
            active = 1;
        }
        while (active) {
            active = 0;
            for (Py_ssize_t i = 0; i < m; i++) {
                if (!steps[i])
                    continue;
                const unsigned char *page = db_page(db, pgno[i]);
                if (!page) {
                    steps[i] = 0;
                    continue;
                }
                pgno[i] = be32(page);
                sink += page[4];
                active |= --steps[i] > 0;
            }
        }
    }
    return sink;
}

/* The texts of the rows that are spans (rows[i].start >= 0), cut from their documents into
   w->cut, parts[i] pointed there. 0, or -1 with w->why (and w->failed) or w->nomem set. */
static int
span_cut(TextWork *w)
{
    uint64_t total = 0, zmax = 0, emax = 0;
    for (Py_ssize_t i = 0; i < w->n; i++) {
        const SpanRow *r = &w->rows[i];
        if (r->start < 0)
            continue;
        const uint64_t want = (uint64_t)(r->end - r->start);
        total += want;
        const uint64_t zlen = span_is_lz(r) ? span_lz_bound(r, 0) : span_zlen(r);
        zmax = zlen > zmax ? zlen : zmax;
        emax = want > emax ? want : emax;
    }
    w->cut = PyMem_RawMalloc(total ? total : 1);
    unsigned char *zbuf = PyMem_RawMalloc(zmax ? zmax : 1), *raw = PyMem_RawMalloc(emax ? emax : 1);
    int rc = 0;
    if (!w->cut || !zbuf || !raw) {
        w->nomem = 1;
        rc = -1;
    }
#ifdef DRS_ZLIB
    z_stream st; /* started at the first zlib text (a drlz run never needs one) */
    memset(&st, 0, sizeof st);
    int z_started = 0;
#endif
    if (!rc)
        w->warmed = span_warm(w->db, w->rows, w->n);
    uint64_t at = 0;
    for (Py_ssize_t i = 0; !rc && i < w->n; i++) {
        const SpanRow *r = &w->rows[i];
        if (r->start < 0)
            continue;
        const DbValue *b = &r->blob;
        const uint64_t want = (uint64_t)(r->end - r->start);
        const unsigned char *z;
        unsigned char *text = raw; /* where the span's bytes are made (drlz: in place) */
        PageError why = NULL;
        if (span_is_lz(r)) {
            uint64_t used;
            text = w->cut + at;
            why = span_lz_copy(w->db, r, 1, zbuf, &z);
            if (!why)
                why = lz_decode(z, span_lz_bound(r, 1), text, want, &used);
            if (why && span_lz_bound(r, 1) < span_lz_bound(r, 0)) { /* ran out: the whole bound */
                why = span_lz_copy(w->db, r, 0, zbuf, &z);
                if (!why)
                    why = lz_decode(z, span_lz_bound(r, 0), text, want, &used);
            }
        } else {
            const uint64_t from = b->at + (uint64_t)r->zstart, zlen = span_zlen(r);
            z = b->local + from;
            if (from + zlen > b->n_local) {
                why = db_copy_payload(w->db, b->local, b->n_local, b->payload, b->ovfl, from, zlen, zbuf);
                z = zbuf;
            }
#ifdef DRS_ZLIB
            if (!why && !z_started) {
                if (inflateInit2(&st, -15) != Z_OK) {
                    w->nomem = 1;
                    rc = -1;
                    break;
                }
                z_started = 1;
            }
            if (!why)
                why = inflate_prefix(&st, z, zlen, raw, want);
#else
            why = "no zlib in this build";
#endif
        }
        if (why) {
            w->why = why;
            w->failed = i;
            rc = -1;
            break;
        }
        /* a joined text's span is the chunk's text as it is (its whitespace already one space) */
        const uint64_t len = span_magic(r) == LZ_MAGIC_JOINED ? want : collapse_spaces(text, want, w->cut + at);
        w->parts[i].src = w->cut + at;
        w->parts[i].len = len;
        at += len;
    }
#ifdef DRS_ZLIB
    if (z_started)
        inflateEnd(&st);
#endif
    PyMem_RawFree(zbuf);
    PyMem_RawFree(raw);
    return rc;
}

/* Copy, decode and search every text: only plain memory (PyMem_Raw*) and CPython's static
   Unicode tables, so that it runs without the GIL. Stops at the first failure, in the order
   read_texts() reports them: a damaged page, then a text that is not UTF-8. */
static void
text_work(TextWork *w)
{
    w->copy = PyMem_RawMalloc(w->spilled ? w->spilled : 1);
    const unsigned char **src = PyMem_RawMalloc(sizeof *src * ((size_t)w->n + 1));
    if (!w->copy || !src) {
        PyMem_RawFree(src);
        w->nomem = 1;
        return;
    }
    w->why = text_sources(w->db, w->vals, w->n, w->copy, src, &w->failed);
    for (Py_ssize_t i = 0; !w->why && i < w->n; i++) {
        w->parts[i].src = src[i];
        w->parts[i].len = w->vals[i].len;
    }
    PyMem_RawFree(src);
    if (w->why)
        return;
    if (w->span->on && span_cut(w) < 0)
        return;
    size_t decoded = 0;
    Py_ssize_t longest = 0;
    for (Py_ssize_t i = 0; i < w->n; i++) {
        TextPart *p = &w->parts[i];
        p->chars = utf8_scan(p->src, p->len, &p->maxchar);
        if (p->chars < 0) {
            w->bad_utf8 = i;
            return;
        }
        p->kind = p->maxchar < 256 ? PyUnicode_1BYTE_KIND
                  : p->maxchar < 65536 ? PyUnicode_2BYTE_KIND : PyUnicode_4BYTE_KIND;
        longest = p->chars > longest ? p->chars : longest;
        if (!p->maxchar) /* ASCII: its bytes are its code points, searched and copied as they are */
            continue;
        decoded = (decoded + 3) & ~(size_t)3; /* a 2- or 4-byte string's code points aligned */
        p->off = decoded;
        decoded += (size_t)p->chars * (size_t)p->kind;
    }
    w->decoded = PyMem_RawMalloc(decoded ? decoded : 1);
    double *weight = PyMem_RawMalloc(sizeof *weight * (size_t)(longest + 1));
    Py_ssize_t *pos = PyMem_RawMalloc(sizeof *pos * (size_t)(longest + 1));
    if (!w->decoded || !weight || !pos) {
        w->nomem = 1;
    } else {
        for (Py_ssize_t i = 0; i < w->n && !w->late; i++) {
            TextPart *p = &w->parts[i];
            if (p->maxchar) {
                utf8_decode(p->src, p->len, p->kind, w->decoded + p->off);
                p->data = w->decoded + p->off;
            } else {
                p->data = p->src;
            }
            w->late = snip_late(w->deadline) ||
                      snip_one(p->kind, p->data, p->chars, w->stems, w->buckets, w->width,
                               w->deadline, weight, pos, &w->spans[i]) < 0;
        }
    }
    PyMem_RawFree(weight);
    PyMem_RawFree(pos);
}

PyDoc_STRVAR(texts_snippets_doc,
"texts_snippets(file, page_size, usable, root, column, rowids, stems, weights, width,\n"
"               deadline) -> (texts, snippets) | None\n\n"
"read_texts(file, page_size, usable, root, column, rowids), then snippets(texts, stems,\n"
"weights, width, deadline), in one call: the same texts, the same snippets (None for a text\n"
"left to the Python code) and the same errors; None instead of the pair when the deadline\n"
"passed. The texts are copied, decoded and searched without the GIL when they are 16,384\n"
"bytes or more in all (read_texts keeps it for its decoding).");

struct TextsRun {
    Py_buffer file;
    DbFile db;
    Py_ssize_t root, column, max_rows;
    SpanSrc span;   /* a span column (version 4): where its rows' documents are */
    SpanRow *rows;
    SnipStem *stems;
    Py_ssize_t n_stems;
    SnipBuckets buckets;
    DbValue *vals;
    int64_t *ids;
    uint64_t total;
    PageError why_find; /* a row not found (or not TEXT): row ids[failed_find] */
    Py_ssize_t failed_find;
    TextWork w;
    /* the texts spec's optional `hits`: what make_hits reads of each hit (hits_warm) */
    Py_buffer hit_doc, hit_ordinal, hit_offsets, hit_fields, hit_pieces;
    int warm;
    unsigned warmed; /* what hits_warm read, kept so that its reads are not optimised away */
};

static void
texts_run_free(TextsRun *r)
{
    if (!r)
        return;
    PyMem_RawFree(r->w.copy);
    PyMem_RawFree(r->w.decoded);
    PyMem_RawFree(r->w.cut);
    PyMem_RawFree(r->rows);
    PyMem_RawFree(r->w.parts);
    PyMem_RawFree(r->w.spans);
    PyMem_RawFree(r->vals);
    PyMem_RawFree(r->ids);
    snip_stems_free(r->stems, r->n_stems);
    PyBuffer_Release(&r->file); /* (a no-op on a buffer never acquired) */
    PyBuffer_Release(&r->hit_doc);
    PyBuffer_Release(&r->hit_ordinal);
    PyBuffer_Release(&r->hit_offsets);
    PyBuffer_Release(&r->hit_fields);
    PyBuffer_Release(&r->hit_pieces);
    PyMem_RawFree(r);
}

/* A run of up to max_rows texts of the TEXT column `column` of the table at `root` in the
   mapped `file` (its buffer taken over: released by texts_run_free), with their snippets for
   (stems, weights) in `width` characters by `deadline` (<= 0: none). NULL with an exception
   set (the buffer released). */
static TextsRun *
texts_run_new(Py_buffer *file, Py_ssize_t page_size, Py_ssize_t usable, Py_ssize_t root,
              Py_ssize_t column, PyObject *stems_obj, PyObject *weights_obj, Py_ssize_t width,
              double deadline, Py_ssize_t max_rows, const char *who)
{
    TextsRun *r = PyMem_RawCalloc(1, sizeof *r);
    if (!r) {
        PyBuffer_Release(file);
        return (TextsRun *)PyErr_NoMemory();
    }
    r->file = *file;
    if (span_decode(column, &r->span, &column) < 0 ||
        !db_geometry_ok(file, page_size, usable, root, column) ||
        (r->span.on && !db_geometry_ok(file, page_size, usable, (Py_ssize_t)r->span.doc_root,
                                       r->span.blob_col))) {
        PyErr_Format(PyExc_ValueError, "%s: invalid file geometry or table", who);
        goto fail;
    }
    r->db = (DbFile){(const unsigned char *)file->buf, (uint64_t)file->len, (uint32_t)page_size,
                     (uint32_t)usable, (uint32_t)(file->len / page_size)};
    r->root = root;
    r->column = column;
    r->max_rows = max_rows;
    if (snip_args(stems_obj, weights_obj, width, &r->stems, &r->n_stems, &r->buckets) < 0)
        goto fail;
    const size_t m = (size_t)(max_rows > 0 ? max_rows : 0) + 1;
    r->vals = PyMem_RawCalloc(m, sizeof *r->vals);
    r->ids = PyMem_RawCalloc(m, sizeof *r->ids);
    r->w.parts = PyMem_RawCalloc(m, sizeof *r->w.parts);
    r->w.spans = PyMem_RawCalloc(m, sizeof *r->w.spans);
    r->rows = PyMem_RawCalloc(m, sizeof *r->rows);
    if (!r->vals || !r->ids || !r->w.parts || !r->w.spans || !r->rows) {
        PyErr_NoMemory();
        goto fail;
    }
    r->w.db = &r->db;
    r->w.vals = r->vals;
    r->w.span = &r->span;
    r->w.rows = r->rows;
    r->w.stems = r->stems;
    r->w.buckets = &r->buckets;
    r->w.width = width;
    r->w.deadline = deadline;
    r->w.failed = -1;
    r->w.bad_utf8 = -1;
    r->failed_find = -1;
    return r;
fail:
    texts_run_free(r);
    return NULL;
}

/* The `texts` argument of rank_blocks, rank_maxscore and rescore: (file, page_size, usable,
   root, column, stems, weights, width, deadline[, hits]), texts_snippets' arguments but the
   rowids; hits (None: none) is (chunk_doc, chunk_ordinal, field_offsets, fields, pieces),
   make_hits' buffers (pieces None where the fields are not in the file's pages). */
static TextsRun *
texts_run_from_spec(PyObject *spec, Py_ssize_t max_rows)
{
    Py_buffer file;
    Py_ssize_t page_size, usable, root, column, width;
    double deadline;
    PyObject *stems, *weights, *hits = Py_None, *pieces = Py_None;
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "texts: a tuple (file, page_size, usable, root, column, "
                                         "stems, weights, width, deadline[, hits])");
        return NULL;
    }
    if (!PyArg_ParseTuple(spec, "y*nnnnOOnd|O:texts", &file, &page_size, &usable, &root, &column,
                          &stems, &weights, &width, &deadline, &hits))
        return NULL;
    TextsRun *r = texts_run_new(&file, page_size, usable, root, column, stems, weights, width,
                                deadline, max_rows, "texts");
    if (!r || hits == Py_None)
        return r;
    if (!PyTuple_Check(hits) ||
        !PyArg_ParseTuple(hits, "y*y*y*y*O:hits", &r->hit_doc, &r->hit_ordinal, &r->hit_offsets,
                          &r->hit_fields, &pieces) ||
        (pieces != Py_None && PyObject_GetBuffer(pieces, &r->hit_pieces, PyBUF_SIMPLE) < 0)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "texts: hits is a tuple (chunk_doc, chunk_ordinal, "
                                             "field_offsets, fields, pieces)");
        texts_run_free(r);
        return NULL;
    }
    r->warm = 1;
    return r;
}

/* Read (nothing more) what make_hits will read of these hits: their chunk's document and
   ordinal, the document's field offsets and the fields' bytes, one byte a cache line. Done
   without the GIL after the ranking and the texts, which have evicted them: make_hits, which
   holds the GIL, then finds them in the cache instead of waiting on memory for each (~1 µs a
   hit on a serving thread; the other thread waits for the GIL meanwhile). Out-of-range values
   are skipped, never read: make_hits reports them. */
static void
hits_warm(TextsRun *r, const int64_t *ids, Py_ssize_t n)
{
    if (!r->warm)
        return;
    const int32_t *doc_of = (const int32_t *)r->hit_doc.buf, *ord_of = (const int32_t *)r->hit_ordinal.buf;
    const Py_ssize_t n_doc = r->hit_doc.len / 4, n_ord = r->hit_ordinal.len / 4;
    const int64_t *o = (const int64_t *)r->hit_offsets.buf;
    const Py_ssize_t n_offs = r->hit_offsets.len / 8;
    const unsigned char *data = (const unsigned char *)r->hit_fields.buf;
    const int64_t n_data = (int64_t)r->hit_fields.len;
    const int64_t *pc = (const int64_t *)r->hit_pieces.buf;
    const Py_ssize_t n_pc = r->hit_pieces.len / 8;
    unsigned acc = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t c = ids[i];
        if (c < 1 || c >= n_doc || c >= n_ord)
            continue;
        const int64_t d = doc_of[c];
        acc += (unsigned)ord_of[c];
        if (d < 1 || 3 * d + 3 >= n_offs)
            continue;
        const int64_t a = o[3 * d], b = o[3 * d + 3];
        if (a < 0 || b <= a || a > n_data) /* (a field table lies within the file) */
            continue;
        /* a hit's fields are short (a docid, a URL, a title): their first 4 KB at most */
        const int64_t span = b - a < 4096 ? b - a : 4096;
        if (!pc) { /* the fields in memory */
            for (int64_t at = a; at < a + span && at < n_data; at += 64)
                acc += data[at];
            continue;
        }
        if (n_pc < 3 || b > pc[0] || pc[1] <= 0 || pc[2] <= 0)
            continue;
        const int64_t first = pc[1], per = pc[2];
        for (int64_t at = a; at < a + span; at += 64) { /* paged_field's arithmetic */
            const int64_t k = at < first ? 0 : 1 + (at - first) / per;
            const int64_t skip = at < first ? at : (at - first) % per;
            if (3 + k >= n_pc || pc[3 + k] < 0 || skip >= n_data || pc[3 + k] >= n_data - skip)
                break;
            acc += data[pc[3 + k] + skip];
        }
    }
    *(volatile unsigned *)&r->warmed = acc;
}

/* Find the rows' values (r->ids[0..n), at most max_rows), then copy, decode and search them:
   plain C, without the GIL or with it. */
static void
texts_run_find(TextsRun *r, Py_ssize_t n)
{
    r->w.n = n;
    if (r->span.on)
        r->why_find = span_find(&r->db, r->root, &r->span, r->ids, n, r->vals, r->rows, &r->w.spilled,
                                &r->total, &r->failed_find);
    else
        r->why_find = text_find(&r->db, r->root, r->column, r->ids, n, r->vals, &r->w.spilled,
                                &r->total, &r->failed_find);
}

static void
texts_run_work(TextsRun *r, const int64_t *ids, Py_ssize_t n)
{
    if (n > r->max_rows) { /* a caller's defect: nothing read beyond the arrays */
        r->w.nomem = 1;
        return;
    }
    memcpy(r->ids, ids, sizeof *ids * (size_t)n);
    texts_run_find(r, n);
    if (!r->why_find)
        text_work(&r->w);
    hits_warm(r, ids, n);
}

/* The run's (texts, snippets) (a snippet None where the Python code must make it), None when
   the deadline passed, or NULL with the exception of its first failure: a row not found or not
   TEXT (ValueError naming the row), no memory, a damaged page (ValueError naming the row), a
   text that is not UTF-8 (UnicodeDecodeError, CPython's own). */
static PyObject *
texts_run_result(TextsRun *r)
{
    TextWork *w = &r->w;
    if (r->why_find) {
        PyErr_Format(PyExc_ValueError, "row %lld: %s", (long long)r->ids[r->failed_find], r->why_find);
        return NULL;
    }
    if (w->nomem)
        return PyErr_NoMemory();
    if (w->why) {
        PyErr_Format(PyExc_ValueError, "row %lld: %s", (long long)r->ids[w->failed], w->why);
        return NULL;
    }
    if (w->bad_utf8 >= 0) { /* CPython's own decoder names the bytes (UnicodeDecodeError) */
        const TextPart *p = &w->parts[w->bad_utf8];
        PyObject *t = PyUnicode_DecodeUTF8((const char *)p->src, (Py_ssize_t)p->len, "strict");
        if (t) { /* it took what utf8_scan refused: a defect here, never a wrong text */
            Py_DECREF(t);
            PyErr_Format(PyExc_SystemError, "texts_snippets: row %lld: UTF-8 misread",
                         (long long)r->ids[w->bad_utf8]);
        }
        return NULL;
    }
    if (w->late)
        return Py_NewRef(Py_None);
    PyObject *texts = PyList_New(w->n), *snips = PyList_New(w->n), *result = NULL;
    for (Py_ssize_t i = 0; texts && snips && i < w->n; i++) {
        const TextPart *p = &w->parts[i];
        PyObject *t = PyUnicode_New(p->chars, p->maxchar);
        if (!t)
            goto done;
        PyList_SET_ITEM(texts, i, t);
        if (PyUnicode_KIND(t) != p->kind) {
            PyErr_SetString(PyExc_SystemError, "texts_snippets: a string of another kind");
            goto done;
        }
        memcpy(PyUnicode_DATA(t), p->data, (size_t)p->chars * (size_t)p->kind);
        PyObject *sn = snip_result(t, &w->spans[i]);
        if (!sn)
            goto done;
        PyList_SET_ITEM(snips, i, sn);
    }
    if (texts && snips)
        result = PyTuple_Pack(2, texts, snips);
done:
    Py_XDECREF(texts);
    Py_XDECREF(snips);
    return result;
}

/* texts_run_result for the calls that rank and read the texts at once: False (no exception)
   where it would fail, so that the caller reads the texts again by texts_snippets and reports
   the failure as a failure to read them (a damaged text, not a damaged posting list). */
static PyObject *
texts_run_made(TextsRun *r)
{
    if (r->why_find || r->w.nomem || r->w.why || r->w.bad_utf8 >= 0)
        return Py_NewRef(Py_False);
    return texts_run_result(r);
}

static PyObject *
texts_snippets(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer file;
    Py_ssize_t page_size, usable, root, column, width;
    double deadline;
    PyObject *rowids_obj, *stems_obj, *weights_obj, *rowids = NULL, *result = NULL;
    TextsRun *r = NULL;
    if (!PyArg_ParseTuple(args, "y*nnnnOOOnd:texts_snippets", &file, &page_size, &usable, &root,
                          &column, &rowids_obj, &stems_obj, &weights_obj, &width, &deadline))
        return NULL;
    rowids = PySequence_Fast(rowids_obj, "rowids must be a sequence");
    if (!rowids) {
        PyBuffer_Release(&file);
        return NULL;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(rowids);
    r = texts_run_new(&file, page_size, usable, root, column, stems_obj, weights_obj, width,
                      deadline, n, "texts_snippets");
    if (!r)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        r->ids[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(rowids, i));
        if (r->ids[i] == -1 && PyErr_Occurred())
            goto done;
    }
    texts_run_find(r, n); /* with the GIL: cheap, and how many bytes follow */
    if (!r->why_find && r->total >= 16384) {
        NOGIL_BEGIN
        text_work(&r->w);
        NOGIL_END
    } else if (!r->why_find) {
        text_work(&r->w);
    }
    result = texts_run_result(r);
done:
    texts_run_free(r);
    Py_XDECREF(rowids);
    return result;
}

PyDoc_STRVAR(snippet_chars_doc,
"snippet_chars(text) -> (lowered, alnum, space)\n\n"
"How snippets() sees each code point of `text`: its lower case (one code point; U+0130 and\n"
"U+03A3, which snippets() leaves to the Python code, as the simple mapping gives them), and\n"
"one byte each (0 or 1) of whether it is alphanumeric and whether it is whitespace. For the\n"
"tests, which compare it with str.lower(), str.isalnum() and str.isspace() on every code point.");

static PyObject *
snippet_chars(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U:snippet_chars", &text))
        return NULL;
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_UCS4 *low = PyMem_RawMalloc(sizeof *low * (size_t)(n ? n : 1));
    PyObject *alnum = PyBytes_FromStringAndSize(NULL, n), *space = PyBytes_FromStringAndSize(NULL, n);
    PyObject *lowered = NULL, *result = NULL;
    if (!low || !alnum || !space) {
        if (!low)
            PyErr_NoMemory();
        goto done;
    }
    char *a = PyBytes_AS_STRING(alnum), *sp = PyBytes_AS_STRING(space);
    for (Py_ssize_t i = 0; i < n; i++) {
        const Py_UCS4 c = snip_char(kind, data, i);
        low[i] = snip_lower(c);
        a[i] = (char)(snip_alnum(c) != 0);
        sp[i] = (char)(snip_space(c) != 0);
    }
    lowered = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, low, n);
    if (lowered)
        result = PyTuple_Pack(3, lowered, alnum, space);
done:
    PyMem_RawFree(low);
    Py_XDECREF(lowered);
    Py_XDECREF(alnum);
    Py_XDECREF(space);
    return result;
}

/* ---- Chunk texts: str.split() and " ".join() without an object per word ---------------------- */

/* The words of `text` as str.split() finds them (maximal runs of code points that are not
   Py_UNICODE_ISSPACE, the test str.split() makes): their [start, end) offsets and largest code
   point, in arrays the caller frees; -1 with a Python error. */
static Py_ssize_t
text_words(PyObject *text, Py_ssize_t **bounds_out, Py_UCS4 **maxes_out)
{
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t cap = n / 2 + 1; /* a word and a separator: 2 code points at least, but one */
    Py_ssize_t *bounds = PyMem_RawMalloc(sizeof *bounds * 2 * (size_t)cap);
    Py_UCS4 *maxes = PyMem_RawMalloc(sizeof *maxes * (size_t)cap);
    if (!bounds || !maxes) {
        PyMem_RawFree(bounds);
        PyMem_RawFree(maxes);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t words = 0, i = 0;
    while (i < n) {
        while (i < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i)))
            i++;
        if (i == n)
            break;
        const Py_ssize_t start = i;
        Py_UCS4 top = 0;
        for (; i < n; i++) {
            const Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (Py_UNICODE_ISSPACE(c))
                break;
            top = c > top ? c : top;
        }
        bounds[2 * words] = start;
        bounds[2 * words + 1] = i;
        maxes[words++] = top;
    }
    *bounds_out = bounds;
    *maxes_out = maxes;
    return words;
}

PyDoc_STRVAR(word_count_doc,
"word_count(text) -> int\n\n"
"len(text.split()), without making the words.");

static PyObject *
word_count(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U:word_count", &text))
        return NULL;
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t words = 0;
    int in_word = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int space = Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i)) != 0;
        words += !space && !in_word;
        in_word = !space;
    }
    return PyLong_FromSsize_t(words);
}

PyDoc_STRVAR(join_words_doc,
"join_words(text, spans) -> list[str]\n\n"
"For each (start, end) of `spans`, \" \".join(text.split()[start:end]): the same strings,\n"
"without an object per word (runs of words with one space between them are copied at once).\n"
"ValueError when a span is not within the text's words.");

/* A text's words (text_words) and a sequence of (start, end) word spans over them: what
   join_words and word_byte_spans share. */
typedef struct {
    PyObject *spans; /* PySequence_Fast of the argument */
    Py_ssize_t *bounds;
    Py_UCS4 *maxes;
    Py_ssize_t n_words, n_spans;
} WordSpans;

/* 0, or -1 with an exception set; word_spans_close must follow either way. */
static int
word_spans_open(WordSpans *w, PyObject *text, PyObject *spans_obj)
{
    memset(w, 0, sizeof *w);
    w->spans = PySequence_Fast(spans_obj, "spans must be a sequence");
    if (!w->spans)
        return -1;
    w->n_spans = PySequence_Fast_GET_SIZE(w->spans);
    w->n_words = text_words(text, &w->bounds, &w->maxes);
    return w->n_words < 0 ? -1 : 0;
}

/* Span k into *ws, *we: 0, or -1 with an exception set (not a pair of integers, or not within
   the text's words; an empty span is refused unless empty_ok). */
static int
word_spans_at(const WordSpans *w, Py_ssize_t k, int empty_ok, const char *fn, Py_ssize_t *ws,
              Py_ssize_t *we)
{
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(w->spans, k), "nn;a span must be (start, end)", ws, we))
        return -1;
    if (*ws < 0 || *we < *ws || (*we == *ws && !empty_ok) || *we > w->n_words) {
        PyErr_Format(PyExc_ValueError, "%s: span (%zd, %zd) is not within the text's %zd words", fn,
                     *ws, *we, w->n_words);
        return -1;
    }
    return 0;
}

static void
word_spans_close(WordSpans *w)
{
    PyMem_RawFree(w->bounds);
    PyMem_RawFree(w->maxes);
    Py_XDECREF(w->spans);
}

static PyObject *
join_words(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *text, *spans_obj, *result = NULL;
    WordSpans sp;
    if (!PyArg_ParseTuple(args, "UO:join_words", &text, &spans_obj))
        return NULL;
    if (word_spans_open(&sp, text, spans_obj) < 0)
        goto done;
    const Py_ssize_t *bounds = sp.bounds;
    const Py_UCS4 *maxes = sp.maxes;
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    result = PyList_New(sp.n_spans);
    if (!result)
        goto done;
    for (Py_ssize_t k = 0; k < sp.n_spans; k++) {
        Py_ssize_t ws, we;
        if (word_spans_at(&sp, k, 1, "join_words", &ws, &we) < 0)
            goto fail;
        Py_ssize_t len = we > ws ? we - ws - 1 : 0;
        Py_UCS4 top = 0;
        for (Py_ssize_t w = ws; w < we; w++) {
            len += bounds[2 * w + 1] - bounds[2 * w];
            top = maxes[w] > top ? maxes[w] : top;
        }
        if (we > ws)
            top = top > ' ' ? top : ' ';
        PyObject *out = PyUnicode_New(len, top);
        if (!out)
            goto fail;
        PyList_SET_ITEM(result, k, out);
        const int out_kind = PyUnicode_KIND(out);
        void *out_data = PyUnicode_DATA(out);
        Py_ssize_t at = 0;
        for (Py_ssize_t w = ws; w < we;) {
            /* a run: words separated by exactly one ' ' in the text, copied as they stand */
            Py_ssize_t last = w;
            while (last + 1 < we && bounds[2 * (last + 1)] == bounds[2 * last + 1] + 1
                   && PyUnicode_READ(kind, data, bounds[2 * last + 1]) == ' ')
                last++;
            const Py_ssize_t from = bounds[2 * w], count = bounds[2 * last + 1] - from;
            /* Not PyUnicode_CopyCharacters: copying Latin-1 into ASCII it checks the source's
               first `count` characters, not those copied, and refuses what fits. */
            if (out_kind == kind)
                memcpy((char *)out_data + at * kind, (const char *)data + from * kind, (size_t)(count * kind));
            else
                for (Py_ssize_t j = 0; j < count; j++)
                    PyUnicode_WRITE(out_kind, out_data, at + j, PyUnicode_READ(kind, data, from + j));
            at += count;
            w = last + 1;
            if (w < we)
                PyUnicode_WRITE(out_kind, out_data, at++, ' ');
        }
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    word_spans_close(&sp);
    return result;
}

PyDoc_STRVAR(word_byte_spans_doc,
"word_byte_spans(text, spans) -> list[tuple[int, int]]\n\n"
"For each (start, end) of `spans` (start < end), the UTF-8 byte offsets of the start of word\n"
"`start` and the end of word `end - 1` of `text` (its words as str.split() finds them): what\n"
"chunktext.byte_spans returns. ValueError when a span is not within the text's words.");

static PyObject *
word_byte_spans(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *text, *spans_obj, *result = NULL;
    WordSpans sp;
    int64_t *bytes = NULL;
    if (!PyArg_ParseTuple(args, "UO:word_byte_spans", &text, &spans_obj))
        return NULL;
    if (word_spans_open(&sp, text, spans_obj) < 0)
        goto done;
    const Py_ssize_t *bounds = sp.bounds, n_words = sp.n_words;
    bytes = PyMem_RawMalloc(sizeof *bytes * (size_t)(2 * n_words + 1));
    if (!bytes) {
        PyErr_NoMemory();
        goto done;
    }
    /* each word bound's byte offset: its code point offset, counted in UTF-8 bytes */
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const int ascii = PyUnicode_IS_ASCII(text);
    int64_t b = 0;
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < 2 * n_words; k++) {
        if (ascii) {
            bytes[k] = bounds[k];
            continue;
        }
        for (; at < bounds[k]; at++) {
            const Py_UCS4 c = PyUnicode_READ(kind, data, at);
            b += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        }
        bytes[k] = b;
    }
    result = PyList_New(sp.n_spans);
    for (Py_ssize_t k = 0; result && k < sp.n_spans; k++) {
        Py_ssize_t ws, we;
        if (word_spans_at(&sp, k, 0, "word_byte_spans", &ws, &we) < 0)
            goto fail;
        PyObject *pair = Py_BuildValue("(LL)", (long long)bytes[2 * ws], (long long)bytes[2 * (we - 1) + 1]);
        if (!pair)
            goto fail;
        PyList_SET_ITEM(result, k, pair);
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    PyMem_RawFree(bytes);
    word_spans_close(&sp);
    return result;
}

PyDoc_STRVAR(fts5_doclists_doc,
"fts5_doclists(pages, first_pgno, to_end, chunks, tfs, lengths) -> (terms, dfs, n)\n\n"
"Every doclist of a window of FTS5 leaf pages (bytes, consecutive pages of one segment; the\n"
"first numbered first_pgno), from the first term on the first page to the first term on the\n"
"last page (to its end when to_end): the terms in key order (UTF-8 decoded, 'replace'; the\n"
"index byte dropped), each one's number of rowids, and in chunks/tfs (writable uint32\n"
"buffers) the first n postings, term after term, each rowid and its number of positions,\n"
"which are also added to lengths[rowid] (int64, n_rows + 1 entries: rowids run 1..n_rows).\n"
"ValueError saying where and why when a page is not what FTS5 writes (see _fts5.h).");

typedef struct {
    PyObject *terms, *dfs;
} Fts5Terms;

static int
fts5_term(void *ctx, const unsigned char *key, Py_ssize_t n, int64_t df)
{
    Fts5Terms *t = ctx;
    PyObject *term = PyUnicode_DecodeUTF8((const char *)key, n, "replace");
    PyObject *count = PyLong_FromLongLong(df);
    const int rc = term && count && PyList_Append(t->terms, term) == 0 && PyList_Append(t->dfs, count) == 0
                       ? 0 : -1;
    Py_XDECREF(term);
    Py_XDECREF(count);
    return rc;
}

static PyObject *
fts5_doclists(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *pages_obj, *pages = NULL, *result = NULL;
    long long first_pgno;
    int to_end;
    Py_buffer chunks = {0}, tfs = {0}, lengths = {0};
    const unsigned char **ptrs = NULL;
    Py_ssize_t *lens = NULL;
    unsigned char *key = NULL;
    Fts5Terms out = {PyList_New(0), PyList_New(0)};
    if (!out.terms || !out.dfs)
        goto done;
    if (!PyArg_ParseTuple(args, "OLpw*w*w*:fts5_doclists", &pages_obj, &first_pgno, &to_end, &chunks,
                          &tfs, &lengths))
        goto done;
    if (chunks.len != tfs.len || chunks.len % 4 || lengths.len % 8 || lengths.len < 8
        || ((uintptr_t)chunks.buf | (uintptr_t)tfs.buf) % 4 || (uintptr_t)lengths.buf % 8) {
        PyErr_SetString(PyExc_ValueError, "fts5_doclists: chunks and tfs must be equal uint32 buffers, "
                                          "lengths an int64 buffer of n_rows + 1");
        goto done;
    }
    pages = PySequence_Fast(pages_obj, "pages must be a sequence");
    if (!pages)
        goto done;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(pages);
    ptrs = PyMem_RawCalloc((size_t)n + 1, sizeof *ptrs);
    lens = PyMem_RawCalloc((size_t)n + 1, sizeof *lens);
    key = PyMem_RawMalloc(FTS5_MAX_KEY);
    if (!ptrs || !lens || !key) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        char *buf;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(pages, i), &buf, &lens[i]) < 0)
            goto done;
        ptrs[i] = (const unsigned char *)buf;
    }
    Fts5Decode d = {
        .pages = ptrs, .lens = lens, .n_pages = n, .first_pgno = first_pgno, .to_end = to_end,
        .n_rows = lengths.len / 8 - 1, .chunks = chunks.buf, .tfs = tfs.buf, .cap = chunks.len / 4,
        .lengths = lengths.buf, .term = fts5_term, .ctx = &out, .key = key,
    };
    if (fts5_decode(&d) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, d.err);
        goto done;
    }
    result = Py_BuildValue("(OOn)", out.terms, out.dfs, d.n_out);
done:
    Py_XDECREF(out.terms);
    Py_XDECREF(out.dfs);
    Py_XDECREF(pages);
    PyMem_RawFree(ptrs);
    PyMem_RawFree(lens);
    PyMem_RawFree(key);
    if (chunks.obj)
        PyBuffer_Release(&chunks);
    if (tfs.obj)
        PyBuffer_Release(&tfs);
    if (lengths.obj)
        PyBuffer_Release(&lengths);
    return result;
}

PyDoc_STRVAR(gil_stats_doc,
"gil_stats() -> (free_seconds, wait_seconds, releases)\n\n"
"This thread's account of the GIL in the kernel since the thread started: the seconds its\n"
"calls worked without the GIL, the seconds they then waited to take it back (another thread\n"
"held it), and how many times they let it go. Callers take differences. Without a monotonic\n"
"clock the seconds stay 0.0.");

static PyObject *
gil_stats(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return Py_BuildValue("(ddL)", 1e-9 * (double)gil_free_ns, 1e-9 * (double)gil_wait_ns,
                         (long long)gil_releases);
}

PyDoc_STRVAR(gil_spin_doc,
"gil_spin(ns=-1) -> int\n\n"
"The longest a kernel thread polls for another kernel thread's Python stretch to end before\n"
"it sleeps in CPython's wait for the GIL, in nanoseconds (default 200,000; 0: never poll), and\n"
"with ns >= 0 set it for every thread; returns the bound before the call. -1 where there is\n"
"no polling (a CPython whose GIL this build cannot read, or no C11 atomics).");

static PyObject *
gil_spin_bound(PyObject *self, PyObject *args)
{
    (void)self;
    long long ns = -1;
    if (!PyArg_ParseTuple(args, "|L:gil_spin", &ns))
        return NULL;
#if HAVE_GIL_SPIN
    if (!gil_word)
        return PyLong_FromLong(-1);
    const int64_t before = atomic_load(&gil_spin_ns);
    if (ns > GIL_SPIN_MAX_NS) {
        PyErr_Format(PyExc_ValueError, "gil_spin: %lld ns is more than %lld (a poller never asks "
                     "the GIL's holder to switch)", ns, (long long)GIL_SPIN_MAX_NS);
        return NULL;
    }
    if (ns >= 0)
        atomic_store(&gil_spin_ns, (int64_t)ns);
    return PyLong_FromLongLong((long long)before);
#else
    return PyLong_FromLong(-1);
#endif
}


#endif /* DRSEARCH_K_TEXTS_H */
