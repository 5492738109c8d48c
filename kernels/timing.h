/* The clocks every numalab kernel reads: wall time and the process's CPU time. */
#ifndef NUMALAB_KERNELS_TIMING_H
#define NUMALAB_KERNELS_TIMING_H

#include <time.h>

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU time of every thread of the process so far: the scheduler's runtime accounting, precise to
 * the ns (not sampled at ticks). Over a timed loop, cpu_s / threads is about the loop's time on an
 * otherwise idle machine (waiting OpenMP threads spin first, libgomp's GOMP_SPINCOUNT) while the
 * wall time also counts the time other programs held the CPUs: the two apart say the host was
 * busy. For a one-thread kernel (chase, clock) it is that thread's own time. */
static inline double cpu_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif
