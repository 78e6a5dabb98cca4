/* _k_lz.h: part of the drsearch.index._kernels module, included once by _kernels.c (one
 * translation unit). drsearch's LZ block codec for schema version 4's document texts. */
#ifndef DRSEARCH_K_LZ_H
#define DRSEARCH_K_LZ_H

/* ------------------------------------------------------------------------------------------
 * The "drlz" format (drsearch.index.lzcodec is its reference, in Python, byte for byte):
 *
 *   byte 0       LZ_MAGIC (0xD1). A zlib stream's first byte has 8 in its low nibble
 *                (CM = deflate), so a document text BLOB says which codec wrote it.
 *   then         n, the text's length in bytes, as an unsigned LEB128 varint
 *   then         sequences, until n bytes are made. A sequence is
 *                  token        1 byte: high nibble L, low nibble M
 *                  [L ext]      L == 15: bytes added to L until one is not 255
 *                  literals     L bytes, copied
 *                  offset       2 bytes, little-endian. 0: no match (M must be 0), else
 *                  [M ext]      M == 15: bytes added to M until one is not 255
 *                  match        M + 4 bytes copied from `offset` bytes back (they may overlap)
 *   then, last   the text's CRC-32, 4 bytes (added and checked by lzcodec.py, not here: a span
 *                decoded from its block never reaches it)
 *
 * A text is written in blocks: one starts at each chunk's start byte, and no match reaches
 * back past its block's start, nor does a sequence run past its block's end (a block ends with
 * a sequence whose offset is 0 when it does not end with a match). So decoding from a block's
 * first token (its `zstart` in the BLOB) makes the text from that block's first byte on,
 * through the blocks after it: a chunk decodes its own span and nothing before it.
 *
 * The writer is a greedy hash matcher (LZ4's kind: one 4-byte hash table, no chains, matches
 * extended both ways), deterministic: the same text and starts give the same bytes. The reader
 * checks every length and offset against its buffers: damaged bytes give an error, never a read
 * or write outside them.
 * ------------------------------------------------------------------------------------------ */

#define LZ_MAGIC 0xD1
/* The first byte of a document text stored as its words joined by single spaces, then the
   whitespace that differed (chunktext.pack_joined): the same drlz stream, so a chunk's span
   decodes to its text as it is, with no whitespace to collapse. */
#define LZ_MAGIC_JOINED 0xD2
#define LZ_MIN_MATCH 4
#define LZ_MAX_OFFSET 65535
#define LZ_HASH_BITS 15
#define LZ_CHAIN_DEPTH 8
/* The shortest match the writer takes (the format allows LZ_MIN_MATCH): a match of 4 or 5 bytes
   saves 1 or 2 bytes (a token and an offset stand for it) but costs the reader a sequence, and
   a hit's decoding time is about its sequences: on the benchmark corpus, taking them makes
   compressed texts 8% smaller and spans 15-20% slower to decode (docs/ENGINE.md). */
#define LZ_MIN_TAKEN 6
/* No drlz stream of z bytes makes more than LZ_MAX_RATIO * z + LZ_MAX_RATIO bytes (a length
   byte adds at most 255): a length past that is damage, refused before anything is allocated. */
#define LZ_MAX_RATIO 256

static inline uint32_t
lz_read32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint32_t
lz_hash(uint32_t v)
{
    return (v * 2654435761u) >> (32 - LZ_HASH_BITS);
}

/* The most bytes lz_encode writes for n bytes in `blocks` blocks. */
static uint64_t
lz_bound(uint64_t n, uint64_t blocks)
{
    return 1 + 10 + n + n / 255 + 8 * (blocks + 1) + 16;
}

/* A length's extension bytes (its nibble was 15): len - 15 as 255s and a last byte < 255. */
static unsigned char *
lz_put_ext(unsigned char *o, uint64_t rest)
{
    while (rest >= 255) {
        *o++ = 255;
        rest -= 255;
    }
    *o++ = (unsigned char)rest;
    return o;
}

