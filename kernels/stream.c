/* STREAM triad: a[i] = b[i] + q * c[i] over arrays of n doubles, split with schedule(static), as
 * in McCalpin's stream.c. 2 flops and 24 bytes (two reads, one write) per element per repetition,
 * STREAM's counting (no write-allocate traffic). See docs/workloads.md (STREAM). */
#include "common.h"

int main(int argc, char **argv)
{
    struct opts o = parse_opts(argc, argv, "stream", "elements per array (three arrays of doubles)", 10000000, 10,
                               4000000000L);
    const long n = o.n;
    const double q = 3.0;
    double *a = alloc_doubles("stream", (size_t)n);
    double *b = alloc_doubles("stream", (size_t)n);
    double *c = alloc_doubles("stream", (size_t)n);

    double t0 = now_s();
    if (o.parallel_init) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) {
            a[i] = 1.0;
            b[i] = 2.0;
            c[i] = 0.5;
        }
    } else {
        for (long i = 0; i < n; i++) {
            a[i] = 1.0;
            b[i] = 2.0;
            c[i] = 0.5;
        }
    }
    double init_s = now_s() - t0;

    t0 = now_s();
    for (long r = 0; r < o.reps; r++) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            a[i] = b[i] + q * c[i];
        /* Keep the repetitions dependent so none can be skipped. */
        b[r % n] += 1e-9;
    }
    double time_s = now_s() - t0;

    double checksum = 0.0;
    for (long i = 0; i < n; i += 1 + n / 1024)
        checksum += a[i];
    double reps = (double)o.reps, dn = (double)n;
    print_result("stream", &o, init_s, time_s, 2.0 * dn * reps, 24.0 * dn * reps, checksum);
    free(a);
    free(b);
    free(c);
    return 0;
}
