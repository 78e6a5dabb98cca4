/* format_probe.py's C loops (loaded with ctypes; not part of drsearch): one scoring pass over
 * a query's posting lists in several layouts, to measure what a smaller posting format buys.
 *
 *   mode 0: today's layout, a float64 impact per posting (8 + 4 bytes with the uint32 rowid);
 *   mode 1: a uint16 tf per posting (2 + 4 bytes), the impact computed as the build computes it,
 *           idf * ((tf * k1p1) / (tf + norm[row])), from the term's idf and a per-chunk norm
 *           array (float64, in memory);
 *   mode 2: the same with a uint8 tf (1 + 4 bytes);
 *   mode 3: mode 1 computed 256 postings at a time into a small buffer (a loop the compiler
 *           can vectorize), then added;
 *   mode 4: a uint16 tf, the impact as idf * g where g = (tf * k1p1) / (tf + norm) is looked up
 *           in a table by (chunk length D, tf) for tf < n_tab (norm depends on D only, and the
 *           table holds the same expression's bits), computed for a larger tf;
 *   mode 5: NOT exact, a cost probe only: mode 1's loads (tf, norm[row]) with the division
 *           left out, w * (tf + norm[row]): what the division costs, what the norm load costs;
 *   mode 6: NOT exact, a cost probe only: w * v with v a uint16 per posting and no per-chunk
 *           load (the tfs stand in for v): the cost of a first pass over quantized impacts;
 *   mode 7: NOT exact, a cost probe only: mode 6 with the rowids block-coded too, each block of
 *           128 postings a uint32 base plus a uint16 offset per posting (a block whose offsets do
 *           not fit keeps its uint32 rowids): about 4 bytes per posting in all.
 *
 * The pass mirrors rank_blocks' structure without its selection tricks: windows of `block`
 * rowids, each starting at the lowest rowid a list has left; every list adds its postings in
 * the window, term after term in query order, into `buf` (so each chunk's sum is built in the
 * same IEEE additions as the kernel's); the window is then scanned, each document's best chunk
 * (highest score, lowest rowid) offered to a size-k heap, and `buf` zeroed. Compiled with
 * -ffp-contract=off: no fused multiply-add, so the computed impacts are the build's bits. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Mode 7's list: vals[t] points to one of these. */
typedef struct {
    const uint32_t *base; /* per block of 128: its first rowid */
    const uint16_t *off;  /* per posting: rowid - its block's base (blocks that fit) */
    const uint8_t *fit;   /* per block: 1 if its offsets fit a uint16, else read id[] */
    const uint16_t *v;    /* per posting: the (stand-in) quantized impact */
} Coded;

#define TOPK_INDEX int64_t
#include "_topk.h" /* src/drsearch/index/: the kernel's top-k heap */

#define ADD_LOOP(VALUE)                                                                        \
    for (; p < len && (c = id[p]) < hi; p++)                                                   \
        buf[c - lo] += (VALUE);

/* The k best documents' best chunks, best first, into out_rows/out_scores; returns how many
   (select 0: the postings are accumulated only, nothing selected; returns 0).
   buf: `block` zeros (handed back zeroed); pos: n_terms int64 scratch; heap: k Best. */