/* One sequence: the literals lit[0..n_lit), then a match of m bytes at `off` back (off 0: none). */
static unsigned char *
lz_put_seq(unsigned char *o, const unsigned char *lit, uint64_t n_lit, unsigned off, uint64_t m)
{
    const uint64_t mc = off ? m - LZ_MIN_MATCH : 0;
    *o++ = (unsigned char)(((n_lit < 15 ? n_lit : 15) << 4) | (mc < 15 ? mc : 15));
    if (n_lit >= 15)
        o = lz_put_ext(o, n_lit - 15);
    memcpy(o, lit, n_lit);
    o += n_lit;
    *o++ = (unsigned char)(off & 0xFF);
    *o++ = (unsigned char)(off >> 8);
    if (off && mc >= 15)
        o = lz_put_ext(o, mc - 15);
    return o;
}

/* The writer's match finder: per 4-byte hash the last position seen (head, position + 1; 0:
   none), and per position the one before it with the same hash (prev), so every earlier
   position of a block is a candidate, the nearest first. */
typedef struct {
    uint32_t *head, *prev;
    const unsigned char *src;
    uint64_t b0, b1, ins; /* the block, and the next position to enter into the chains */
} LzChains;

/* The longest match for position p (p + 4 <= b1) among the LZ_CHAIN_DEPTH nearest earlier
   positions of its block with its hash, within LZ_MAX_OFFSET (the first of equal lengths:
   the nearest); its length in *m (0: none, or one shorter than LZ_MIN_TAKEN) and where in *c.
   Enters positions up to p first. */
static void
lz_best(LzChains *ch, uint64_t p, uint64_t *m, uint64_t *c)
{
    const unsigned char *src = ch->src;
    for (uint64_t q = ch->ins; q <= p; q++) {
        const uint32_t h = lz_hash(lz_read32(src + q));
        ch->prev[q] = ch->head[h];
        ch->head[h] = (uint32_t)(q + 1);
    }
    ch->ins = p + 1;
    uint64_t best = 0, at = 0, c1 = ch->prev[p];
    const uint32_t v = lz_read32(src + p);
    for (int depth = 0; c1 && depth < LZ_CHAIN_DEPTH; depth++) {
        const uint64_t cand = c1 - 1;
        if (cand < ch->b0 || p - cand > LZ_MAX_OFFSET)
            break;
        if (lz_read32(src + cand) == v && (!best || (p + best < ch->b1 && src[cand + best] == src[p + best]))) {
            uint64_t len = LZ_MIN_MATCH;
            while (p + len < ch->b1 && src[cand + len] == src[p + len])
                len++;
            if (len > best) {
                best = len;
                at = cand;
            }
        }
        c1 = ch->prev[cand];
    }
    *m = best >= LZ_MIN_TAKEN ? best : 0;
    *c = at;
}

/* Encode src[b0..b1) as one block into o (ch: the text's chains; no match reaches before b0).
   Greedy with one step of lazy matching: a match at i is taken unless the one at i + 1 is
   longer. Returns the end of what it wrote. */
static unsigned char *
lz_block(LzChains *ch, uint64_t b0, uint64_t b1, unsigned char *o)
{
    const unsigned char *src = ch->src;
    ch->b0 = b0;
    ch->b1 = b1;
    ch->ins = b0;
    uint64_t anchor = b0, i = b0;
    while (i + LZ_MIN_MATCH <= b1) {
        uint64_t m, c;
        lz_best(ch, i, &m, &c);
        if (!m) {
            i++;
            continue;
        }
        if (i + 1 + LZ_MIN_MATCH <= b1) {
            uint64_t m2, c2;
            lz_best(ch, i + 1, &m2, &c2);
            if (m2 > m) {
                i++;
                m = m2;
                c = c2;
            }
        }
        uint64_t s = i;
        while (s > anchor && c > b0 && src[s - 1] == src[c - 1]) { /* backwards, into the literals */
            s--;
            c--;
            m++;
        }
        o = lz_put_seq(o, src + anchor, s - anchor, (unsigned)(s - c), m);
        i = anchor = s + m;
    }
    if (anchor < b1)
        o = lz_put_seq(o, src + anchor, b1 - anchor, 0, 0);
    return o;
}

