/* A core's instruction window (reorder buffer entries), for `numalab calibrate`, as Henry Wong's
 * 2013 test measures it ("Measuring Reorder Buffer Capacity", blog.stuffedcow.net/2013/05): two
 * independent dependent pointer chases over a buffer larger than the last-level cache, N `nop`s
 * after each load. While the first chase's load waits for memory it cannot retire, and the
 * instructions after it fill the window; the second chase's load overlaps the first's miss only
 * if it fits in the window beside it, so a pair of loads takes one memory latency up to N + 1
 * about the window's size and two beyond it. The knee is found from the printed times
 * (python/numalab/calibrate/figures.py). One thread, no OpenMP; x86-64 only (the loop is
 * machine code written at run time, so any N can be swept).
 *
 *   --size-mib N   buffer size in MiB (default 256); larger than the last-level cache
 *   --pairs N      load pairs timed per nop count (default 4096)
 *   --max-nops N   the largest nop count (default 1024); swept from 0 in steps of --step
 *   --step N       nop count step (default 8)
 *   --reps N       sweeps (default 3), each one sample of the knee
 *
 * The buffer is one random cyclic permutation of 64-byte lines (Sattolo's algorithm, as
 * kernels/chase.c), on 2 MiB pages where THP grants them (madvise(MADV_HUGEPAGE): page walks
 * would add their own misses); the two chases start half the cycle apart.
 *
 * Prints one JSON line: kernel, size_bytes, pairs, nops (the counts swept), reps, init_s,
 * ns_per_pair and cpu_ns_per_pair (one list per sweep, one time per nop count: wall and CPU
 * time), checksum. Bad options: usage on stderr, exit 2. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "lines.h"
#include "options.h"
#include "timing.h"

#define MAX_REPS 100
#define MAX_NOPS 8192

static void usage(const char *why)
{
    usage_exit("window", why, "usage: window [--size-mib N] [--pairs N] [--max-nops N] [--step N] [--reps N]\n"
                              "prints one JSON line: kernel, size_bytes, pairs, nops, reps, init_s, ns_per_pair (one list per\n"
                              "sweep), cpu_ns_per_pair, checksum\n");
}

/* long loop(struct line **p, long pairs): p[0] and p[1] advanced `pairs` times each, returned in
 * place. Machine code: C cannot place N nops between two loads, and a compiler may move them. */
typedef void (*loop_fn)(struct line **p, long pairs);

static size_t put(unsigned char *code, size_t at, const unsigned char *bytes, size_t n)
{
    memcpy(code + at, bytes, n);
    return at + n;
}

/* The System V arguments: rdi = p, rsi = pairs.
 *     mov  (%rdi), %rax     ; first chase
 *     mov  8(%rdi), %rdx    ; second chase
 *   top:
 *     mov  (%rax), %rax     ; load 1
 *     nop x N
 *     mov  (%rdx), %rdx     ; load 2, independent of load 1
 *     nop x N
 *     dec  %rsi
 *     jnz  top
 *     mov  %rax, (%rdi)
 *     mov  %rdx, 8(%rdi)
 *     ret */
static size_t emit(unsigned char *code, long nops)
{
    static const unsigned char head[] = {0x48, 0x8b, 0x07, 0x48, 0x8b, 0x57, 0x08};
    static const unsigned char load1[] = {0x48, 0x8b, 0x00};
    static const unsigned char load2[] = {0x48, 0x8b, 0x12};
    static const unsigned char dec[] = {0x48, 0xff, 0xce};
    static const unsigned char tail[] = {0x48, 0x89, 0x07, 0x48, 0x89, 0x57, 0x08, 0xc3};
    size_t at = put(code, 0, head, sizeof head);
    size_t top = at;
    at = put(code, at, load1, sizeof load1);
    memset(code + at, 0x90, (size_t)nops), at += (size_t)nops;
    at = put(code, at, load2, sizeof load2);
    memset(code + at, 0x90, (size_t)nops), at += (size_t)nops;
    at = put(code, at, dec, sizeof dec);
    int32_t rel = (int32_t)((long)top - (long)(at + 6)); /* jnz rel32, relative to the next instruction */
    code[at++] = 0x0f;
    code[at++] = 0x85;
    memcpy(code + at, &rel, 4), at += 4;
    return put(code, at, tail, sizeof tail);
}