int64_t
probe_rank(int mode, int64_t n_terms, const uint32_t *const *ids, const void *const *vals,
           const int64_t *lens, const double *idf, const double *norm, double k1p1,
           const int32_t *chunk_doc, int64_t k, double *buf, int64_t block, int64_t *pos,
           Best *heap, int64_t *out_rows, double *out_scores, const uint16_t *dlen,
           const double *gtab, int64_t n_tab, int select)
{
    double tmp[256];
    int64_t n_heap = 0;
    int32_t cur_doc = -1;
    Best cur = {0.0, 0};
    for (int64_t t = 0; t < n_terms; t++)
        pos[t] = 0;
    for (;;) {
        uint32_t lo = UINT32_MAX;
        for (int64_t t = 0; t < n_terms; t++)
            if (pos[t] < lens[t] && ids[t][pos[t]] < lo)
                lo = ids[t][pos[t]];
        if (lo == UINT32_MAX)
            break;
        const uint64_t hi = (uint64_t)lo + (uint64_t)block;
        uint64_t top = 0;
        for (int64_t t = 0; t < n_terms; t++) {
            const uint32_t *id = ids[t];
            const int64_t len = lens[t];
            int64_t p = pos[t];
            uint64_t c = 0;
            if (mode == 0) {
                const double *im = vals[t];
                ADD_LOOP(im[p])
            } else if (mode == 1) {
                const uint16_t *tf = vals[t];
                const double w = idf[t];
                ADD_LOOP(w * (((double)tf[p] * k1p1) / ((double)tf[p] + norm[c])))
            } else if (mode == 2) {
                const uint8_t *tf = vals[t];
                const double w = idf[t];
                ADD_LOOP(w * (((double)tf[p] * k1p1) / ((double)tf[p] + norm[c])))
            } else if (mode == 3) {
                const uint16_t *tf = vals[t];
                const double w = idf[t];
                while (p < len && id[p] < hi) {
                    int64_t e = p + 256 < len ? p + 256 : len;
                    if (id[e - 1] >= hi) {
                        int64_t j = p;
                        while (j < e && id[j] < hi)
                            j++;
                        e = j;
                    }
                    const int64_t m = e - p;
                    const uint32_t *ip = id + p;
                    const uint16_t *tp = tf + p;
                    for (int64_t j = 0; j < m; j++) {
                        const double x = (double)tp[j];
                        tmp[j] = w * ((x * k1p1) / (x + norm[ip[j]]));
                    }
                    for (int64_t j = 0; j < m; j++)
                        buf[ip[j] - lo] += tmp[j];
                    p = e;
                }
            } else if (mode == 5) {
                const uint16_t *tf = vals[t];
                const double w = idf[t];
                ADD_LOOP(w * ((double)tf[p] + norm[c]))
            } else if (mode == 6) {
                const uint16_t *v = vals[t];
                const double w = idf[t];
                ADD_LOOP(w * (double)v[p])
            } else if (mode == 7) {
                const Coded *cl = vals[t];
                const double w = idf[t];
                while (p < len) { /* block by block: a tight loop over each block's offsets */
                    const int64_t blk = p >> 7;
                    const int64_t end = (blk + 1) << 7 < len ? (blk + 1) << 7 : len;
                    const uint64_t b0 = cl->base[blk];
                    const int coded = cl->fit[blk];
                    for (; p < end; p++) {
                        c = coded ? b0 + cl->off[p] : id[p];
                        if (c >= hi)
                            goto window_done;
                        buf[c - lo] += w * (double)cl->v[p];
                    }
                }
            window_done:;
            } else {
                const uint16_t *tf = vals[t];
                const double w = idf[t];
                for (; p < len && (c = id[p]) < hi; p++) {
                    const uint16_t f = tf[p];
                    const double g = f < n_tab ? gtab[(int64_t)dlen[c] * n_tab + f]
                                               : ((double)f * k1p1) / ((double)f + norm[c]);
                    buf[c - lo] += w * g;
                }
            }
            if (p > pos[t] && id[p - 1] - lo + 1 > top)
                top = id[p - 1] - lo + 1;
            pos[t] = p;
        }
        if (!select) { /* accumulation alone: the scores are dropped, the window zeroed */
            memset(buf, 0, top * sizeof(double));
            continue;
        }
        for (uint64_t off = 0; off < top; off++) {
            const double s = buf[off];
            if (s == 0.0) /* untouched: every impact is > 0 (idf >= 1e-6, tf >= 1) */
                continue;
            buf[off] = 0.0;
            if (n_heap == k && s < heap[0].score) /* below the k-th document so far: exact skip */
                continue;
            const int64_t row = (int64_t)(lo + off);
            const int32_t d = chunk_doc[row];
            if (d != cur_doc) {
                if (cur_doc >= 0)
                    heap_offer(heap, &n_heap, k, cur);
                cur_doc = d;
                cur.score = s;
                cur.chunk = row;
            } else if (s > cur.score) {
                cur.score = s;
                cur.chunk = row;
            }
        }
    }
    if (cur_doc >= 0)
        heap_offer(heap, &n_heap, k, cur);
    qsort(heap, (size_t)n_heap, sizeof(Best), cmp_best);
    for (int64_t i = 0; i < n_heap; i++) {
        out_rows[i] = heap[i].chunk;
        out_scores[i] = heap[i].score;
    }
    return n_heap;
}

/* How many postings' impact, recomputed from tf as mode 1 does, differs in any bit from the
   stored one. */
int64_t
probe_verify(int64_t n, const uint32_t *id, const uint16_t *tf, const double *stored, double idf,
             const double *norm, double k1p1)
{
    int64_t bad = 0;
    for (int64_t p = 0; p < n; p++) {
        const double x = idf * (((double)tf[p] * k1p1) / ((double)tf[p] + norm[id[p]]));
        bad += memcmp(&x, &stored[p], sizeof x) != 0;
    }
    return bad;
}

/* The copy a posting read is, from a buffer in memory. */
void
probe_copy(void *dst, const void *src, int64_t n)
{
    memcpy(dst, src, (size_t)n);
}