/* Encode src[0..n) with a block starting at each of starts[0..k) (ascending, each < n; a start
   equal to the one before it, or 0, starts no new block) into out (lz_bound(n, k + 1) bytes),
   and each start's block offset in zstarts[0..k). Returns the bytes written, or 0 when the
   chains cannot be allocated. Uses no Python object: runs without the GIL. */
static uint64_t
lz_encode(const unsigned char *src, uint64_t n, const uint64_t *starts, Py_ssize_t k, unsigned char *out,
          uint64_t *zstarts)
{
    LzChains ch = {calloc((size_t)1 << LZ_HASH_BITS, sizeof(uint32_t)), malloc(sizeof(uint32_t) * (n + 1)),
                   src, 0, 0, 0};
    if (!ch.head || !ch.prev || n > UINT32_MAX - 1) {
        free(ch.head);
        free(ch.prev);
        return 0;
    }
    unsigned char *o = out;
    *o++ = LZ_MAGIC;
    uint64_t v = n;
    do { /* LEB128 */
        *o++ = (unsigned char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
    uint64_t at = 0;
    for (Py_ssize_t j = 0; j < k; j++) {
        if (starts[j] > at) {
            o = lz_block(&ch, at, starts[j], o);
            at = starts[j];
        }
        zstarts[j] = (uint64_t)(o - out); /* (where the block at `at` will start) */
    }
    if (n > at)
        o = lz_block(&ch, at, n, o);
    free(ch.head);
    free(ch.prev);
    return (uint64_t)(o - out);
}

/* Copy n bytes from s to d 16 at a time: up to 15 bytes more are read and written (the caller
   checked both buffers have them), and s may overlap d when d - s >= 16. */
static inline void
lz_wild16(unsigned char *d, const unsigned char *s, uint64_t n)
{
    unsigned char *const e = d + n;
    do {
        memcpy(d, s, 16);
        d += 16;
        s += 16;
    } while (d < e);
}

/* A length's extension bytes at z[*ip..) added to len (the nibble was 15). -1: z ran out. */
static inline int
lz_get_ext(const unsigned char *z, uint64_t zlen, uint64_t *ip, uint64_t *len)
{
    unsigned b;
    do {
        if (*ip >= zlen)
            return -1;
        b = z[(*ip)++];
        *len += b;
    } while (b == 255);
    return 0;
}

/* Decode z[0..zlen) (sequences, from a block's first token) until `want` bytes are in out; the
   last sequence may be cut short. *used: the bytes of z read. NULL, or why the bytes are not a
   drlz stream that makes `want` bytes ("ends early": z ran out first). Every copy is checked
   against both buffers first; the 16-byte copies (lz_wild16) only where both have 16 bytes to
   spare past the copy's end. */
static PageError
lz_decode(const unsigned char *z, uint64_t zlen, unsigned char *out, uint64_t want, uint64_t *used)
{
    static const char early[] = "compressed text ends early";
    uint64_t ip = 0, op = 0;
    while (op < want) {
        /* The common sequence, with 32 bytes of z and 64 of out to spare: literals and match
           length within their nibbles (at most 14 + 18 bytes made), a match from 16 bytes back
           or more and not before the block's start. Its literals and match are copied 16 bytes
           at a time with no other check (the margins hold every read and write); any other
           sequence, and the last ones, take the checked path below. */
        if (zlen - ip >= 32 && want - op >= 64) {
            const unsigned t = z[ip], nl = t >> 4, nm = t & 15;
            const unsigned o = (unsigned)z[ip + 1 + nl] | ((unsigned)z[ip + 2 + nl] << 8);
            if (nl < 15 && nm < 15 && o >= 16 && o <= op + nl) {
                memcpy(out + op, z + ip + 1, 16);
                op += nl;
                ip += 3 + nl;
                unsigned char *d = out + op;
                memcpy(d, d - o, 16); /* (o >= 16: each 16 read were written before) */
                memcpy(d + 16, d - o + 16, 16);
                op += nm + LZ_MIN_MATCH;
                continue;
            }
        }
        if (ip >= zlen)
            return early;
        const unsigned tok = z[ip++];
        uint64_t lit = tok >> 4;
        if (lit == 15 && lz_get_ext(z, zlen, &ip, &lit) < 0)
            return early;
        if (lit > zlen - ip)
            return early;
        if (lit <= want - op) {
            if (op + lit + 16 <= want && ip + lit + 16 <= zlen)
                lz_wild16(out + op, z + ip, lit);
            else
                memcpy(out + op, z + ip, lit);
            op += lit;
        } else {
            memcpy(out + op, z + ip, want - op);
            op = want;
        }
        ip += lit;
        if (op >= want) {
            /* the text's last sequence: its zero offset read too (a whole text's every byte) */
            if (!(tok & 15) && zlen - ip >= 2 && !z[ip] && !z[ip + 1])
                ip += 2;
            break;
        }
        if (zlen - ip < 2)
            return early;
        const unsigned off = (unsigned)z[ip] | ((unsigned)z[ip + 1] << 8);
        ip += 2;
        uint64_t m = tok & 15;
        if (!off) {
            if (m)
                return "a sequence without a match has a match length";
            continue;
        }
        if (m == 15 && lz_get_ext(z, zlen, &ip, &m) < 0)
            return early;
        m += LZ_MIN_MATCH;
        if (off > op)
            return "a match reaches back past its block's start";
        if (m > want - op)
            m = want - op;
        unsigned char *d = out + op;
        const unsigned char *s = d - off;
        if (off >= 16 && op + m + 16 <= want) {
            lz_wild16(d, s, m); /* (reads only bytes already written: s + 16 <= d) */
        } else if (off >= m) {
            memcpy(d, s, m);
        } else if (off >= 8) { /* overlapping: 8 bytes at a time never reads unwritten bytes */
            uint64_t t = 0;
            for (; t + 8 <= m; t += 8)
                memcpy(d + t, s + t, 8);
            for (; t < m; t++)
                d[t] = s[t];
        } else {
            for (uint64_t t = 0; t < m; t++)
                d[t] = s[t];
        }
        op += m;
    }
    *used = ip;
    return NULL;
}

/* A drlz BLOB's header: its text's length in *n and the first token's offset in *head. NULL,
   or why it is not one. */
static PageError
lz_header(const unsigned char *z, uint64_t zlen, uint64_t *n, uint64_t *head)
{
    if (zlen < 2 || (z[0] != LZ_MAGIC && z[0] != LZ_MAGIC_JOINED))
        return "not a drlz text";
    uint64_t v = 0;
    unsigned shift = 0;
    for (uint64_t i = 1; i < zlen && i < 11; i++) {
        v |= (uint64_t)(z[i] & 0x7F) << shift;
        if (!(z[i] & 0x80)) {
            if (v / LZ_MAX_RATIO > zlen)
                return "drlz header is damaged";
            *n = v;
            *head = i + 1;
            return NULL;
        }
        shift += 7;
    }
    return "drlz header is damaged";
}

PyDoc_STRVAR(lz_pack_doc,
"lz_pack(data, starts) -> (bytes, list[int])\n\n"
"`data` (bytes) in drsearch's drlz format (_k_lz.h, lzcodec.py; the checksum not included) with\n"
"a block starting at each\n"
"byte offset of `starts` (ascending, each within the data), and each start's offset in the\n"
"result (its block's first token): what lzcodec.pack returns, byte for byte. Compressed\n"
"without the GIL. ValueError for starts that are not ascending or past the data.");

static PyObject *
lz_pack(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer data = {0};
    PyObject *starts_obj, *starts = NULL, *result = NULL, *blob = NULL, *zs = NULL;
    uint64_t *st = NULL, *zst = NULL;
    unsigned char *out = NULL;
    if (!PyArg_ParseTuple(args, "y*O:lz_pack", &data, &starts_obj))
        return NULL;
    starts = PySequence_Fast(starts_obj, "starts must be a sequence");
    if (!starts)
        goto done;
    const Py_ssize_t k = PySequence_Fast_GET_SIZE(starts);
    const uint64_t n = (uint64_t)data.len;
    st = PyMem_RawMalloc(sizeof *st * ((size_t)k + 1));
    zst = PyMem_RawMalloc(sizeof *zst * ((size_t)k + 1));
    out = PyMem_RawMalloc(lz_bound(n, (uint64_t)k + 1));
    if (!st || !zst || !out) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        const long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(starts, j));
        if (v == -1 && PyErr_Occurred())
            goto done;
        if (v < 0 || (uint64_t)v > n || (j && (uint64_t)v < st[j - 1]) || ((uint64_t)v == n && n)) {
            PyErr_Format(PyExc_ValueError, "lz_pack: start %lld is not ascending within %llu bytes", v,
                         (unsigned long long)n);
            goto done;
        }
        st[j] = (uint64_t)v;
    }
    uint64_t len;
    Py_BEGIN_ALLOW_THREADS
    len = lz_encode(data.buf, n, st, k, out, zst);
    Py_END_ALLOW_THREADS
    if (!len) {
        PyErr_NoMemory();
        goto done;
    }
    blob = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)len);
    zs = PyList_New(k);
    for (Py_ssize_t j = 0; blob && zs && j < k; j++) {
        PyObject *v = PyLong_FromUnsignedLongLong(zst[j]);
        if (!v)
            goto done;
        PyList_SET_ITEM(zs, j, v);
    }
    if (blob && zs)
        result = PyTuple_Pack(2, blob, zs);
