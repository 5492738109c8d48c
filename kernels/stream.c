/* STREAM triad: a[i] = b[i] + q * c[i] over arrays of n doubles, split with schedule(static), as
 * in McCalpin's stream.c. 2 flops and 24 bytes (two reads, one write) per element per repetition,
 * STREAM's counting (no write-allocate traffic). See docs/workloads.md (STREAM).
 *
 * Two options beside common.h's, for `numalab calibrate` (docs/calibrate.md):
 *   --mode triad|read|write  read: s += b[i] (8 bytes, 1 flop per element); write: a[i] = q (8 bytes,
 *                            no flop); triad (default) as above. The JSON line is the same in every mode.
 *   --seconds S              repeat the kernel loop until S seconds have passed (a background load of
 *                            known length); --reps is then the minimum and the line reports the count. */
#include "common.h"

enum mode { TRIAD, READ, WRITE };

/* Remove "--name VALUE" or "--name=VALUE" from argv (common.h's parser does not know it) and
 * return VALUE, or NULL when absent. */
static const char *take_option(int *argc, char **argv, const char *name)
{
    size_t len = strlen(name);
    for (int i = 1; i < *argc; i++) {
        const char *val = NULL;
        int used = 0;
        if (!strcmp(argv[i], name) && i + 1 < *argc)
            val = argv[i + 1], used = 2;
        else if (!strncmp(argv[i], name, len) && argv[i][len] == '=')
            val = argv[i] + len + 1, used = 1;
        if (used) {
            for (int j = i; j + used <= *argc; j++)
                argv[j] = argv[j + used];
            *argc -= used;
            return val;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode_s = take_option(&argc, argv, "--mode");
    const char *seconds_s = take_option(&argc, argv, "--seconds");
    enum mode mode = TRIAD;
    if (mode_s && !strcmp(mode_s, "read"))
        mode = READ;
    else if (mode_s && !strcmp(mode_s, "write"))
        mode = WRITE;
    else if (mode_s && strcmp(mode_s, "triad")) {
        fprintf(stderr, "stream: --mode must be triad, read or write, got '%s'\n", mode_s);
        return 2;
    }
    char *end = NULL;
    double seconds = seconds_s ? strtod(seconds_s, &end) : 0.0;
    if (seconds_s && (end == seconds_s || *end || !(seconds >= 0.0 && seconds <= 86400.0))) {
        fprintf(stderr, "stream: --seconds must be a number of seconds in 0..86400, got '%s'\n", seconds_s);
        return 2;
    }
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
    double cpu0 = cpu_now_s();
    double sum = 0.0;
    long r = 0;
    do {
        for (long k = 0; k < o.reps; k++, r++) {
            if (mode == READ) {
                double s = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
                for (long i = 0; i < n; i++)
                    s += b[i];
                sum += s;
            } else if (mode == WRITE) {
#pragma omp parallel for schedule(static)
                for (long i = 0; i < n; i++)
                    a[i] = q + (double)r;
            } else {
#pragma omp parallel for schedule(static)
                for (long i = 0; i < n; i++)
                    a[i] = b[i] + q * c[i];
            }
            /* Keep the repetitions dependent so none can be skipped. */
            b[r % n] += 1e-9;
        }
    } while (now_s() - t0 < seconds);
    double time_s = now_s() - t0, cpu_s = cpu_now_s() - cpu0;
    o.reps = r;

    double checksum = sum;
    for (long i = 0; i < n; i += 1 + n / 1024)
        checksum += a[i];
    double reps = (double)o.reps, dn = (double)n;
    const double flops[] = {2.0, 1.0, 0.0}, bytes[] = {24.0, 8.0, 8.0};
    print_result("stream", &o, init_s, time_s, cpu_s, flops[mode] * dn * reps, bytes[mode] * dn * reps, checksum);
    free(a);
    free(b);
    free(c);
    return 0;
}
