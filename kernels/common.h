/* Shared option parsing, timing and output of the numalab kernels (dgemv, stream, stencil, barrier).
 *
 * Every kernel takes the same options and prints exactly one JSON line on stdout:
 *   --n N               problem size (each kernel says what N counts)
 *   --reps N            timed repetitions of the kernel loop
 *   --threads N         OpenMP threads (default: OMP_NUM_THREADS or the CPUs available)
 *   --init serial|parallel
 *                       who first-writes the arrays: the master thread alone (every page lands
 *                       on its node) or each thread the part it later computes (schedule(static),
 *                       the same split as the kernel loop), see docs/allocation.md on first touch
 * Bad options print the usage on stderr and exit with status 2.
 */
#ifndef NUMALAB_KERNELS_COMMON_H
#define NUMALAB_KERNELS_COMMON_H

#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

struct opts {
    long n;
    long reps;
    int threads;
    int parallel_init;
};

static void usage(const char *kernel, const char *n_means, long n, long reps, const char *why)
{
    if (why)
        fprintf(stderr, "%s: %s\n", kernel, why);
    fprintf(stderr,
            "usage: %s [--n N] [--reps N] [--threads N] [--init serial|parallel]\n"
            "  --n N        %s (default %ld)\n"
            "  --reps N     timed repetitions (default %ld)\n"
            "  --threads N  OpenMP threads (default: OMP_NUM_THREADS or all CPUs)\n"
            "  --init M     serial: the master thread first-writes every array;\n"
            "               parallel: each thread first-writes what it computes (default)\n"
            "prints one JSON line: kernel, n, reps, threads, init, init_s, time_s, cpu_s, gflops, gbps, checksum\n",
            kernel, n_means, n, reps);
    exit(2);
}

/* A whole number in [lo, hi], or usage and exit 2. */
static long number(const char *kernel, const char *n_means, long n, long reps, const char *opt, const char *s,
                   long lo, long hi)
{
    char *end;
    char msg[256];
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        snprintf(msg, sizeof msg, "%s must be a whole number in %ld..%ld, got '%s'", opt, lo, hi, s);
        usage(kernel, n_means, n, reps, msg);
    }
    return v;
}

static struct opts parse_opts(int argc, char **argv, const char *kernel, const char *n_means, long n_default,
                              long reps_default, long n_max)
{
    struct opts o = {n_default, reps_default, omp_get_max_threads(), 1};
    char msg[256];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        const char *name = a;
        char buf[64];
        const char *eq = strchr(a, '=');
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(kernel, n_means, n_default, reps_default, NULL);
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(msg, sizeof msg, "unexpected argument '%s'", a);
            usage(kernel, n_means, n_default, reps_default, msg);
        }
        if (eq) {
            size_t len = (size_t)(eq - a) < sizeof buf - 1 ? (size_t)(eq - a) : sizeof buf - 1;
            memcpy(buf, a, len);
            buf[len] = 0;
            name = buf;
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            snprintf(msg, sizeof msg, "%s needs a value", a);
            usage(kernel, n_means, n_default, reps_default, msg);
        }
        if (!strcmp(name, "--n")) {
            o.n = number(kernel, n_means, n_default, reps_default, "--n", val, 1, n_max);
        } else if (!strcmp(name, "--reps")) {
            o.reps = number(kernel, n_means, n_default, reps_default, "--reps", val, 1, 1000000);
        } else if (!strcmp(name, "--threads")) {
            o.threads = (int)number(kernel, n_means, n_default, reps_default, "--threads", val, 1, 4096);
        } else if (!strcmp(name, "--init")) {
            if (!strcmp(val, "serial")) {
                o.parallel_init = 0;
            } else if (!strcmp(val, "parallel")) {
                o.parallel_init = 1;
            } else {
                snprintf(msg, sizeof msg, "--init must be serial or parallel, got '%s'", val);
                usage(kernel, n_means, n_default, reps_default, msg);
            }
        } else {
            snprintf(msg, sizeof msg, "unknown option '%s'", name);
            usage(kernel, n_means, n_default, reps_default, msg);
        }
    }
    omp_set_num_threads(o.threads);
    return o;
}

/* Page-aligned memory, not touched: placement happens at the first write, in the init loop. */
static double *alloc_doubles(const char *kernel, size_t count)
{
    size_t bytes = count * sizeof(double);
    size_t rounded = (bytes + 4095) / 4096 * 4096;
    double *p = aligned_alloc(4096, rounded ? rounded : 4096);
    if (!p) {
        fprintf(stderr, "%s: cannot allocate %zu bytes\n", kernel, bytes);
        exit(1);
    }
    return p;
}

/* time_s and cpu_s: wall and CPU time (cpu_now_s) of the timed loop. */
static void print_result(const char *kernel, const struct opts *o, double init_s, double time_s, double cpu_s,
                         double flops, double bytes, double checksum)
{
    printf("{\"kernel\":\"%s\",\"n\":%ld,\"reps\":%ld,\"threads\":%d,\"init\":\"%s\",\"init_s\":%.6f,"
           "\"time_s\":%.6f,\"cpu_s\":%.6f,\"gflops\":%.4f,\"gbps\":%.4f,\"checksum\":%.10e}\n",
           kernel, o->n, o->reps, o->threads, o->parallel_init ? "parallel" : "serial", init_s, time_s, cpu_s,
           time_s > 0 ? flops / time_s * 1e-9 : 0.0, time_s > 0 ? bytes / time_s * 1e-9 : 0.0, checksum);
}

#endif
