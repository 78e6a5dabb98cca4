/*
 * drsearch.index._kernels: exact BM25 ranking of sparse posting lists, in C (rank_blocks, and
 * rank_maxscore: the same results with exact dynamic pruning over per-term and per-block
 * upper bounds).
 *
 * Optional: drsearch.index.scoring falls back to numpy when this module is missing, and both
 * paths give bit-identical results (the tests compare them). The arithmetic here is the same
 * IEEE-754 double additions in the same order as numpy's np.add.at (one term after another,
 * in phrase order), and the build disables floating-point contraction, so sums are identical.
 *
 * Both release the GIL while they loop: threads of one server process rank in
 * parallel. Every rowid is bounds-checked; a damaged posting list raises ValueError rather
 * than touching memory outside the score buffer.
 *
 * Both entry points run one loop (rank_core, compiled once for each) over *windows* of chunk
 * rowids, each at most
 * the score buffer's length (an L2-sized block): a window starts at the lowest rowid a list
 * that matters has left, so ranges without postings cost nothing; every list that matters in
 * the window adds its postings there, in phrase order, into the buffer (and a bitmap of
 * touched chunks); the touched chunks are then selected against a running floor (the k-th
 * best document's score) and the buffer handed back zeroed while it is still in cache.
 * rank_blocks treats every list as mattering; rank_maxscore prunes (below).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "_pages.h"
#include "_fts5.h"

/* A call with less work than this keeps the GIL: releasing it costs nothing alone, but with a
   second thread waiting every release is a hand-off (the other thread runs, and the caller
   waits for it to give the GIL back), tens of microseconds on this machine, more than a short
   call's whole work (docs/ENGINE.md, "Threads"). Postings over all lists of a ranking call
   (about 1-3 ns each), bytes of a read_blobs call. */
#ifndef NOGIL_MIN_POSTINGS /* -D for a measurement build */
#define NOGIL_MIN_POSTINGS 16384
#endif
#ifndef RESCORE_NOGIL_MIN /* candidates x terms */
#define RESCORE_NOGIL_MIN 32
#endif
#ifndef NOGIL_MIN_BYTES
#define NOGIL_MIN_BYTES (256 << 10)
#endif

/* Every buffer here comes from the raw allocator (PyMem_Raw*: the C library's, whose threads
   get arenas of their own), never from PyMem_Malloc: CPython's small-block allocator serves
   every thread from the same pools, so a kernel's hot scratch (its top-k heap, the list
   cursors) shared cache lines with the Python objects another thread was working on, and two
   threads serving searches slowed each other (an ad-hoc per-thread timing: +22 us of kernel
   CPU and +12-27 us of Python a query with two threads; +6 and +5 us with the raw allocator;
   docs/ENGINE.md, "Threads"). It also needs no GIL. */

/* A buffer of whole `itemsize`-byte items. `aligned`: the loop reads it through a typed
   pointer, so its start must be aligned for the type (forming or reading a misaligned one is
   undefined behaviour, even where the hardware allows it); a misaligned one is refused rather
   than read. Buffers from numpy, bytes objects and the engine's arena always are. */
static int
check_buffer_as(const Py_buffer *b, Py_ssize_t itemsize, int aligned, const char *what)
{
    if (b->len % itemsize != 0) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of %zd-byte items",
                     what, b->len, itemsize);
        return -1;
    }
    if (aligned && b->len && (uintptr_t)b->buf % (uintptr_t)itemsize != 0) {
        PyErr_Format(PyExc_ValueError, "%s: not %zd-byte aligned", what, itemsize);
        return -1;
    }
    return 0;
}

static int
check_buffer(const Py_buffer *b, Py_ssize_t itemsize, const char *what)
{
    return check_buffer_as(b, itemsize, 1, what);
}

/* A float64 at p, whatever p's alignment: block maxima start at byte 12*df of a posting BLOB
   (after df impacts and df rowids), only 4-byte aligned when df is odd. memcpy is the defined
   way to read them; compilers make it one plain load where the hardware allows unaligned
   loads (x86-64, arm64), the same instruction a cast gave. */
