/* Option values of the one-thread kernels (chase, clock); the OpenMP kernels' are in common.h. */
#ifndef NUMALAB_KERNELS_OPTIONS_H
#define NUMALAB_KERNELS_OPTIONS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