done:
    Py_XDECREF(blob);
    Py_XDECREF(zs);
    Py_XDECREF(starts);
    PyMem_RawFree(st);
    PyMem_RawFree(zst);
    PyMem_RawFree(out);
    PyBuffer_Release(&data);
    return result;
}

PyDoc_STRVAR(lz_unpack_doc,
"lz_unpack(blob, zstart=-1, want=-1) -> bytes\n\n"
"The bytes a drlz BLOB holds (lzcodec.unpack): with zstart -1 the whole text, every byte of\n"
"the BLOB read (trailing bytes are an error); else the first `want` bytes decoded from offset\n"
"zstart (a block's first token: lzcodec.span). ValueError saying why for bytes that are not\n"
"such a stream.");

static PyObject *
lz_unpack(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer blob = {0};
    long long zstart = -1, want = -1;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*|LL:lz_unpack", &blob, &zstart, &want))
        return NULL;
    const unsigned char *z = blob.buf;
    const uint64_t zlen = (uint64_t)blob.len;
    uint64_t n = 0, head = 0, used = 0;
    PageError why = lz_header(z, zlen, &n, &head);
    if (!why && zstart >= 0) {
        if ((uint64_t)zstart < head || (uint64_t)zstart > zlen || want < 0)
            why = "span is not within the compressed text";
        else if ((uint64_t)want / LZ_MAX_RATIO > zlen - (uint64_t)zstart)
            why = "compressed text ends early";
        head = (uint64_t)zstart;
        n = (uint64_t)(want < 0 ? 0 : want);
    }
    if (!why && n > (uint64_t)PY_SSIZE_T_MAX / 2)
        why = "text too long";
    if (!why) {
        result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
        if (!result)
            goto done;
        Py_BEGIN_ALLOW_THREADS
        why = lz_decode(z + head, zlen - head, (unsigned char *)PyBytes_AS_STRING(result), n, &used);
        Py_END_ALLOW_THREADS
        if (!why && zstart < 0 && head + used != zlen)
            why = "bytes after the text's end";
    }
    if (why) {
        Py_CLEAR(result);
        PyErr_Format(PyExc_ValueError, "lz_unpack: %s", why);
    }
done:
    PyBuffer_Release(&blob);
    return result;
}

