/* DGEMV: y = A x with A an n x n row-major matrix of doubles (8 n^2 bytes), rows split among the
 * threads with schedule(static). 2 n^2 flops per repetition; the traffic counted is the matrix
 * plus both vectors, 8 (n^2 + 2n) bytes. See docs/workloads.md (DGEMV). */
#include "common.h"

int main(int argc, char **argv)
{
    struct opts o = parse_opts(argc, argv, "dgemv", "matrix order: A is n x n", 4000, 10, 200000);
    const long n = o.n;
    double *a = alloc_doubles("dgemv", (size_t)n * (size_t)n);
    double *x = alloc_doubles("dgemv", (size_t)n);
    double *y = alloc_doubles("dgemv", (size_t)n);

    double t0 = now_s();
    if (o.parallel_init) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) {
            for (long j = 0; j < n; j++)
                a[i * n + j] = 1.0 / (double)(i + j + 1);
            x[i] = 1.0;
            y[i] = 0.0;
        }
    } else {
        for (long i = 0; i < n; i++) {
            for (long j = 0; j < n; j++)
                a[i * n + j] = 1.0 / (double)(i + j + 1);
            x[i] = 1.0;
            y[i] = 0.0;
        }
    }
    double init_s = now_s() - t0;

    t0 = now_s();
    double cpu0 = cpu_now_s();
    for (long r = 0; r < o.reps; r++) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) {
            double s = 0.0;
            const double *row = a + i * n;
            for (long j = 0; j < n; j++)
                s += row[j] * x[j];
            y[i] = s;
        }
    }
    double time_s = now_s() - t0, cpu_s = cpu_now_s() - cpu0;

    double checksum = 0.0;
    for (long i = 0; i < n; i++)
        checksum += y[i];
    double reps = (double)o.reps, dn = (double)n;
    print_result("dgemv", &o, init_s, time_s, cpu_s, 2.0 * dn * dn * reps, 8.0 * (dn * dn + 2.0 * dn) * reps, checksum);
    free(a);
    free(x);
    free(y);
    return 0;
}
