/* _k_rank.h: part of the drsearch.index._kernels module, included once by _kernels.c (one
 * translation unit: its static functions inline across parts). The ranking loop: exact BM25 over posting lists, block-max / MaxScore pruning, rescoring. */
#ifndef DRSEARCH_K_RANK_H
#define DRSEARCH_K_RANK_H

/* ------------------------------------------------------------------------------------------
 * The loop.
 * ------------------------------------------------------------------------------------------ */

static int
cmp_bound(const void *x, const void *y)
{
    const ByBound *a = (const ByBound *)x, *b = (const ByBound *)y;
    if (a->bound != b->bound)
        return a->bound < b->bound ? -1 : 1;
    return (a->term > b->term) - (a->term < b->term);
}

/* The first position >= p (and <= len) whose rowid is >= c (len if none): exponential then
   binary search. */
static inline Py_ssize_t
gallop(List *l, Py_ssize_t p, Py_ssize_t len, uint32_t c)
{
    if (p >= len || l_id(l, p) >= c)
        return p;
    Py_ssize_t lo = p, hi = p + 1, step = 1; /* id[lo] < c */
    while (hi < len && l_id(l, hi) < c) {
        lo = hi;
        step <<= 1;
        hi = lo + step;
    }
    if (hi > len)
        hi = len;
    while (hi - lo > 1) { /* id[lo] < c; hi == len or id[hi] >= c */
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (l_id(l, mid) < c)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* Add a list's postings [a, b) (all in [lo, hi) unless damaged) into acc, and mark them in
   the bitmap `bits` unless NULL. Returns 1 on a rowid outside the window (a list out of
   order). */
static inline int
accumulate_paged(List *l, Py_ssize_t a, Py_ssize_t b, Py_ssize_t lo, Py_ssize_t hi,
                 double *acc, uint64_t *bits);

static inline int
accumulate(List *l, Py_ssize_t a, Py_ssize_t b, Py_ssize_t lo, Py_ssize_t hi, double *acc,
           uint64_t *bits)
{
    if (l->pg)
        return accumulate_paged(l, a, b, lo, hi, acc, bits);
    const uint32_t *id = l->id;
    const double *im = l->im;
    if (bits) {
        for (Py_ssize_t p = a; p < b; p++) {
            const Py_ssize_t c = (Py_ssize_t)id[p];
            if (c < lo || c >= hi)
                return 1;
            const Py_ssize_t off = c - lo;
            acc[off] += im[p];
            bits[off >> 6] |= (uint64_t)1 << (off & 63);
        }
    } else {
        for (Py_ssize_t p = a; p < b; p++) {
            const Py_ssize_t c = (Py_ssize_t)id[p];
            if (c < lo || c >= hi)
                return 1;
            acc[c - lo] += im[p];
        }
    }
    return 0;
}

/* An impact of a run within one piece: the float64 itself (w 8) or tab[code] of a w-byte
   code (1 or 2), a code beyond the table setting *bad. w is a constant where it is inlined. */
static inline __attribute__((always_inline)) double
run_impact(const unsigned char *pm, Py_ssize_t j, const int w, const double *tab, unsigned ntab,
           int *bad)
{
    if (w == 8) {
        double v;
        memcpy(&v, pm + 8 * j, 8);
        return v;
    }
    unsigned code;
    if (w == 1) {
        code = pm[j];
    } else {
        uint16_t c16;
        memcpy(&c16, pm + 2 * j, 2);
        code = c16;
    }
    if (__builtin_expect(code >= ntab, 0)) {
        *bad = 1;
        return 0.0;
    }
    return tab[code];
}

/* accumulate() for a list in the file's pages: runs of postings whose rowids and impacts (or
   codes) each lie whole within one piece are added as from flat arrays (unaligned loads:
   memcpy); a posting whose rowid or impact straddles two pieces is gathered. One copy per
   width (w a constant), so that the inner loop holds no test of the list's layout. Returns 1
   on a rowid outside the window, or on a code beyond the table (bad_code set). */
static inline __attribute__((always_inline)) int
accumulate_paged_w(List *l, Py_ssize_t a, Py_ssize_t b, Py_ssize_t lo, Py_ssize_t hi,
                   double *acc, uint64_t *bits, const int w)
{
    Span *si = &l->sid, *sm = &l->sim;
    const double *const tab = l->tab;
    const unsigned ntab = (unsigned)l->ntab;
    int bad = 0;
    Py_ssize_t p = a;
    while (p < b) {
        if (!(p >= si->lo && p < si->hi))
            span_load(l->pg, si, l->id_at, 4, p);
        if (!(p >= sm->lo && p < sm->hi))
            span_load(l->pg, sm, l->im_at, w, p);
        if (!(p >= si->lo && p < si->hi && p >= sm->lo && p < sm->hi)) {
            const Py_ssize_t c = (Py_ssize_t)l_id(l, p); /* across two pieces */
            if (c < lo || c >= hi)
                return 1;
            const Py_ssize_t off = c - lo;
            acc[off] += l_im(l, p);
            if (l->bad_code)
                return 1;
            if (bits)
                bits[off >> 6] |= (uint64_t)1 << (off & 63);
            p++;
            continue;
        }
        Py_ssize_t e = si->hi < sm->hi ? si->hi : sm->hi;
        if (e > b)
            e = b;
        const unsigned char *pi = (const unsigned char *)(si->base + 4 * (uintptr_t)p);
        const unsigned char *pm = (const unsigned char *)(sm->base + (uintptr_t)w * (uintptr_t)p);
        const Py_ssize_t r = e - p;
        if (bits) {
            for (Py_ssize_t j = 0; j < r; j++) {
                uint32_t c32;
                memcpy(&c32, pi + 4 * j, 4);
                const double v = run_impact(pm, j, w, tab, ntab, &bad);
                const Py_ssize_t c = (Py_ssize_t)c32;
                if (c < lo || c >= hi)
                    return 1;
                const Py_ssize_t off = c - lo;
                acc[off] += v;
                bits[off >> 6] |= (uint64_t)1 << (off & 63);
            }
        } else {
            for (Py_ssize_t j = 0; j < r; j++) {
                uint32_t c32;
                memcpy(&c32, pi + 4 * j, 4);
                const double v = run_impact(pm, j, w, tab, ntab, &bad);
                const Py_ssize_t c = (Py_ssize_t)c32;
                if (c < lo || c >= hi)
                    return 1;
                acc[c - lo] += v;
            }
        }
        if (bad) {
            l->bad_code = 1;
            return 1;
        }
        p = e;
    }
    return 0;
}

static inline int
accumulate_paged(List *l, Py_ssize_t a, Py_ssize_t b, Py_ssize_t lo, Py_ssize_t hi,
                 double *acc, uint64_t *bits)
{
    switch (l->w) {
    case 1:
        return accumulate_paged_w(l, a, b, lo, hi, acc, bits, 1);
    case 2:
        return accumulate_paged_w(l, a, b, lo, hi, acc, bits, 2);
    default:
        return accumulate_paged_w(l, a, b, lo, hi, acc, bits, 8);
    }
}

/* The largest block maximum over a list's postings [a, b) (a < b): its bound without stored
   block maxima. */
static inline double
window_max(List *l, Py_ssize_t a, Py_ssize_t b, Py_ssize_t bp)
{
    double m = 0.0;
    if (l->pg) {
        if (!l->bm_at)
            return l->bound;
        Span *sb = &l->sbm;
        for (Py_ssize_t j = a / bp, e = (b - 1) / bp; j <= e; j++) {
            double x;
            if (j >= sb->lo && j < sb->hi)
                memcpy(&x, (const void *)(sb->base + 8 * (uintptr_t)j), 8);
            else
                span_read_slow(l->pg, sb, l->bm_at, 8, j, &x);
            if (x > m)
                m = x;
        }
        return m;
    }
    if (!l->bmax)
        return l->bound;
    for (Py_ssize_t j = a / bp, e = (b - 1) / bp; j <= e; j++) {
        const double x = load_f64(l->bmax + 8 * j);
        if (x > m)
            m = x;
    }
    return m;
}

/* Whether all 8 scores at p are below thr (SSE2 compares where available). */
static inline int
all_below(const double *p, double thr)
{
#if defined(__SSE2__)
    const __m128d tv = _mm_set1_pd(thr);
    const __m128d m0 = _mm_cmpge_pd(_mm_loadu_pd(p), tv);
    const __m128d m1 = _mm_cmpge_pd(_mm_loadu_pd(p + 2), tv);
    const __m128d m2 = _mm_cmpge_pd(_mm_loadu_pd(p + 4), tv);
    const __m128d m3 = _mm_cmpge_pd(_mm_loadu_pd(p + 6), tv);
    return !_mm_movemask_pd(_mm_or_pd(_mm_or_pd(m0, m1), _mm_or_pd(m2, m3)));
#else
    for (int i = 0; i < 8; i++)
        if (p[i] >= thr)
            return 0;
    return 1;
#endif
}

typedef struct {
    Py_ssize_t n_out, n_full;
    double cut;
    int bad, late;
    int64_t n_accumulated, n_rescored, n_skipped;
} Outcome;

/*
 * rank_core: every window, then the outputs. Without the GIL.
 *
 * prune = 0 (rank_blocks): every list matters in every window, windows are the buffer's
 * length, and every touched chunk's sum is exact (each term added in phrase order from 0.0).
 *
 * prune = 1 (rank_maxscore): exact dynamic pruning, MaxScore's split made twice.
 *  - Globally: terms sorted by bound; the lightest ones whose bounds add up to less than the
 *    floor are non-essential everywhere: a chunk found only in their lists scores below the
 *    floor. Windows start at the lowest rowid an essential list has left. As the floor rises
 *    (it only rises), more terms become non-essential, checked between windows.
 *  - Per window (block-max): each list present in the window gets the window's bound, the
 *    largest stored block maximum over its postings there (its bound when it has none). When
 *    those add up to less than the floor, no chunk of the window can qualify: it is skipped,
 *    its postings never read. Otherwise the split is made again with the window's bounds, so
 *    a long list whose postings here are light is only probed, not accumulated.
 *  - A touched chunk is kept when its partial sum v plus the window's non-essential bounds can
 *    reach the floor; MaxScore's check then probes the non-essential lists (largest bound
 *    first, galloping cursors: kept chunks ascend) and drops it as soon as the rest of the
 *    bounds cannot lift it; a survivor is rescored exactly, each term's impact added in
 *    phrase order from 0.0 -- the IEEE additions of rank_blocks and np.add.at, an absent
 *    term adding exactly +0.0. When no present list is non-essential, v is that exact sum.
 *    In a window with many touched chunks, probing per chunk costs more than adding the
 *    non-essential lists' postings there: then they are added too (v is a bound up to
 *    rounding, covered by the slack) and only chunks near the floor are rescored.
 *  - The first windows are short (1,024 rowids, doubling up to PRUNE_SPAN_MAX, PRUNE_SPAN_ONE
 *    for a single list), so that the
 *    heap fills and the split is made early.
 */
static inline __attribute__((always_inline)) void
rank_core(Query *q, Outcome *o, const int prune)
{
    const Py_ssize_t n = q->n, n_terms = q->n_terms, block = q->block, bp = q->bp;
    List *L = q->L;
    double *acc = q->acc;
    uint64_t *bits = q->bits;
    const uint8_t *bl = q->bl;
    Py_ssize_t *pos = q->pos, *rc = q->rc, *wa = q->wa, *wb = q->wb, *act = q->act;
    double *wmax = q->wmax, *pre = q->pre, *lpre = q->lpre;
    ByBound *ord = q->ord, *lord = q->lord;
    uint8_t *ess = q->ess, *loc = q->loc;
    Sel s = {q->heap, 0, q->k, {0.0, -1}, -1, 0.0, ANY_SCORE, q->margin, q->margin >= 0.0,
             q->cd, q->oi, q->os, 0};
    memset(o, 0, sizeof(*o));
#if HAVE_CLOCK
    const double deadline = q->budget > 0.0 ? now_s() + q->budget : 0.0;
#endif
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        ess[t] = 1;
        ord[t] = (ByBound){L[t].bound, t};
    }
    Py_ssize_t gne = 0; /* ord[0..gne) are non-essential everywhere */
    if (prune) {
        qsort(ord, (size_t)n_terms, sizeof(ByBound), cmp_bound);
        for (Py_ssize_t j = 0; j < n_terms; j++)
            pre[j + 1] = pre[j] + ord[j].bound;
    }
    const Py_ssize_t span_max = q->span_max;
    Py_ssize_t span = prune && span_max > 1024 ? 1024 : span_max;
    int since_clock = 63; /* the first window looks at the clock */
    int64_t clock_mark = 0;
    for (;;) {
        Py_ssize_t lo = n;
        for (Py_ssize_t t = 0; t < n_terms; t++)
            if (ess[t] && pos[t] < L[t].len && (Py_ssize_t)l_id(&L[t], pos[t]) < lo)
                lo = (Py_ssize_t)l_id(&L[t], pos[t]);
        if (lo >= n)
            break;
        const Py_ssize_t hi = lo + span < n ? lo + span : n;
        if (span < span_max)
            span = 2 * span < span_max ? 2 * span : span_max;
        /* The lists present in the window, in phrase order, and (pruning, once there is a
           floor to prune against) their window bounds. */
        const int ranked = prune && s.floor_ > ANY_SCORE;
        Py_ssize_t n_act = 0;
        double total = 0.0;
        for (Py_ssize_t t = 0; t < n_terms; t++) {
            const Py_ssize_t a = gallop(&L[t], pos[t], L[t].len, (uint32_t)lo);
            const Py_ssize_t b = gallop(&L[t], a, L[t].len, (uint32_t)hi);
            wa[t] = rc[t] = a;
            wb[t] = pos[t] = b; /* the window's postings are done with after it */
            if (a == b)
                continue;
            act[n_act++] = t;
            if (ranked) {
                wmax[t] = window_max(&L[t], a, b, bp);
                total += wmax[t];
            }
        }
        Py_ssize_t lne = 0; /* lord[0..lne): the window's non-essential lists */
        if (ranked) {
            if (total * (1.0 + PRUNE_SLACK) < s.floor_) { /* nothing here can reach the floor */
                o->n_skipped++;
                goto next;
            }
            /* Sort by window bound (insertion sort: a query has few lists), then split. */
            for (Py_ssize_t i = 0; i < n_act; i++) {
                const ByBound x = {wmax[act[i]], act[i]};
                Py_ssize_t j = i;
                for (; j > 0 && cmp_bound(&lord[j - 1], &x) > 0; j--)
                    lord[j] = lord[j - 1];
                lord[j] = x;
            }
            for (Py_ssize_t j = 0; j < n_act; j++)
                lpre[j + 1] = lpre[j] + lord[j].bound;
            while (lne < n_act && lpre[lne + 1] * (1.0 + PRUNE_SLACK) < s.floor_)
                lne++;
        }
        for (Py_ssize_t i = 0; i < n_act; i++)
            loc[act[i]] = 1;
        for (Py_ssize_t j = 0; j < lne; j++)
            loc[lord[j].term] = 0;
        /* What the window will add: the essential lists' postings, and the non-essential
           ones' too when probing them per touched chunk would cost more (full). */
        Py_ssize_t added = 0, ne_post = 0;
        for (Py_ssize_t i = 0; i < n_act; i++)
            if (loc[act[i]])
                added += wb[act[i]] - wa[act[i]];
        const int exact = lne == 0;
        int full = 0;
        if (!exact) {
            for (Py_ssize_t j = 0; j < lne; j++)
                ne_post += wb[lord[j].term] - wa[lord[j].term];
            full = added * (lne < 4 ? lne : 4) * 8 > ne_post;
            if (full)
                added += ne_post;
        }
        /* Few postings for the window's length: mark them in the bitmap and visit only them;
           else scan the buffer (no bitmap to keep). */
        uint64_t *const marks = added * 8 < hi - lo ? bits : NULL;
        Py_ssize_t top = 0; /* 1 + the highest offset touched (known valid once accumulated) */
        for (Py_ssize_t i = 0; i < n_act && !o->bad; i++) { /* phrase order: exact sums */
            const Py_ssize_t t = act[i];
            if (!loc[t])
                continue;
            o->bad = accumulate(&L[t], wa[t], wb[t], lo, hi, acc, marks);
            const Py_ssize_t last = (Py_ssize_t)l_id(&L[t], wb[t] - 1) - lo + 1;
            if (last > top)
                top = last;
        }
        for (Py_ssize_t j = 0; full && j < lne && !o->bad; j++) {
            const Py_ssize_t t = lord[j].term;
            o->bad = accumulate(&L[t], wa[t], wb[t], lo, hi, acc, marks);
            const Py_ssize_t last = (Py_ssize_t)l_id(&L[t], wb[t] - 1) - lo + 1;
            if (last > top)
                top = last;
        }
        if (o->bad) {
            memset(acc, 0, sizeof(double) * (size_t)block);
            memset(bits, 0, sizeof(uint64_t) * (size_t)((block + 63) / 64));
            break;
        }
        o->n_accumulated += added;
        const double ne_live = full ? 0.0 : lpre[lne]; /* what v leaves out */
        double thr = s.floor_;
        if (!exact) {
            thr = s.floor_ * (1.0 - PRUNE_SLACK) - ne_live * (1.0 + PRUNE_SLACK);
            if (!(thr > 0.0))
                thr = ANY_SCORE;
        }
        const Py_ssize_t words = (top + 63) / 64;
        /* One touched chunk with v >= thr: check and rescore it unless v is exact, select it. */
#define KEEP_CHUNK(OFF, V, EXACT)                                                                       \
    do {                                                                                          \
        const int64_t row = (int64_t)(lo + (OFF));                                               \
        double sc = (V);                                                                          \
        if (bl && bl[row])                                                                        \
            break;                                                                                \
        if (!(EXACT)) {                                                                           \
            double vv = sc;                                                                       \
            int drop = 0;                                                                         \
            for (Py_ssize_t j = full ? -1 : lne - 1; j >= 0; j--) {                               \
                const Py_ssize_t t = lord[j].term;                                                \
                const Py_ssize_t p = rc[t] = gallop(&L[t], rc[t], wb[t], (uint32_t)row);          \
                if (p < wb[t] && (int64_t)l_id(&L[t], p) == row)                                  \
                    vv += l_im(&L[t], p);                                                         \
                if ((vv + lpre[j]) * (1.0 + PRUNE_SLACK) < s.floor_) {                            \
                    drop = 1;                                                                     \
                    break;                                                                        \
                }                                                                                 \
            }                                                                                     \
            if (drop)                                                                             \
                break;                                                                            \
            o->n_rescored++;                                                                      \
            sc = 0.0;                                                                             \
            for (Py_ssize_t i = 0; i < n_act; i++) {                                              \
                const Py_ssize_t t = act[i];                                                      \
                const Py_ssize_t p = rc[t] = gallop(&L[t], rc[t], wb[t], (uint32_t)row);          \
                if (p < wb[t] && (int64_t)l_id(&L[t], p) == row)                                  \
                    sc += l_im(&L[t], p);                                                         \
            }                                                                                     \
        }                                                                                         \
        if (!(sc >= s.floor_))                                                                    \
            break;                                                                                \
        if (sel_offer(&s, row, sc)) {                                                             \
            thr = exact ? s.floor_ : s.floor_ * (1.0 - PRUNE_SLACK) - ne_live * (1.0 + PRUNE_SLACK); \
            if (!(thr > 0.0))                                                                     \
                thr = ANY_SCORE;                                                                  \
        }                                                                                         \
    } while (0)
        /* The window's selection, compiled twice: for exact sums (no check, no rescoring)
           and for partial ones. */
#define SCAN_WINDOW(EXACT)                                                                          \
        if (marks) {                                                                                \
            /* Few postings: visit the touched chunks only, in ascending order, via the bitmap. */  \
            for (Py_ssize_t w = 0; w < words; w++) {                                                \
                uint64_t word = bits[w];                                                            \
                bits[w] = 0;                                                                        \
                while (word) {                                                                      \
                    const Py_ssize_t off = 64 * w + (Py_ssize_t)__builtin_ctzll(word);              \
                    word &= word - 1;                                                               \
                    const double v = acc[off];                                                      \
                    acc[off] = 0.0;                                                                 \
                    if (v >= thr)                                                                   \
                        KEEP_CHUNK(off, v, EXACT);                                                  \
                }                                                                                   \
            }                                                                                       \
        } else {                                                                                    \
            /* Dense: compare 8 chunks at a time (SSE2), then zero the range while in cache. */     \
            for (Py_ssize_t c = 0; c < top; c += 8) {                                               \
                const Py_ssize_t e = c + 8 < top ? c + 8 : top;                                     \
                if (e - c == 8 && all_below(acc + c, thr))                                          \
                    continue;                                                                       \
                for (Py_ssize_t j = c; j < e; j++) {                                                \
                    const double v = acc[j];                                                        \
                    if (v >= thr)                                                                   \
                        KEEP_CHUNK(j, v, EXACT);                                                    \
                }                                                                                   \
            }                                                                                       \
            memset(acc, 0, sizeof(double) * (size_t)top);                                           \
        }
        if (exact) {
            SCAN_WINDOW(1)
        } else {
            SCAN_WINDOW(0)
        }
#undef SCAN_WINDOW
#undef KEEP_CHUNK
    next:
        /* The floor only rises: move terms to the non-essential side while their bounds fit. */
        while (prune && gne < n_terms && pre[gne + 1] * (1.0 + PRUNE_SLACK) < s.floor_) {
            ess[ord[gne].term] = 0;
            gne++;
        }
#if HAVE_CLOCK
        /* Windows can be tiny, and reading the clock is a system call on some machines: look
           at it every 64 windows or 256K postings. */
        if (deadline > 0.0 &&
            (++since_clock >= 64 || o->n_accumulated - clock_mark >= (1 << 18))) {
            since_clock = 0;
            clock_mark = o->n_accumulated;
            if (now_s() > deadline) {
                o->late = 1;
                break;
            }
        }
#endif
    }
    for (Py_ssize_t t = 0; t < n_terms && !o->bad && !o->late; t++)
        if (ess[t] && pos[t] != L[t].len)
            o->bad = 1; /* a rowid beyond the last chunk, out of order */
    for (Py_ssize_t t = 0; t < n_terms; t++)
        if (L[t].bad_code)
            o->bad = 2; /* a code beyond its table (read as 0.0 where it was probed) */
    if (o->bad || o->late) {
        memset(acc, 0, sizeof(double) * (size_t)block);
        return;
    }
    o->cut = sel_finish(&s);
    o->n_out = s.n_out;
    o->n_full = s.hn;
}

/* One compiled copy of the loop per entry point, prune a constant in each: with one shared
   copy, a change to the pruning path alone moved rank_blocks' speed by 4-9% (code layout);
   specialized, both got faster (benchmarks/HISTORY.md, "Window sizes"). */
static void
rank_core_blocks(Query *q, Outcome *o)
{
    rank_core(q, o, 0);
}

static void
rank_core_prune(Query *q, Outcome *o)
{
    rank_core(q, o, 1);
}

/* With a `rescore` argument: whether the candidates collected beside clamped terms settle
   the top k (Scorer._rank_native's test, the same IEEE operations): k documents scored, and
   the k-th's score above what the clamped terms can add (the margin) plus rounding. */
static int
query_settled(const Query *q, const Outcome *o)
{
    return o->n_full >= q->k && o->cut > q->margin + 2.0 * (fabs(o->cut) * 1e-9);
}


/* Whether every list's last rowid is a chunk of the buffers (< q->n), which the rank cores
   trust (a list's order they check as they go). In query_run, not query_prepare: a paged
   list's last rowid lies in the file's mapping, one cache (or page) miss a list, ~4 us of a
   query with the GIL held when read there, and none here where query_run has let it go. */
static int
query_lists_in_range(Query *q)
{
    for (Py_ssize_t t = 0; t < q->n_terms; t++) {
        List *l = &q->L[t]; /* (l_id moves a paged list's piece cursor) */
        if (l->len && (Py_ssize_t)l_id(l, l->len - 1) >= q->n)
            return 0;
    }
    return 1;
}

/* Run a prepared query, without the GIL when it has work enough (or texts, or a rescoring):
   its outcome in *op; whether the rescoring ran (the candidates settled the top k). */
static int
query_exec(Query *q, Outcome *op)
{
    Outcome o;
    memset(&o, 0, sizeof(o));
    Py_ssize_t total = 0;
    int rescored = 0;
    for (Py_ssize_t t = 0; t < q->n_terms; t++)
        total += q->L[t].len;
    if (total >= NOGIL_MIN_POSTINGS || q->texts || q->rescore) {
        NOGIL_BEGIN
        if (!query_lists_in_range(q))
            o.bad = 1;
        else if (q->prune)
            rank_core_prune(q, &o);
        else
            rank_core_blocks(q, &o);
        if (!o.bad && !o.late) {
            if (q->rescore) {
                if ((rescored = query_settled(q, &o)))
                    rescore_candidates(q->rescore, (const int64_t *)q->out_ids.buf, o.n_out,
                                       q->texts);
            } else if (q->texts) {
                texts_run_work(q->texts, (const int64_t *)q->out_ids.buf, o.n_out);
            }
        }
        NOGIL_END
    } else if (!query_lists_in_range(q)) {
        o.bad = 1;
    } else if (q->prune) {
        rank_core_prune(q, &o);
    } else {
        rank_core_blocks(q, &o);
    }
    if (q->counts.obj) {
        int64_t *c = (int64_t *)q->counts.buf;
        c[0] = o.n_accumulated;
        c[1] = o.n_rescored;
        if (q->counts.len >= 24)
            c[2] = o.n_skipped;
    }
    *op = o;
    return rescored;
}

/* Run a prepared query (query_exec); build the result tuple: (n_out, n_full, cut), plus made
   with `texts` (texts_run_made), or plus (ranked, made) with `rescore` (both None when the
   candidates did not settle the top k, or the time ran out). */
static PyObject *
query_run(Query *q)
{
    Outcome o;
    const int rescored = query_exec(q, &o);
    if (o.bad) {
        PyErr_SetString(PyExc_ValueError, o.bad == 2 ? BAD_CODE : BAD_LIST);
        return NULL;
    }
    if (o.late) {
        o.n_out = -1;
        o.n_full = 0;
        o.cut = 0.0;
    }
    if (q->rescore) {
        if (!rescored)
            return Py_BuildValue("(nndOO)", o.n_out, o.n_full, o.cut, Py_None, Py_None);
        PyObject *ranked = rescore_result(q->rescore);
        PyObject *made = !ranked ? NULL : q->texts ? texts_run_made(q->texts) : Py_NewRef(Py_None);
        if (!made) {
            Py_XDECREF(ranked);
            return NULL;
        }
        return Py_BuildValue("(nndNN)", o.n_out, o.n_full, o.cut, ranked, made);
    }
    if (!q->texts)
        return Py_BuildValue("(nnd)", o.n_out, o.n_full, o.cut);
    PyObject *made = o.late ? Py_NewRef(Py_None) : texts_run_made(q->texts);
    if (!made)
        return NULL;
    return Py_BuildValue("(nndN)", o.n_out, o.n_full, o.cut, made);
}

/* The optional `rescore` argument of rank_blocks and rank_maxscore into q (None: none). */
static int
query_rescore_arg(Query *q, PyObject *spec)
{
    if (spec == Py_None)
        return 0;
    if (q->margin < 0.0) {
        PyErr_SetString(PyExc_ValueError, "rescore: only with margin >= 0 (the candidates)");
        return -1;
    }
    q->rescore = rescore_from_spec(spec, q->k);
    return q->rescore ? 0 : -1;
}

/* The optional `texts` argument of rank_blocks and rank_maxscore into q (None: none). */
static int
query_texts(Query *q, PyObject *texts)
{
    if (texts == Py_None)
        return 0;
    if (q->margin >= 0.0 && !q->rescore) {
        PyErr_SetString(PyExc_ValueError, "texts: only with margin < 0 (the final ranking) "
                                          "or with rescore");
        return -1;
    }
    q->texts = texts_run_from_spec(texts, q->k);
    return q->texts ? 0 : -1;
}


#endif /* DRSEARCH_K_RANK_H */