/* ------------------------------------------------------------------------------------------
 * A version-4 document text is stored joined (chunktext.pack_joined; its reference in Python,
 * byte for byte, is chunktext.join_reference): its words joined by single spaces (J,
 * " ".join(text.split()) in UTF-8), then E, the whitespace that was not one ' ', then E's
 * length (4 bytes, little-endian). E: the leading whitespace (a LEB128 length, its bytes), the
 * trailing whitespace (the same), then for each run of whitespace between two words that is
 * not one ' ' (two characters or more, or one other than ' '), the distance in J from the end
 * of the run before it (or J's start) to the ' ' that stands for it, the run's length and its
 * bytes. A chunk's span of J is its text as it is: a hit decodes it and is done. Whitespace is
 * str.isspace()'s (what str.split() splits on): Py_UNICODE_ISSPACE of each UTF-8 character.
 * ------------------------------------------------------------------------------------------ */

/* The bytes of the whitespace character at s[i] (i < n), 0 when none starts there. */
static inline unsigned
lz_ws_at(const unsigned char *s, uint64_t i, uint64_t n)
{
    const unsigned c = s[i];
    if (c < 0x80)
        return Py_UNICODE_ISSPACE(c) ? 1 : 0;
    if (c >= 0xC2 && c < 0xE0 && n - i >= 2)
        return Py_UNICODE_ISSPACE(((Py_UCS4)(c & 0x1F) << 6) | (s[i + 1] & 0x3F)) ? 2 : 0;
    if (c >= 0xE0 && c < 0xF0 && n - i >= 3)
        return Py_UNICODE_ISSPACE(((Py_UCS4)(c & 0x0F) << 12) | ((Py_UCS4)(s[i + 1] & 0x3F) << 6) |
                                  (s[i + 2] & 0x3F)) ? 3 : 0;
    return 0; /* (no character above U+FFFF is whitespace) */
}

