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
            ;
        atomic_store_explicit(&turn, 0, memory_order_release);
    }
    return 0;
}

/* Nanoseconds a round trip over n trips between CPUs a and b; -1.0 if the thread cannot start. */
double
round_trip_ns(int a, int b, long n)
{
    pthread_t t;
    trips = n;
    cpu_b = b;
    atomic_store(&turn, 0);
    pin(a);
    if (pthread_create(&t, 0, answer, 0) != 0)
        return -1.0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        atomic_store_explicit(&turn, 1, memory_order_release);
        while (atomic_load_explicit(&turn, memory_order_acquire) != 0)
            ;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(t, 0);
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)n;
}
