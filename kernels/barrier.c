/* Barrier-heavy loop: one parallel region in which every thread updates its static share of an
 * array of n doubles, then waits at the barrier that ends each `omp for`, reps times. The work
 * between two barriers is short (n / threads elements), so the run is mostly threads arriving at,
 * spinning or sleeping in (OMP_WAIT_POLICY, libgomp's spin count) and leaving barriers: the case
 * the scheduler checks of `numalab vm check` measure (thread migrations, time away from the first
 * node; docs/scheduler.md). 2 flops per element and step; traffic counted as one read and one
 * write of the array per step, 16 n bytes. */
#include "common.h"

int main(int argc, char **argv)
{
    struct opts o = parse_opts(argc, argv, "barrier", "array length in doubles (split among the threads)", 1048576,
                               1000, 1L << 32);
    const long n = o.n;
    double *a = alloc_doubles("barrier", (size_t)n);

    double t0 = now_s();
    if (o.parallel_init) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            a[i] = (double)(i % 7);
    } else {
        for (long i = 0; i < n; i++)
            a[i] = (double)(i % 7);
    }
    double init_s = now_s() - t0;

    t0 = now_s();
    double cpu0 = cpu_now_s();
#pragma omp parallel
    for (long r = 0; r < o.reps; r++) {
        /* the implicit barrier at the end of each `omp for` is the barrier of the step */
#pragma omp for schedule(static)
        for (long i = 0; i < n; i++)
            a[i] = 0.5 * a[i] + 1.0;
    }
    double time_s = now_s() - t0, cpu_s = cpu_now_s() - cpu0;

    double checksum = 0.0;
    for (long i = 0; i < n; i += 1 + n / 4096)
        checksum += a[i];
    double reps = (double)o.reps, dn = (double)n;
    print_result("barrier", &o, init_s, time_s, cpu_s, 2.0 * dn * reps, 16.0 * dn * reps, checksum);
    free(a);
    return 0;
}