static inline double
load_f64(const unsigned char *p)
{
    double v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The smallest positive double: a threshold that keeps every scored chunk (scores are > 0). */
#define ANY_SCORE 4.9406564584124654e-324

/* Relative slack of every pruning test: far above the rounding of any sum of positive doubles
   with fewer than 10^5 terms, so a test may keep a few chunks too many but never drops one
   that could qualify. */
#define PRUNE_SLACK 2e-10

/* The longest pruning window: short enough that a window's block maxima stay close to the
   impacts there (a 32K window of a long list spans dozens of 64-posting blocks, and their
   largest is about the list's bound), long enough that per-window work stays small. That
   work is per list (two gallops and a window bound each), so a query of several lists wants
   longer windows than a single list, whose only gain is finer skipping. Measured with
   benchmarks/kernel_ab.py on the benchmark's 1x and 4x lists (benchmarks/HISTORY.md, "Window
   sizes"): against one cap of 8,192, 16,384 ran whole queries 3-5% faster at k = 10 and a
   single list 10-18% slower, 4,096 the reverse; hence a cap per list count. */
#ifndef PRUNE_SPAN_MAX
#define PRUNE_SPAN_MAX 16384
#endif
/* The longest pruning window of a call over a single list. */
#ifndef PRUNE_SPAN_ONE
#define PRUNE_SPAN_ONE 4096
#endif

#if defined(__unix__) || defined(__APPLE__)
#include <time.h>
static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#define HAVE_CLOCK 1
#else
#define HAVE_CLOCK 0
#endif

/* The GIL's account of this thread (gil_stats): how long the kernel worked without the GIL,
   how long it then waited to take it back (another thread held it), and how many times it
   let it go. A complete search lets the GIL go about once, so on a thread serving searches
   the rest of its time is the GIL held: the serial part that bounds how threads scale (the
   benchmark's threads mode), measured where it happens rather than inferred from q/s on a
   machine whose speed drifts. Thread-local: two threads never write the same line. */
#if defined(_MSC_VER)
#define THREAD_LOCAL __declspec(thread)
#else
#define THREAD_LOCAL _Thread_local
#endif
static THREAD_LOCAL int64_t gil_free_ns, gil_wait_ns, gil_releases;

static inline int64_t
gil_clock_ns(void)
{
#if HAVE_CLOCK
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
#else
    return 0;
#endif
}

/* Taking the GIL back, polling first. A thread that finds the GIL held sleeps in CPython until
   it is handed over: on this kind of VM the wake-up alone (an idle vCPU woken by an
   interrupt) costs tens of microseconds, often more than the rest of the other thread's
   Python stretch it waited for, and the scheduler may then run the sleeper on the other core,
   where its scratch (the L2-sized score buffer) is cold. So a kernel thread coming back from
   its GIL-free work polls the GIL's lock word (_gil.c: CPython's internal state, read only)
   for up to `gil_spin_ns` while it is held, and takes it once it is free, without sleeping.
   One thread polls at a time (`gil_spinner`), and only while a core is left for it: the
   GIL's holder and this process's threads in the kernel's GIL-free work (`gil_working`) take
   one each, so with more such threads than cores nobody polls and no kernel work waits for a
   core a poller holds. (Not counted: threads working without the GIL elsewhere, in SQLite,
   numpy or I/O; other processes; a cgroup's CPU quota: the cores are sched_getaffinity's, read
   at import.) A poll costs at most the bound a release, even when the holder stays in
   Python. The others, and a wait past the bound, sleep in CPython as before. Where _gil.c
   does not know CPython's layout there is no poll. gil_spin() reads and sets the bound
   (0: never poll; the HTTP server's processes, whose event loop holds the GIL between requests,
   never do). */
#if HAVE_CLOCK && !defined(_MSC_VER) && !defined(__STDC_NO_ATOMICS__)
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h> /* sched_getaffinity (Python.h defines _GNU_SOURCE) */
#endif
#include "_gil.h"
#define HAVE_GIL_SPIN 1
static const _Atomic int *gil_word;   /* the GIL's lock word, or NULL: set at import */
static atomic_int gil_spinner;        /* a thread is polling */
static atomic_int gil_working;        /* threads between NOGIL_BEGIN and NOGIL_END */
static int gil_cores;                 /* cores this process may run on (at import) */
static _Atomic(int64_t) gil_spin_ns = 200000;
/* The longest bound: a poller does not ask the GIL's holder to let it go (CPython's forced
   switch comes only to a thread waiting in CPython, after its switch interval, 5 ms), so a
   long bound lets a thread in pure Python keep the GIL that much longer. */
#define GIL_SPIN_MAX_NS 100000000

static inline void
gil_pause(void)
{
#if defined(__SSE2__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* Before taking the GIL back (t1: now): poll while it is held, at most gil_spin_ns. */
static inline void
gil_spin(int64_t t1)
{
    const _Atomic int *w = gil_word;
    if (!w || !atomic_load_explicit(w, memory_order_relaxed))
        return;
    const int64_t bound = atomic_load_explicit(&gil_spin_ns, memory_order_relaxed);
    if (bound <= 0 || atomic_load_explicit(&gil_working, memory_order_relaxed) + 2 > gil_cores)
        return; /* no core to spare: sleep in CPython */
    int idle = 0;
    if (!atomic_compare_exchange_strong(&gil_spinner, &idle, 1))
        return; /* another thread polls */
    for (unsigned i = 1; atomic_load_explicit(w, memory_order_relaxed); i++) {
        gil_pause();
        if (i % 64 == 0 && gil_clock_ns() - t1 > bound)
            break;
    }
    atomic_store(&gil_spinner, 0);
}

/* A forked child has one thread: none polling, none working (the parent's may have been). */
static void
gil_after_fork(void)
{
    atomic_store(&gil_spinner, 0);
    atomic_store(&gil_working, 0);
}

/* At import, with the GIL held: the lock word must say so, or its address is not trusted. */
static void
gil_spin_init(void)
{
    pthread_atfork(NULL, NULL, gil_after_fork);
    const _Atomic int *w = (const _Atomic int *)drs_gil_word();
    gil_word = w && atomic_load(w) == 1 ? w : NULL;
    gil_cores = 1;
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        gil_cores = CPU_COUNT(&set);
#elif defined(_SC_NPROCESSORS_ONLN)
    gil_cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
}

static inline void
gil_work_begins(void)
{
    atomic_fetch_add_explicit(&gil_working, 1, memory_order_relaxed);
}

static inline void
gil_work_ends(void)
{
    atomic_fetch_sub_explicit(&gil_working, 1, memory_order_relaxed);
}
#else
#define HAVE_GIL_SPIN 0
static inline void gil_spin(int64_t t1) { (void)t1; }
static inline void gil_spin_init(void) {}
static inline void gil_work_begins(void) {}
static inline void gil_work_ends(void) {}
#endif

/* Letting the GIL go and taking it back, accounted: the work between them, then the wait in
   taking it back (three clock reads, ~60 ns a release), polling first (gil_spin). Every
   release in this file goes through these two (the NOGIL_ macros, or rescore's conditional
   release directly). */
typedef struct {
    PyThreadState *save; /* NULL: the GIL was kept */
    int64_t t0;
} GilRelease;

static inline GilRelease
gil_release(void)
{
    GilRelease g;
    g.t0 = gil_clock_ns();
    g.save = PyEval_SaveThread();
    gil_work_begins();
    return g;
}

static inline void
gil_retake(GilRelease g)
{
    const int64_t t1 = gil_clock_ns();
    gil_work_ends();
    gil_spin(t1);
    PyEval_RestoreThread(g.save);
    gil_free_ns += t1 - g.t0;
    gil_wait_ns += gil_clock_ns() - t1;
    gil_releases++;
}

#define NOGIL_BEGIN                                                                              \
    {                                                                                            \
        const GilRelease gil_r_ = gil_release();
#define NOGIL_END                                                                                \
        gil_retake(gil_r_);                                                                      \
    }

/* ------------------------------------------------------------------------------------------
 * Selection: each document's best chunk, and a size-k heap of the best documents.
 * ------------------------------------------------------------------------------------------ */

#define TOPK_INDEX Py_ssize_t
#include "_topk.h"

/* The running selection. Chunks are offered in ascending rowid order and a document's chunks
   are consecutive rowids, so its best chunk is found in passing; a chunk below `floor_` can
   be neither its document's best nor in the answer (nor, with margin >= 0, a candidate), and
   is never offered. */
typedef struct {
    Best *heap;
    Py_ssize_t hn, k;
    Best cur;
    int32_t cur_doc;
    double theta, floor_, margin;
    int collect_all; /* margin >= 0: also write every offered chunk */
    const int32_t *cd;
    int64_t *oi;
    double *os;
    Py_ssize_t n_out;
} Sel;

/* Offer a chunk scoring s >= floor_ (not blocked). Returns 1 when the floor rose. */
static inline int
sel_offer(Sel *q, int64_t row, double s)
{
    int rose = 0;
    const int32_t d = q->cd[row];
    if (d != q->cur_doc) {
        if (q->cur_doc >= 0) {
            heap_offer(q->heap, &q->hn, q->k, q->cur);
            if (q->hn == q->k && q->heap[0].score > q->theta) {
                const double theta = q->theta = q->heap[0].score;
                q->floor_ = q->collect_all ? theta - q->margin - 2.0 * (fabs(theta) * 1e-9) : theta;
                if (!(q->floor_ > 0.0))
                    q->floor_ = ANY_SCORE;
                rose = 1;
            }
        }
        q->cur_doc = d;
        q->cur = (Best){s, row};
    } else if (s > q->cur.score) {
        q->cur = (Best){s, row};
    }
    if (q->collect_all) {
        q->oi[q->n_out] = row;
        q->os[q->n_out] = s;
        q->n_out++;
    }
    return rose;
}

/* The outputs, once every chunk is offered: the k best documents' best chunks, best first
   (collect_all: the offered chunks within margin of the cut, ascending). Returns the cut. */
static double
sel_finish(Sel *q)
{
    double cut = 0.0;
    if (q->cur_doc >= 0)
        heap_offer(q->heap, &q->hn, q->k, q->cur);
    if (!q->collect_all) {
        qsort(q->heap, (size_t)q->hn, sizeof(Best), cmp_best);
        for (Py_ssize_t i = 0; i < q->hn; i++) {
            q->oi[i] = q->heap[i].chunk;
            q->os[i] = q->heap[i].score;
        }
        q->n_out = q->hn;
        if (q->hn == q->k)
            cut = q->heap[q->hn - 1].score;
    } else if (q->hn == q->k) {
        cut = q->heap[0].score;
        const double t2 = cut - q->margin - 2.0 * (fabs(cut) * 1e-9);
        Py_ssize_t w = 0;
        for (Py_ssize_t i = 0; i < q->n_out; i++)
            if (q->os[i] >= t2) {
                q->oi[w] = q->oi[i];
                q->os[w] = q->os[i];
                w++;
            }
        q->n_out = w;
    } else {
        q->n_out = 0;
    }
    return cut;
}

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
    Span sid, sim, sbm;   /* paged: the pieces of rowids, impacts and block maxima last read */
} List;

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

static double
l_im_slow(List *l, Py_ssize_t p)
{
    double v;
    span_read_slow(l->pg, &l->sim, 0, 8, p, &v);
    return v;
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
        double v;
        memcpy(&v, (const void *)(l->sim.base + 8 * (uintptr_t)p), 8);
        return v;
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

/* Check the parsed arguments, acquire the lists and allocate the scratch. -1 with an
   exception set on error (query_release still releases what was acquired). */
/* A List over a posting BLOB left in `file`'s pages, from blob_pieces' table `tb`. The table
   is checked against the file (every piece within it, the pieces adding up to the BLOB's
   length) and the length against df: 12 bytes a posting, then nothing or (with_bmax) exactly
   its ceil(df / bp) block maxima. -1 with ValueError otherwise. */
/* A BLOB left in `file`'s pages, from blob_pieces' table `tb`: the table checked against the
   file (every piece within it, the pieces adding up to the BLOB's length). -1 with ValueError
   otherwise. */
static int
paged_blob(Paged *g, const Py_buffer *file, const Py_buffer *tb)
{
    if (check_buffer(tb, 8, "pieces"))
        return -1;
    const int64_t *pc = (const int64_t *)tb->buf;
    const Py_ssize_t n_pieces = tb->len / 8 - 3;
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

/* A List over a posting BLOB left in `file`'s pages (paged_blob), whose length is checked
   against df: 12 bytes a posting, then nothing or (with_bmax) exactly its ceil(df / bp) block
   maxima. -1 with ValueError otherwise. */
static int
paged_init(Paged *g, List *l, const Py_buffer *file, const Py_buffer *tb, Py_ssize_t df,
           int with_bmax, Py_ssize_t bp)
{
    if (paged_blob(g, file, tb) < 0)
        return -1;
    if (df < 0) {
        PyErr_SetString(PyExc_ValueError, "pieces: not a table of a BLOB within the file");
        return -1;
    }
    const int64_t len = g->len;
    const int64_t extra = len - 12 * (int64_t)df, nb = extra / 8;
    if (extra < 0 || extra % 8 || (with_bmax && nb && nb != ((int64_t)df + bp - 1) / bp)) {
        PyErr_SetString(PyExc_ValueError,
                        "a paged list's BLOB is not 12 bytes a posting and its block maxima");
        return -1;
    }
    memset(l, 0, sizeof(*l));
    l->pg = g;
    l->len = df;
    l->id_at = 8 * (int64_t)df;
    l->bm_at = with_bmax && nb ? 12 * (int64_t)df : 0;
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

/* Term t's list as two buffers, its rowids and impacts. -1 with an exception set otherwise. */
static int
list_flat(Query *q, Py_ssize_t t)
{
    List *l = &q->L[t];
    Py_buffer *ib = &q->tb[q->n_tb];
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(q->ids_fast, t), ib, PyBUF_SIMPLE) < 0)
        return -1;
    q->n_tb++;
    Py_buffer *mb = &q->tb[q->n_tb];
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(q->imps_fast, t), mb, PyBUF_SIMPLE) < 0)
        return -1;
    q->n_tb++;
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

/* What every query needs beside its lists (q->n_terms, q->k and q->prune set, the buffers
   docs, buf, out_ids and out_scores acquired): the blocked buffer, the checks of the shared
   buffers' lengths, the window size and the scratch, one entry per term. -1 with an exception
   set otherwise (query_release still releases what was acquired). */
static int
query_alloc(Query *q, PyObject *blocked_obj, Py_ssize_t n_rows)
{
    const Py_ssize_t n_terms = q->n_terms;
    if (blocked_obj != Py_None && PyObject_GetBuffer(blocked_obj, &q->blocked, PyBUF_SIMPLE) < 0)
        return -1;
    const Py_ssize_t n = q->n = n_rows + 1;
    if (n_rows < 0 || q->k < 1) {
        PyErr_SetString(PyExc_ValueError, "n_rows must be >= 0 and k >= 1");
        return -1;
    }
    if (check_buffer(&q->docs, 4, "chunk_doc") || check_buffer(&q->buf, 8, "buf") ||
        check_buffer(&q->out_ids, 8, "out_chunks") || check_buffer(&q->out_scores, 8, "out_scores"))
        return -1;
    if (q->docs.len / 4 < n || q->out_ids.len / 8 < n || q->out_scores.len / 8 < n ||
        (q->blocked.obj && q->blocked.len < n) || q->buf.len < 8 * 64) {
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

/* accumulate() for a list in the file's pages: runs of postings whose rowids and impacts each
   lie whole within one piece are added as from flat arrays (unaligned loads: memcpy); a
   posting whose rowid or impact straddles two pieces is gathered. */
static inline int
accumulate_paged(List *l, Py_ssize_t a, Py_ssize_t b, Py_ssize_t lo, Py_ssize_t hi,
                 double *acc, uint64_t *bits)
{
    Span *si = &l->sid, *sm = &l->sim;
    Py_ssize_t p = a;
    while (p < b) {
        if (!(p >= si->lo && p < si->hi))
            span_load(l->pg, si, l->id_at, 4, p);
        if (!(p >= sm->lo && p < sm->hi))
            span_load(l->pg, sm, 0, 8, p);
        if (!(p >= si->lo && p < si->hi && p >= sm->lo && p < sm->hi)) {
            const Py_ssize_t c = (Py_ssize_t)l_id(l, p); /* across two pieces */
            if (c < lo || c >= hi)
                return 1;
            const Py_ssize_t off = c - lo;
            acc[off] += l_im(l, p);
            if (bits)
                bits[off >> 6] |= (uint64_t)1 << (off & 63);
            p++;
            continue;
        }
        Py_ssize_t e = si->hi < sm->hi ? si->hi : sm->hi;
        if (e > b)
            e = b;
        const unsigned char *pi = (const unsigned char *)(si->base + 4 * (uintptr_t)p);
        const unsigned char *pm = (const unsigned char *)(sm->base + 8 * (uintptr_t)p);
        const Py_ssize_t r = e - p;
        if (bits) {
            for (Py_ssize_t j = 0; j < r; j++) {
                uint32_t c32;
                double v;
                memcpy(&c32, pi + 4 * j, 4);
                memcpy(&v, pm + 8 * j, 8);
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
                double v;
                memcpy(&c32, pi + 4 * j, 4);
                memcpy(&v, pm + 8 * j, 8);
                const Py_ssize_t c = (Py_ssize_t)c32;
                if (c < lo || c >= hi)
                    return 1;
                acc[c - lo] += v;
            }
        }
        p = e;
    }
    return 0;
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
        PyErr_SetString(PyExc_ValueError, BAD_LIST);
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
"Every piece is checked to lie within file and the pieces to add up to 12*df bytes (+ 8 per\n"
"block maximum): a ValueError otherwise.\n"
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
    out = PyList_New(hn);
    for (Py_ssize_t i = 0; out && i < hn; i++) {
        PyObject *pair = Py_BuildValue("(Ld)", (long long)heap[i].chunk, heap[i].score);
        if (!pair)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, pair);
    }
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
    /* out */
    unsigned char *copy, *decoded; /* PyMem_Raw buffers, freed by the caller */
    SnipSpan *spans;
    PageError why;                 /* a damaged page while copying text `failed` */
    Py_ssize_t failed;
    Py_ssize_t bad_utf8;           /* the first text that is not UTF-8, -1 for none */
    int nomem, late;
} TextWork;

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
    if (!db_geometry_ok(file, page_size, usable, root, column)) {
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
    if (!r->vals || !r->ids || !r->w.parts || !r->w.spans) {
        PyErr_NoMemory();
        goto fail;
    }
    r->w.db = &r->db;
    r->w.vals = r->vals;
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

static PyObject *
join_words(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *text, *spans_obj, *spans = NULL, *result = NULL;
    Py_ssize_t *bounds = NULL;
    Py_UCS4 *maxes = NULL;
    if (!PyArg_ParseTuple(args, "UO:join_words", &text, &spans_obj))
        return NULL;
    spans = PySequence_Fast(spans_obj, "spans must be a sequence");
    if (!spans)
        return NULL;
    const Py_ssize_t n_words = text_words(text, &bounds, &maxes);
    if (n_words < 0)
        goto done;
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t n_spans = PySequence_Fast_GET_SIZE(spans);
    result = PyList_New(n_spans);
    if (!result)
        goto done;
    for (Py_ssize_t k = 0; k < n_spans; k++) {
        Py_ssize_t ws, we;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(spans, k), "nn;a span must be (start, end)", &ws, &we))
            goto fail;
        if (ws < 0 || we < ws || we > n_words) {
            PyErr_Format(PyExc_ValueError, "join_words: span (%zd, %zd) is not within the text's %zd words",
                         ws, we, n_words);
            goto fail;
        }
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
    PyMem_RawFree(bounds);
    PyMem_RawFree(maxes);
    Py_XDECREF(spans);
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

/* An attribute of a term object as a Py_ssize_t or a double; -1 with an exception set. */
static int
term_ssize(PyObject *t, PyObject *name, Py_ssize_t *out)
{
    PyObject *v = PyObject_GetAttr(t, name);
    if (!v)
        return -1;
    *out = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int
term_double(PyObject *t, PyObject *name, double *out)
{
    PyObject *v = PyObject_GetAttr(t, name);
    if (!v)
        return -1;
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
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

/* Term t of a search_hits query (a PagedTerm or a SparseTerm: `paged` says which) into q->L[t]
   (and q->G[t]), as rank_maxscore and rank_blocks take a term's arguments. */
static int
search_term(Query *q, Py_ssize_t t, PyObject *term, int paged)
{
    List *l = &q->L[t];
    if (paged) {
        Py_ssize_t df;
        if (term_ssize(term, S_df, &df) < 0 || term_buffer(q, term, S_pieces) < 0 ||
            paged_init(&q->G[t], l, &q->file, &q->tb[q->n_tb - 1], df, q->prune && q->bp > 0,
                       q->bp) < 0)
            return -1;
    } else {
        if (term_buffer(q, term, S_chunks) < 0 || term_buffer(q, term, S_impacts) < 0)
            return -1;
        const Py_buffer *ib = &q->tb[q->n_tb - 2], *mb = &q->tb[q->n_tb - 1];
        if (check_buffer(ib, 4, "chunks") || check_buffer(mb, 8, "impacts"))
            return -1;
        l->id = (const uint32_t *)ib->buf;
        l->im = (const double *)mb->buf;
        l->len = ib->len / 4;
        if (l->len != mb->len / 8) {
            PyErr_SetString(PyExc_ValueError, "a term has different numbers of chunks and impacts");
            return -1;
        }
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
        if (term_double(term, S_max_impact, &l->bound) < 0)
            return -1;
        if (!(l->bound >= 0.0)) {
            PyErr_SetString(PyExc_ValueError, "a term's bound is negative or NaN");
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(search_hits_doc,
"search_hits(context, terms, stems, k, time_budget, deadline[, rescore, margin])\n"
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
"Raises ValueError as rank_maxscore and make_hits do.");

static PyObject *
search_hits(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ctx, *terms_obj, *pairs, *blocked, *file_obj, *hits, *type, *paged_type, *sparse_type;
    PyObject *resc = Py_None, *terms = NULL, *stems = NULL, *weights = NULL, *result = NULL, *made = NULL;
    Py_ssize_t k, n_rows, bp, pruning, prune_all_k, prune_all_rows, page_size, usable, root, column,
        width;
    double budget, deadline, idf_floor, margin = -1.0;
    Query q;
    memset(&q, 0, sizeof(q));
    Py_buffer tfile = {0};
    if (!PyArg_ParseTuple(args, "O!OOndd|Od:search_hits", &PyTuple_Type, &ctx, &terms_obj, &pairs,
                          &k, &budget, &deadline, &resc, &margin))
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
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *term = PySequence_Fast_GET_ITEM(terms, t);
        if (Py_TYPE(term) != (PyTypeObject *)paged_type && Py_TYPE(term) != (PyTypeObject *)sparse_type) {
            result = Py_NewRef(Py_NotImplemented);
            goto done;
        }
        Py_ssize_t df;
        if (term_ssize(term, S_df, &df) < 0)
            goto done;
        total += df;
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
    if (query_alloc(&q, blocked, n_rows) < 0)
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
        if (search_term(&q, t, term, Py_TYPE(term) == (PyTypeObject *)paged_type) < 0)
            goto done;
    }
    query_bind(&q);
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
    const int rescored = query_exec(&q, &o);
    if (o.bad) {
        PyErr_SetString(PyExc_ValueError, BAD_LIST);
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
    Py_XDECREF(made);
    Py_XDECREF(stems);
    Py_XDECREF(weights);
    Py_XDECREF(terms);
    query_release(&q);
    return result;
}

static PyMethodDef methods[] = {
    {"gil_stats", gil_stats, METH_NOARGS, gil_stats_doc},
    {"gil_spin", gil_spin_bound, METH_VARARGS, gil_spin_doc},
    {"fts5_doclists", fts5_doclists, METH_VARARGS, fts5_doclists_doc},
    {"word_count", word_count, METH_VARARGS, word_count_doc},
    {"join_words", join_words, METH_VARARGS, join_words_doc},
    {"snippet_chars", snippet_chars, METH_VARARGS, snippet_chars_doc},
    {"snippets", snippets, METH_VARARGS, snippets_doc},
    {"texts_snippets", texts_snippets, METH_VARARGS, texts_snippets_doc},
    {"make_hits", make_hits, METH_VARARGS, make_hits_doc},
    {"rank_one", rank_one, METH_VARARGS, rank_one_doc},
    {"paged_pick", paged_pick, METH_VARARGS, paged_pick_doc},
    {"rescore", rescore, METH_VARARGS, rescore_doc},
    {"read_blobs", read_blobs, METH_VARARGS, read_blobs_doc},
    {"blob_pieces", blob_pieces, METH_VARARGS, blob_pieces_doc},
    {"read_texts", read_texts, METH_VARARGS, read_texts_doc},
    {"find_rows", find_rows, METH_VARARGS, find_rows_doc},
    {"rank_maxscore", rank_maxscore, METH_VARARGS, rank_maxscore_doc},
    {"rank_blocks", rank_blocks, METH_VARARGS, rank_blocks_doc},
    {"search_hits", search_hits, METH_VARARGS, search_hits_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "Exact BM25 ranking in C (optional; numpy is the fallback).", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* The interface version drsearch.index.scoring checks (KERNEL_ABI there): 2 = rank_maxscore
   takes block maxima; 3 = read_blobs, make_hits and
   rank_one; 4 = snippets, read_texts and find_rows; 5 = fts5_doclists (the build's postings), word_count and
   join_words (its chunk texts); 6 = blob_pieces and make_hits' pieces (the document fields
   read from the file's pages); 7 = rank_blocks' and rank_maxscore's `paged` and paged_pick
   (posting lists ranked where they lie in the file's pages); 8 = texts_snippets (a complete
   search's texts and snippets in one call without the GIL; make_hits' texts and snippets;
   rescore, the exact rescoring beside clamped terms); 9 = the `texts` argument of rank_blocks,
   rank_maxscore and rescore (the texts and snippets made in the ranking's call); 10 = their
   `rescore` argument (the rescoring beside clamped terms in the ranking's call); 11 = the
   `texts` argument's optional `hits` (make_hits' buffers, read in the ranking's call); 12 =
   gil_stats (each thread's time without the GIL, and waiting to take it back); 13 = gil_spin
   (a thread back from its GIL-free work polls the GIL before it sleeps); 14 = search_hits (a
   complete search's ranking, texts, snippet plan and hits in one call).
   A module built from an older _kernels.c is refused, not called wrongly. */
#define KERNELS_ABI 14

PyMODINIT_FUNC
PyInit__kernels(void)
{
    if (snip_tables_init() < 0) { /* a Unicode database where a Latin-1 lower case is not */
        PyErr_SetString(PyExc_ImportError, "_kernels: a Latin-1 character's lower case is not "
                                           "Latin-1 in this Python's Unicode tables");
        return NULL;
    }
    if (!ELLIPSIS && !(ELLIPSIS = PyUnicode_FromString("\xe2\x80\xa6")))
        return NULL;
    /* the term attributes search_hits reads */
    PyObject **names[] = {&S_df, &S_pieces, &S_chunks, &S_impacts, &S_block_max, &S_max_impact};
    const char *spelt[] = {"df", "pieces", "chunks", "impacts", "block_max", "max_impact"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!*names[i] && !(*names[i] = PyUnicode_InternFromString(spelt[i])))
            return NULL;
    gil_spin_init();
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "ABI", KERNELS_ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
