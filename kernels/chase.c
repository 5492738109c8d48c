/* Dependent pointer chase: idle memory latency, as lmbench's lat_mem_rd and Intel MLC's idle latency
 * measure it. The buffer is an array of 64-byte lines; each line holds a pointer to the next line
 * of one random cycle through all of them (Sattolo's algorithm), so every load depends on the one
 * before and the hardware prefetchers cannot guess the next address. One thread, no OpenMP.
 *
 *   --size-mib N    buffer size in MiB (default 256); larger than the last-level cache to measure memory
 *   --loads N       dependent loads per timed repetition (default: one per line, the whole cycle)
 *   --reps N        timed repetitions (default 3), each continuing the cycle where the last stopped
 *   --hugepages     madvise(MADV_HUGEPAGE) the buffer (2 MiB transparent huge pages, few TLB misses;
 *                   granted only where THP is "always" or "madvise"); without it,
 *                   madvise(MADV_NOHUGEPAGE): 4 KiB pages even when THP is "always"
 *   --seed N        seed of the permutation (default 1): the same seed gives the same cycle
 *
 * Prints one JSON line: kernel, size_bytes, lines, hugepages, anon_huge_kib (the process's
 * AnonHugePages after the buffer is written: whether huge pages were granted), loads, reps,
 * init_s, ns_per_load (one per repetition, wall time), cpu_ns_per_load (the same on CPU time),
 * checksum. Bad options: usage on stderr, exit 2. */
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

#define MAX_REPS 1000

static void usage(const char *why)
{
    usage_exit("chase", why, "usage: chase [--size-mib N] [--loads N] [--reps N] [--hugepages] [--seed N]\n"
                             "prints one JSON line: kernel, size_bytes, lines, hugepages, anon_huge_kib, loads, reps,\n"
                             "init_s, ns_per_load (one per repetition), cpu_ns_per_load, checksum\n");
}

/* AnonHugePages of this process in KiB (proc/self/smaps_rollup), -1 when unreadable. */
static long anon_huge_kib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char row[256];
    long kib = -1;
    if (!f)
        return -1;
    while (fgets(row, sizeof row, f))
        if (sscanf(row, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    long size_mib = 256, loads = 0, reps = 3, seed = 1;
    int huge = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            usage(NULL);
        else if (!strcmp(a, "--hugepages"))
            huge = 1;
        else if (!strcmp(a, "--size-mib"))
            size_mib = whole_number(a, v, 1, 1L << 22, usage), i++;
        else if (!strcmp(a, "--loads"))
            loads = whole_number(a, v, 1, 1L << 40, usage), i++;
        else if (!strcmp(a, "--reps"))
            reps = whole_number(a, v, 1, MAX_REPS, usage), i++;
        else if (!strcmp(a, "--seed"))
            seed = whole_number(a, v, 1, 1L << 62, usage), i++;
        else
            unknown_option(a, usage);
    }
    const size_t bytes = (size_t)size_mib << 20;
    const size_t lines = bytes / LINE;
    if (!loads)
        loads = (long)lines;

    /* 2 MiB-aligned, so a huge page can back every part of the buffer. */
    char *raw = mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        fprintf(stderr, "chase: cannot map %zu bytes: %s\n", bytes, strerror(errno));
        return 1;
    }
    struct line *buf = (struct line *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    /* A kernel without THP refuses both (EINVAL): the buffer is then on 4 KiB pages, which
     * anon_huge_kib = 0 in the output says. */
    if (madvise(buf, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0 && huge)
        fprintf(stderr, "chase: madvise(MADV_HUGEPAGE): %s; 4 KiB pages\n", strerror(errno));

    double t0 = now_s();
    /* Sattolo's shuffle gives a single cycle through all lines (a plain Fisher-Yates shuffle can
     * leave short cycles that would stay in cache). */
    uint32_t *order = malloc(lines * sizeof *order);
    if (!order) {
        fprintf(stderr, "chase: cannot allocate the permutation\n");
        return 1;
    }
    link_random_cycle(buf, order, lines, (uint64_t)seed * 0x9E3779B97F4A7C15ULL | 1);
    free(order);
    double init_s = now_s() - t0;
    long huge_kib = anon_huge_kib();

    /* Wall and CPU time of each repetition: on a busy host the wall time also counts the time
     * other programs held the CPU; one thread's CPU time does not (timing.h: cpu_now_s). */
    double ns[MAX_REPS], cpu_ns[MAX_REPS];
    struct line *p = &buf[0];
    for (long r = 0; r < reps; r++) {
        double s = now_s(), c = cpu_now_s();
        for (long k = 0; k < loads; k++)
            p = p->next;
        ns[r] = (now_s() - s) * 1e9 / (double)loads;
        cpu_ns[r] = (cpu_now_s() - c) * 1e9 / (double)loads;
    }

    printf("{\"kernel\":\"chase\",\"size_bytes\":%zu,\"lines\":%zu,\"hugepages\":%s,\"anon_huge_kib\":%ld,"
           "\"loads\":%ld,\"reps\":%ld,\"init_s\":%.6f,\"ns_per_load\":[",
           bytes, lines, huge ? "true" : "false", huge_kib, loads, reps, init_s);
    for (long r = 0; r < reps; r++)
        printf("%s%.3f", r ? "," : "", ns[r]);
    printf("],\"cpu_ns_per_load\":[");
    for (long r = 0; r < reps; r++)
        printf("%s%.3f", r ? "," : "", cpu_ns[r]);
    /* The final position depends on every load: printing it keeps the chase from being removed. */
    printf("],\"checksum\":%zu}\n", (size_t)(p - buf));
    munmap(raw, bytes + HUGE);
    return 0;
}
