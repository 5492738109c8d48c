/* Core clock from a dependent chain of integer adds, for `numalab calibrate` where the kernel has
 * no cpufreq (a virtual machine): each `add` of the chain needs the result of the one before, and
 * a register add takes one cycle on every x86 core since the P6, so the time per add is one clock
 * period. lmbench's src/mhz.c times the clock the same way, from dependent chains of simple
 * operations of known cycle counts. One thread, no OpenMP.
 *
 * `--pause N` times N PAUSE instructions per repetition instead: the `cpu_relax()` of each
 * iteration of libgomp's spin before it sleeps (libgomp/config/linux/x86/futex.h,
 * config/linux/wait.h: do_spin()). Under QEMU's TCG a PAUSE ends the translated block and leaves
 * the execution loop (target/i386/tcg/misc_helper.c: helper_pause()), so its cost there says how
 * long a spin of so many iterations lasts in a guest (docs/scheduler.md §10.57).
 *
 *   --adds N   dependent adds per timed repetition, in hundreds (default 2000000: 2e8 adds)
 *   --pause N  N PAUSEs per timed repetition instead of the adds
 *   --reps N   timed repetitions, each one sample (default 5)
 *
 * Prints one JSON line: kernel, adds, reps, ns_per_add (one per repetition, wall time),
 * cpu_ns_per_add (the same on the process's CPU time), checksum; with --pause: kernel, pauses,
 * reps, ns_per_pause, cpu_ns_per_pause. Bad options: usage on stderr, exit 2. */
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
    usage_exit("clock", why, "usage: clock [--adds HUNDREDS | --pause N] [--reps N]\n"
                             "prints one JSON line: kernel, adds, reps, ns_per_add (one per repetition), cpu_ns_per_add, checksum;\n"
                             "with --pause: kernel, pauses, reps, ns_per_pause (one per repetition), cpu_ns_per_pause\n");
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

/* n PAUSEs, one an iteration as libgomp's spin issues them (its loop's compare and branch
 * included, as in do_spin()). */
static void pauses(long n)
{
    for (long i = 0; i < n; i++)
        __builtin_ia32_pause();
}

/* One repetition's figure per entry, as a JSON array. */
static void print_array(const char *name, const double *x, long n)
{
    printf(",\"%s\":[", name);
    for (long r = 0; r < n; r++)
        printf("%s%.6f", r ? "," : "", x[r]);
    printf("]");
}

static int run_pauses(long n, long reps)
{
    double wall[MAX_REPS], cpu[MAX_REPS];
    pauses(n / 10 + 1); /* warm-up, as the adds' */
    for (long r = 0; r < reps; r++) {
        double t0 = now_s(), c0 = cpu_now_s();
        pauses(n);
        cpu[r] = (cpu_now_s() - c0) * 1e9 / (double)n;
        wall[r] = (now_s() - t0) * 1e9 / (double)n;
    }
    printf("{\"kernel\":\"clock\",\"pauses\":%ld,\"reps\":%ld", n, reps);
    print_array("ns_per_pause", wall, reps);
    print_array("cpu_ns_per_pause", cpu, reps);
    printf("}\n");
    return 0;
}

int main(int argc, char **argv)
{
    long hundreds = 2000000, reps = 5, npause = 0;
    int adds_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            usage(NULL);
        else if (!strcmp(a, "--adds"))
            hundreds = whole_number(a, v, 1, 1L << 40, usage), adds_given = 1, i++;
        else if (!strcmp(a, "--pause"))
            npause = whole_number(a, v, 1, 1L << 40, usage), i++;
        else if (!strcmp(a, "--reps"))
            reps = whole_number(a, v, 1, MAX_REPS, usage), i++;
        else
            unknown_option(a, usage);
    }
    if (npause && adds_given)
        usage("--adds and --pause time different loops; give one");
    if (npause)
        return run_pauses(npause, reps);
    double wall[MAX_REPS], cpu[MAX_REPS];
    const double adds = (double)hundreds * 100.0;
    long checksum = chain(hundreds / 10 + 1, 1, 1); /* warm-up: the core leaves any low-power state */
    for (long r = 0; r < reps; r++) {
        double t0 = now_s(), c0 = cpu_now_s();
        checksum += chain(hundreds, 1, r + 1);
        cpu[r] = (cpu_now_s() - c0) * 1e9 / adds;
        wall[r] = (now_s() - t0) * 1e9 / adds;
    }
    printf("{\"kernel\":\"clock\",\"adds\":%.0f,\"reps\":%ld", adds, reps);
    print_array("ns_per_add", wall, reps);
    print_array("cpu_ns_per_add", cpu, reps);
    printf(",\"checksum\":%ld}\n", checksum);
    return 0;
}
