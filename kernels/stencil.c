/* 3-D 7-point Jacobi stencil on an n x n x n grid of doubles, two grids swapped each repetition:
 * b = c0 a + c1 (six neighbours), interior points only, planes split with schedule(static).
 * 8 flops per interior point; traffic counted as one read of a and one write of b, 16 bytes per
 * point (neighbours come from cache). See docs/workloads.md. */
#include "common.h"

#define IDX(i, j, k) (((size_t)(i) * (size_t)n + (size_t)(j)) * (size_t)n + (size_t)(k))

int main(int argc, char **argv)
{
    struct opts o = parse_opts(argc, argv, "stencil", "grid points per dimension (n^3 points, two grids)", 256, 10,
                               4000);
    const long n = o.n;
    const double c0 = 0.4, c1 = 0.1;
    size_t points = (size_t)n * (size_t)n * (size_t)n;
    double *a = alloc_doubles("stencil", points);
    double *b = alloc_doubles("stencil", points);

    double t0 = now_s();
    if (o.parallel_init) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            for (long j = 0; j < n; j++)
                for (long k = 0; k < n; k++) {
                    a[IDX(i, j, k)] = (double)((i + j + k) % 7);
                    b[IDX(i, j, k)] = 0.0;
                }
    } else {
        for (long i = 0; i < n; i++)
            for (long j = 0; j < n; j++)
                for (long k = 0; k < n; k++) {
                    a[IDX(i, j, k)] = (double)((i + j + k) % 7);
                    b[IDX(i, j, k)] = 0.0;
                }
    }
    double init_s = now_s() - t0;

    t0 = now_s();
    double cpu0 = cpu_now_s();
    for (long r = 0; r < o.reps; r++) {
#pragma omp parallel for schedule(static)
        for (long i = 1; i < n - 1; i++)
            for (long j = 1; j < n - 1; j++)
                for (long k = 1; k < n - 1; k++)
                    b[IDX(i, j, k)] = c0 * a[IDX(i, j, k)] +
                                      c1 * (a[IDX(i - 1, j, k)] + a[IDX(i + 1, j, k)] + a[IDX(i, j - 1, k)] +
                                            a[IDX(i, j + 1, k)] + a[IDX(i, j, k - 1)] + a[IDX(i, j, k + 1)]);
        double *t = a;
        a = b;
        b = t;
    }
    double time_s = now_s() - t0, cpu_s = cpu_now_s() - cpu0;

    double checksum = 0.0;
    for (size_t p = 0; p < points; p += 1 + points / 4096)
        checksum += a[p];
    double interior = n > 2 ? (double)(n - 2) * (double)(n - 2) * (double)(n - 2) : 0.0;
    double reps = (double)o.reps;
    print_result("stencil", &o, init_s, time_s, cpu_s, 8.0 * interior * reps, 16.0 * interior * reps, checksum);
    free(a);
    free(b);
    return 0;
}
