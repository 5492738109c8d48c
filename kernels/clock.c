/* Core clock from a dependent chain of integer adds, for `numalab calibrate` where the kernel has
 * no cpufreq (a virtual machine): each `add` of the chain needs the result of the one before, and
 * a register add takes one cycle on every x86 core since the P6, so the time per add is one clock
 * period. lmbench's src/mhz.c times the clock the same way, from dependent chains of simple
 * operations of known cycle counts. One thread, no OpenMP.
 *
 *   --adds N   dependent adds per timed repetition, in hundreds (default 2000000: 2e8 adds)
 *   --reps N   timed repetitions, each one sample (default 5)
 *
 * Prints one JSON line: kernel, adds, reps, ns_per_add (one per repetition, wall time),
 * cpu_ns_per_add (the same on the process's CPU time), checksum. Bad options: usage on stderr,
 * exit 2. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "options.h"
#include "timing.h"

#define MAX_REPS 1000
#define TEN(x) x x x x x x x x x x
#define HUNDRED(x) TEN(TEN(x))

static void usage(const char *why)
{
    usage_exit("clock", why, "usage: clock [--adds HUNDREDS] [--reps N]\n"
                             "prints one JSON line: kernel, adds, reps, ns_per_add (one per repetition), cpu_ns_per_add, checksum\n");
}

/* `steps` x 100 dependent adds. Inline assembly: the compiler would fold a C chain of `a += b`
 * into one multiply and add (integer addition reassociates). The loop's own counter is not on
 * the chain, so it runs beside it. */
static long chain(long steps, long a, long b)
{
    for (long i = 0; i < steps; i++)
        __asm__ volatile(HUNDRED("add %1, %0\n\t") : "+r"(a) : "r"(b));
    return a;
}

int main(int argc, char **argv)
{
    long hundreds = 2000000, reps = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            usage(NULL);
        else if (!strcmp(a, "--adds"))
            hundreds = whole_number(a, v, 1, 1L << 40, usage), i++;
        else if (!strcmp(a, "--reps"))
            reps = whole_number(a, v, 1, MAX_REPS, usage), i++;
        else
            unknown_option(a, usage);
    }
    double wall[MAX_REPS], cpu[MAX_REPS];
    const double adds = (double)hundreds * 100.0;
    long checksum = chain(hundreds / 10 + 1, 1, 1); /* warm-up: the core leaves any low-power state */
    for (long r = 0; r < reps; r++) {
        double t0 = now_s(), c0 = cpu_now_s();
        checksum += chain(hundreds, 1, r + 1);
        cpu[r] = (cpu_now_s() - c0) * 1e9 / adds;
        wall[r] = (now_s() - t0) * 1e9 / adds;
    }
    printf("{\"kernel\":\"clock\",\"adds\":%.0f,\"reps\":%ld,\"ns_per_add\":[", adds, reps);
    for (long r = 0; r < reps; r++)
        printf("%s%.6f", r ? "," : "", wall[r]);
    printf("],\"cpu_ns_per_add\":[");
    for (long r = 0; r < reps; r++)
        printf("%s%.6f", r ? "," : "", cpu[r]);
    printf("],\"checksum\":%ld}\n", checksum);
    return 0;
}
