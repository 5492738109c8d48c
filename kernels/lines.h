/* The pointer chases' buffer (chase, window): one pointer per 64-byte line, linked into one random
 * cycle so that every load depends on the one before and the prefetchers cannot guess the next. */
#ifndef NUMALAB_LINES_H
#define NUMALAB_LINES_H

#include <stddef.h>
#include <stdint.h>

#define LINE 64
#define HUGE (2UL << 20)

struct line {
    struct line *next;
    char pad[LINE - sizeof(struct line *)];
};

/* xorshift64*: a small fixed generator, so a seed always gives the same cycle. */
static inline uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* Link buf's `lines` lines into one cycle in a random order (Fisher-Yates from `state`), which
 * `order` (room for `lines` entries) keeps: order[i + 1] follows order[i]. */
static inline void link_random_cycle(struct line *buf, uint32_t *order, size_t lines, uint64_t state)
{
    for (size_t i = 0; i < lines; i++)
        order[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = next_random(&state) % i;
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        buf[order[i]].next = &buf[order[(i + 1) % lines]];
}

#endif
