/* alloc3d: an n x n x n grid of doubles (8 n^3 bytes), allocated either as NPB 2.3-omp-C's MG
 * allocates v (NPB2.3-omp-C MG/mg.c: main: one malloc for the n plane pointers, then per plane
 * one malloc of n row pointers and one malloc per row of n doubles, all by the master thread:
 * --layout rows), the same with each thread allocating the planes it later writes (its own arena:
 * --layout rows-parallel) or as one malloc of the whole grid (--layout block), then first-written in
 * parallel (omp parallel for schedule(static) over the outer index) and summed --reps times.
 * Where the pages land is the point (docs/allocation.md §3.5): glibc writes each chunk's header
 * when the master mallocs it, so small rows are placed by the master, one block by the loop.
 * Options: those of common.h (--init is ignored: the grid is always written in parallel) and
 * --layout rows|rows-parallel|block. */
#include "common.h"

enum layout { ROWS, ROWS_PARALLEL, BLOCK };

/* --layout taken out of argv; the rest goes to parse_opts. */
static enum layout take_layout(int *argc, char **argv)
{
    enum layout layout = ROWS;
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        if (!strncmp(argv[i], "--layout=", 9)) {
            v = argv[i] + 9;
        } else if (!strcmp(argv[i], "--layout") && i + 1 < *argc) {
            v = argv[++i];
        } else {
            argv[out++] = argv[i];
            continue;
        }
        if (!strcmp(v, "rows")) {
            layout = ROWS;
        } else if (!strcmp(v, "rows-parallel")) {
            layout = ROWS_PARALLEL;
        } else if (!strcmp(v, "block")) {
            layout = BLOCK;
        } else {
            fprintf(stderr, "alloc3d: --layout must be rows, rows-parallel or block, got '%s'\n", v);
            exit(2);
        }
    }
    *argc = out;
    return layout;
}

static void *must(void *p, size_t bytes)
{
    if (!p) {
        fprintf(stderr, "alloc3d: cannot allocate %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    (void)alloc_doubles; /* common.h's page-aligned allocator is what this kernel avoids */
    enum layout layout = take_layout(&argc, argv);
    int rows = layout != BLOCK;
    struct opts o = parse_opts(argc, argv, "alloc3d", "grid edge: the grid is n x n x n doubles", 128, 10, 1024);
    const long n = o.n;
    const size_t row = (size_t)n * sizeof(double);
    double ***g = NULL;
    double *block = NULL;

    double t0 = now_s();
    if (rows) {
        g = must(malloc((size_t)n * sizeof(double **)), (size_t)n * sizeof(double **));
        /* rows-parallel: the same static split of planes as the loop that writes them. */
#pragma omp parallel for schedule(static) if (layout == ROWS_PARALLEL)
        for (long k = 0; k < n; k++) {
            g[k] = must(malloc((size_t)n * sizeof(double *)), (size_t)n * sizeof(double *));
            for (long j = 0; j < n; j++)
                g[k][j] = must(malloc(row), row);
        }
    } else {
        block = must(malloc(row * (size_t)n * (size_t)n), row * (size_t)n * (size_t)n);
    }
#pragma omp parallel for schedule(static)
    for (long k = 0; k < n; k++)
        for (long j = 0; j < n; j++) {
            double *r = rows ? g[k][j] : block + (k * n + j) * n;
            for (long i = 0; i < n; i++)
                r[i] = (double)(k + j + i);
        }
    double init_s = now_s() - t0;

    /* Reading keeps every page where the first write put it and the process alive for the
     * sampler. */
    double checksum = 0.0;
    t0 = now_s();
    double cpu0 = cpu_now_s();
    for (long rep = 0; rep < o.reps; rep++) {
#pragma omp parallel for schedule(static) reduction(+ : checksum)
        for (long k = 0; k < n; k++)
            for (long j = 0; j < n; j++) {
                const double *r = rows ? g[k][j] : block + (k * n + j) * n;
                for (long i = 0; i < n; i++)
                    checksum += r[i];
            }
    }
    double time_s = now_s() - t0, cpu_s = cpu_now_s() - cpu0;

    double cells = (double)n * (double)n * (double)n;
    o.parallel_init = 1;
    static const char *names[] = {"alloc3d-rows", "alloc3d-rows-parallel", "alloc3d-block"};
    print_result(names[layout], &o, init_s, time_s, cpu_s, cells * (double)o.reps,
                 8.0 * cells * (double)o.reps, checksum);
    return 0;
}
