/* Options of the one-thread kernels (chase, clock, window); the OpenMP kernels' are in common.h. */
#ifndef NUMALAB_KERNELS_OPTIONS_H
#define NUMALAB_KERNELS_OPTIONS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Say what is wrong (when why is set), then how the kernel is used; exit with status 2. */
static inline void usage_exit(const char *kernel, const char *why, const char *text)
{
    if (why)
        fprintf(stderr, "%s: %s\n", kernel, why);
    fprintf(stderr, "%s", text);
    exit(2);
}

/* An option the kernel does not know: the kernel's usage(why), which exits with status 2. */
static inline void unknown_option(const char *opt, void (*usage)(const char *why))
{
    char msg[160];
    snprintf(msg, sizeof msg, "unknown option '%s'", opt);
    usage(msg);
}

/* The value s of option opt as a whole number in [lo, hi]; anything else (missing, not a number,
 * out of range) calls the kernel's usage(why), which exits with status 2. */
static long whole_number(const char *opt, const char *s, long lo, long hi, void (*usage)(const char *why))
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s must be a whole number in %ld..%ld, got '%s'", opt, lo, hi, s ? s : "");
        usage(msg);
    }
    return v;
}

#endif