/* A growing byte buffer (PyMem_Raw: filled without the GIL). */
typedef struct {
    unsigned char *p;
    size_t len, cap;
    int nomem;
} LzBuf;

static unsigned char *
lz_buf_room(LzBuf *b, size_t more)
{
    if (b->nomem)
        return NULL;
    if (b->len + more > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + more)
            cap *= 2;
        unsigned char *p = PyMem_RawRealloc(b->p, cap);
        if (!p) {
            b->nomem = 1;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    return b->p + b->len;
}

static void
lz_buf_put(LzBuf *b, const void *src, size_t n)
{
    unsigned char *o = lz_buf_room(b, n);
    if (o) {
        memcpy(o, src, n);
        b->len += n;
    }
}

static void
lz_buf_varint(LzBuf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t k = 0;
    do {
        tmp[k++] = (unsigned char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
    lz_buf_put(b, tmp, k);
}

/* s[0..n) joined: J into j (n bytes; its length in *jlen) and E into e. Per run recorded, its
   end in s and the bytes the runs up to it took beyond their one ' ' each, 16 bytes a run into
   marks (pairs: end, shift). The leading whitespace's bytes in *lead, where the trailing
   whitespace starts in *body_end. Without the GIL; e->nomem or marks->nomem on failure. */
static void
lz_join_text(const unsigned char *s, uint64_t n, unsigned char *j, uint64_t *jlen, LzBuf *e, LzBuf *marks,
             uint64_t *lead, uint64_t *body_end)
{
    uint64_t i = 0, w;
    while (i < n && (w = lz_ws_at(s, i, n)))
        i += w;
    *lead = i;
    uint64_t end = n; /* the trailing whitespace, back a character at a time */
    while (end > i) {
        uint64_t k = end - 1;
        while (k > i && (s[k] & 0xC0) == 0x80)
            k--;
        if (lz_ws_at(s, k, n) != end - k)
            break;
        end = k;
    }
    *body_end = end;
    lz_buf_varint(e, i);
    lz_buf_put(e, s, i);
    lz_buf_varint(e, n - end);
    lz_buf_put(e, s + end, n - end);
    uint64_t at = i, jl = 0, prev = 0, shift = 0;
    while (i < end) {
        const unsigned c = s[i];
        if ((c > 0x20 && c < 0x80) || !(w = lz_ws_at(s, i, n))) {
            i++;
            continue;
        }
        const uint64_t a = i;
        while (i < end && (w = lz_ws_at(s, i, n)))
            i += w;
        if (i - a == 1 && s[a] == ' ')
            continue;
        memcpy(j + jl, s + at, a - at);
        jl += a - at;
        lz_buf_varint(e, jl - prev);
        lz_buf_varint(e, i - a);
        lz_buf_put(e, s + a, i - a);
        j[jl] = ' ';
        prev = ++jl;
        at = i;
        shift += i - a - 1;
        const uint64_t mark[2] = {i, shift};
        lz_buf_put(marks, mark, sizeof mark);
    }
    memcpy(j + jl, s + at, end - at);
    *jlen = jl + end - at;
}

PyDoc_STRVAR(lz_join_doc,
"lz_join(data, spans) -> (bytes, list[tuple[int, int]])\n\n"
"The UTF-8 text `data` joined (_k_lz.h; chunktext.join_reference in Python): its words joined by\n"
"single spaces, then the whitespace that was not one space, then that record's length; and\n"
"each (start, end) of `spans` (UTF-8 byte offsets of word boundaries in `data`) as offsets in\n"
"the joined words. Scanned without the GIL. ValueError for a span outside the text's words.");

static PyObject *
lz_join(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer data = {0};
    PyObject *spans_obj, *spans = NULL, *result = NULL, *blob = NULL, *mapped = NULL;
    LzBuf e = {0}, marks = {0};
    unsigned char *j = NULL;
    if (!PyArg_ParseTuple(args, "y*O:lz_join", &data, &spans_obj))
        return NULL;
    spans = PySequence_Fast(spans_obj, "spans must be a sequence");
    if (!spans)
        goto done;
    const unsigned char *s = data.buf;
    const uint64_t n = (uint64_t)data.len;
    uint64_t jlen = 0, lead = 0, body_end = 0;
    j = PyMem_RawMalloc(n ? n : 1);
    if (!j) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    lz_join_text(s, n, j, &jlen, &e, &marks, &lead, &body_end);
    Py_END_ALLOW_THREADS
    if (e.nomem || marks.nomem || e.len > UINT32_MAX) {
        PyErr_NoMemory();
        goto done;
    }
    blob = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(jlen + e.len + 4));
    if (!blob)
        goto done;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(blob);
    memcpy(o, j, jlen);
    if (e.len)
        memcpy(o + jlen, e.p, e.len);
    for (int b = 0; b < 4; b++)
        o[jlen + e.len + (uint64_t)b] = (unsigned char)(e.len >> (8 * b));
    const uint64_t *mk = (const uint64_t *)(void *)marks.p;
    const size_t runs = marks.len / (2 * sizeof(uint64_t));
    const Py_ssize_t k = PySequence_Fast_GET_SIZE(spans);
    mapped = PyList_New(k);
    for (Py_ssize_t t = 0; mapped && t < k; t++) {
        long long ab[2];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(spans, t), "LL;a span must be (start, end)", &ab[0], &ab[1]))
            goto done;
        if (ab[0] < (long long)lead || ab[0] > ab[1] || (uint64_t)ab[1] > body_end) {
            PyErr_Format(PyExc_ValueError, "chunk span [%lld, %lld) is not within the text's words", ab[0], ab[1]);
            goto done;
        }
        long long got[2];
        for (int h = 0; h < 2; h++) { /* the runs that end at or before it: a binary search */
            size_t lo = 0, hi = runs;
            while (lo < hi) {
                const size_t mid = (lo + hi) / 2;
                if (mk[2 * mid] <= (uint64_t)ab[h])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            got[h] = ab[h] - (long long)lead - (lo ? (long long)mk[2 * lo - 1] : 0);
        }
        PyObject *pair = Py_BuildValue("(LL)", got[0], got[1]);
        if (!pair)
            goto done;
        PyList_SET_ITEM(mapped, t, pair);
    }
    if (mapped)
        result = PyTuple_Pack(2, blob, mapped);
done:
    Py_XDECREF(blob);
    Py_XDECREF(mapped);
    Py_XDECREF(spans);
    PyMem_RawFree(j);
    PyMem_RawFree(e.p);
    PyMem_RawFree(marks.p);
    PyBuffer_Release(&data);
    return result;
}

#endif /* DRSEARCH_K_LZ_H */
