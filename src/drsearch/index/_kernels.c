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
#ifdef DRS_ZLIB /* setup.py: where zlib's header and library are found (span texts, _k_texts.h) */
#include <zlib.h>
#endif

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

/* The kept entries h[0..n), in that order, as the list of (chunk, score) tuples the ranking
   entry points return; NULL with the exception set. (_topk.h stays free of Python.h.) */
static PyObject *
best_pairs(const Best *h, Py_ssize_t n)
{
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *pair = Py_BuildValue("(Ld)", (long long)h[i].chunk, h[i].score);
        if (!pair)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, pair);
    }
    return out;
}

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

#include "_k_query.h"
#include "_k_rank.h"
#include "_k_entry.h"
#include "_k_snippet.h"
#include "_k_lz.h"
#include "_k_texts.h"
#include "_k_hits.h"
#include "_k_dense.h"
#include "_k_quant.h"

static PyMethodDef methods[] = {
    {"gil_stats", gil_stats, METH_NOARGS, gil_stats_doc},
    {"lz_join", lz_join, METH_VARARGS, lz_join_doc},
    {"lz_pack", lz_pack, METH_VARARGS, lz_pack_doc},
    {"lz_unpack", lz_unpack, METH_VARARGS, lz_unpack_doc},
    {"gil_spin", gil_spin_bound, METH_VARARGS, gil_spin_doc},
    {"fts5_doclists", fts5_doclists, METH_VARARGS, fts5_doclists_doc},
    {"word_count", word_count, METH_VARARGS, word_count_doc},
    {"join_words", join_words, METH_VARARGS, join_words_doc},
    {"word_byte_spans", word_byte_spans, METH_VARARGS, word_byte_spans_doc},
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
    {"rank_quant", rank_quant, METH_VARARGS, rank_quant_doc},
    {"search_hits", search_hits, METH_VARARGS, search_hits_doc},
    {"dense_scores", dense_scores, METH_VARARGS, dense_scores_doc},
    {"dense_isa", dense_isa, METH_NOARGS, dense_isa_doc},
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
   complete search's ranking, texts, snippet plan and hits in one call); 15 = dense_scores and
   dense_isa (the dense retriever's exact int8 inner products); 16 = rank_quant (exact
   ranking traversed over 8-bit quantised impacts); 17 = span texts (a text column argument
   that names schema version 4's chunk spans: the texts cut from the documents' zlib text,
   SPAN_TEXTS 1 where zlib was found at build time; drlz texts, _k_lz.h, always), word_byte_spans
   (the build's spans), lz_pack and lz_unpack (the drlz codec), lz_join (a document text's
   words joined, and its other whitespace, for drlz); 18 = search_hits without texts (stems
   None: the ranked path's hits, one short list in one pass); 19 = coded posting lists (schema
   5: a paged list's `pieces` may carry its code width and table of distinct impacts).
   A module built from an older _kernels.c is refused, not called wrongly. */
#define KERNELS_ABI 19

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
#ifdef DRS_ZLIB
    const long span_texts = 1;
#else
    const long span_texts = 0;
#endif
    if (m && (PyModule_AddIntConstant(m, "ABI", KERNELS_ABI) < 0 ||
              PyModule_AddIntConstant(m, "SPAN_TEXTS", span_texts) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
