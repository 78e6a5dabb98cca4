/* vcpu_probe.py's probe: the round trip of one cache line between two threads pinned to two
   CPUs, each waiting for the other's write before writing back. What a line written by one
   core and then by the other costs: the price, on every query, of the reference counts and
   the interpreter state that two threads of one Python process both write. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

static _Atomic int turn __attribute__((aligned(64)));
static _Atomic int gave_up; /* the asking thread did not start: the answering one stops */
static long trips;
static int cpu_b;

static void
pin(int cpu)
{
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
#else
    (void)cpu;
#endif
}

static void *
answer(void *arg)
{
    (void)arg;
    pin(cpu_b);
    for (long i = 0; i < trips; i++) {
        while (atomic_load_explicit(&turn, memory_order_acquire) != 1)
            if (atomic_load_explicit(&gave_up, memory_order_relaxed))
                return 0;
        atomic_store_explicit(&turn, 0, memory_order_release);
    }
    return 0;
}

static int cpu_a;
static double result_ns;

static void *
ask(void *arg)
{
    (void)arg;
    pin(cpu_a);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < trips; i++) {
        atomic_store_explicit(&turn, 1, memory_order_release);
        while (atomic_load_explicit(&turn, memory_order_acquire) != 0)
            ;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    result_ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)trips;
    return 0;
}

/* Nanoseconds a round trip over n trips between CPUs a and b, both sides on threads of their
   own (the caller's own CPU affinity is left as it was); -1.0 if a thread cannot start. */
double
round_trip_ns(int a, int b, long n)
{
    pthread_t ta, tb;
    trips = n;
    cpu_a = a;
    cpu_b = b;
    atomic_store(&turn, 0);
    atomic_store(&gave_up, 0);
    if (pthread_create(&tb, 0, answer, 0) != 0)
        return -1.0;
    if (pthread_create(&ta, 0, ask, 0) != 0) {
        atomic_store(&gave_up, 1);
        pthread_join(tb, 0);
        return -1.0;
    }
    pthread_join(ta, 0);
    pthread_join(tb, 0);
    return result_ns;
}