int main(int argc, char **argv)
{
    long size_mib = 256, pairs = 4096, max_nops = 1024, step = 8, reps = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            usage(NULL);
        else if (!strcmp(a, "--size-mib"))
            size_mib = whole_number(a, v, 1, 1L << 22, usage), i++;
        else if (!strcmp(a, "--pairs"))
            pairs = whole_number(a, v, 1, 1L << 40, usage), i++;
        else if (!strcmp(a, "--max-nops"))
            max_nops = whole_number(a, v, 0, MAX_NOPS, usage), i++;
        else if (!strcmp(a, "--step"))
            step = whole_number(a, v, 1, MAX_NOPS, usage), i++;
        else if (!strcmp(a, "--reps"))
            reps = whole_number(a, v, 1, MAX_REPS, usage), i++;
        else
            unknown_option(a, usage);
    }
#if !defined(__x86_64__)
    fprintf(stderr, "window: the timed loop is x86-64 machine code; this build is for another architecture\n");
    return 1;
#endif
    const long points = max_nops / step + 1;
    const size_t bytes = (size_t)size_mib << 20;
    const size_t lines = bytes / LINE;
    if (lines < 2) {
        fprintf(stderr, "window: the buffer must hold at least two lines\n");
        return 1;
    }
    const size_t code_bytes = 64 + 2 * (size_t)max_nops;
    unsigned char *code = mmap(NULL, code_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *raw = mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double *wall = malloc((size_t)(points * reps) * sizeof *wall);
    double *cpu = malloc((size_t)(points * reps) * sizeof *cpu);
    uint32_t *order = malloc(lines * sizeof *order);
    if (code == MAP_FAILED || raw == MAP_FAILED || !wall || !cpu || !order) {
        fprintf(stderr, "window: cannot allocate %zu bytes: %s\n", bytes, strerror(errno));
        return 1;
    }
    struct line *buf = (struct line *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (madvise(buf, bytes, MADV_HUGEPAGE) != 0)
        fprintf(stderr, "window: madvise(MADV_HUGEPAGE): %s; 4 KiB pages\n", strerror(errno));

    double t0 = now_s();
    link_random_cycle(buf, order, lines, 0x9E3779B97F4A7C15ULL | 1);
    struct line *p[2] = {&buf[order[0]], &buf[order[lines / 2]]};
    free(order);
    double init_s = now_s() - t0;

    for (long r = 0; r < reps; r++)
        for (long k = 0; k < points; k++) {
            long nops = k * step;
            if (mprotect(code, code_bytes, PROT_READ | PROT_WRITE) != 0) {
                fprintf(stderr, "window: mprotect: %s\n", strerror(errno));
                return 1;
            }
            emit(code, nops);
            if (mprotect(code, code_bytes, PROT_READ | PROT_EXEC) != 0) {
                fprintf(stderr, "window: cannot make the loop executable (mprotect PROT_EXEC): %s\n", strerror(errno));
                return 1;
            }
            loop_fn loop = (loop_fn)(uintptr_t)code;
            loop(p, pairs / 16 + 1); /* warm-up: the new code into the instruction caches */
            double s = now_s(), c = cpu_now_s();
            loop(p, pairs);
            cpu[r * points + k] = (cpu_now_s() - c) * 1e9 / (double)pairs;
            wall[r * points + k] = (now_s() - s) * 1e9 / (double)pairs;
        }

    printf("{\"kernel\":\"window\",\"size_bytes\":%zu,\"pairs\":%ld,\"reps\":%ld,\"init_s\":%.6f,\"nops\":[", bytes, pairs,
           reps, init_s);
    for (long k = 0; k < points; k++)
        printf("%s%ld", k ? "," : "", k * step);
    const char *names[2] = {"ns_per_pair", "cpu_ns_per_pair"};
    double *tables[2] = {wall, cpu};
    for (int t = 0; t < 2; t++) {
        printf("],\"%s\":[", names[t]);
        for (long r = 0; r < reps; r++) {
            printf("%s[", r ? "," : "");
            for (long k = 0; k < points; k++)
                printf("%s%.3f", k ? "," : "", tables[t][r * points + k]);
            printf("]");
        }
    }
    /* The chases' positions depend on every load: printing them keeps the loads from being removed. */
    printf("],\"checksum\":%zu}\n", (size_t)(p[0] - buf) + (size_t)(p[1] - buf));
    munmap(code, code_bytes);
    munmap(raw, bytes + HUGE);
    free(wall);
    free(cpu);
    return 0;
}
