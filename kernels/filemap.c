/* filemap: one file mapped MAP_SHARED, each thread writing its own block of --n pages, then
 * summing it --reps times. Where the page-cache pages land is the point (docs/allocation.md
 * §3.6): a write fault on a page not in the page cache goes through mm/filemap.c: filemap_fault,
 * whose read-around (do_sync_mmap_readahead) allocates the pages around it on the faulting
 * thread's node, so a thread's first fault places the tail of its neighbour's block;
 * --madvise=random (MADV_RANDOM, VM_RAND_READ) turns read-around off.
 * The file (--file, default /dev/ram0: a brd ramdisk, whose page cache reads ahead as a disk's
 * does; tmpfs and ramfs do not read around) must hold threads x n pages; a regular file is
 * extended. Its cached pages are dropped first (POSIX_FADV_DONTNEED), so every page is faulted in
 * by the loop. Threads are placed by OpenMP (OMP_PROC_BIND). Options: those of common.h
 * (--init is ignored: the blocks are always written in parallel), --file PATH and
 * --madvise normal|random. */
#define _DEFAULT_SOURCE
#include "common.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096L

/* --file and --madvise taken out of argv; the rest goes to parse_opts. */
static void take_opts(int *argc, char **argv, const char **file, int *random)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL, *a = argv[i];
        int is_file = !strncmp(a, "--file", 6) && (a[6] == '=' || a[6] == 0);
        int is_madv = !strncmp(a, "--madvise", 9) && (a[9] == '=' || a[9] == 0);
        if (!is_file && !is_madv) {
            argv[out++] = argv[i];
            continue;
        }
        const char *eq = strchr(a, '=');
        if (eq) {
            v = eq + 1;
        } else if (i + 1 < *argc) {
            v = argv[++i];
        } else {
            fprintf(stderr, "filemap: %s needs a value\n", a);
            exit(2);
        }
        if (is_file) {
            *file = v;
        } else if (!strcmp(v, "normal") || !strcmp(v, "random")) {
            *random = !strcmp(v, "random");
        } else {
            fprintf(stderr, "filemap: --madvise must be normal or random, got '%s'\n", v);
            exit(2);
        }
    }
    *argc = out;
}

int main(int argc, char **argv)
{
    (void)alloc_doubles; /* the memory here is the file's page cache */
    const char *file = "/dev/ram0";
    int random = 0;
    take_opts(&argc, argv, &file, &random);
    struct opts o = parse_opts(argc, argv, "filemap", "pages per thread (4 KiB each)", 1024, 10, 1L << 22);
    const long pages = o.n * o.threads;
    const size_t bytes = (size_t)pages * PAGE;

    int fd = open(file, O_RDWR | O_CREAT, 0644);
    if (fd < 0) {
        fprintf(stderr, "filemap: cannot open %s: %s\n", file, strerror(errno));
        return 1;
    }
    struct stat st;
    off_t size = lseek(fd, 0, SEEK_END); /* a block device's size too (st_size is 0 there) */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && size < (off_t)bytes) {
        if (ftruncate(fd, (off_t)bytes) != 0) {
            fprintf(stderr, "filemap: cannot extend %s to %zu bytes: %s\n", file, bytes, strerror(errno));
            return 1;
        }
        size = (off_t)bytes;
    }
    if (size < (off_t)bytes) {
        fprintf(stderr, "filemap: %s holds %lld bytes, %ld threads x %ld pages need %zu\n", file, (long long)size, (long)o.threads,
                o.n, bytes);
        return 1;
    }
    /* Pages of the file already cached (a partition scan's, a previous run's) would be placed
     * by whoever read them; clean ones are dropped here. */
    posix_fadvise(fd, 0, (off_t)bytes, POSIX_FADV_DONTNEED);
    double *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        fprintf(stderr, "filemap: cannot mmap %zu bytes of %s: %s\n", bytes, file, strerror(errno));
        return 1;
    }
    if (random && madvise(map, bytes, MADV_RANDOM) != 0) {
        fprintf(stderr, "filemap: madvise(MADV_RANDOM): %s\n", strerror(errno));
        return 1;
    }

    const long per_page = PAGE / (long)sizeof(double);
    double t0 = now_s();
    /* schedule(static) over pages: thread t writes pages [t n, (t + 1) n), in order. */
#pragma omp parallel for schedule(static)
    for (long p = 0; p < pages; p++)
        for (long i = 0; i < per_page; i++)
            map[p * per_page + i] = (double)(p + i);
    double init_s = now_s() - t0;

    /* Reading keeps the pages mapped and the process alive for the sampler. */
    double checksum = 0.0;
    t0 = now_s();
    double cpu0 = cpu_now_s();
    for (long rep = 0; rep < o.reps; rep++) {
#pragma omp parallel for schedule(static) reduction(+ : checksum)
        for (long p = 0; p < pages; p++)
            for (long i = 0; i < per_page; i++)
                checksum += map[p * per_page + i];
    }
    double time_s = now_s() - t0, cpu_s = cpu_now_s() - cpu0;

    munmap(map, bytes);
    close(fd);
    o.parallel_init = 1;
    double cells = (double)pages * (double)per_page;
    print_result(random ? "filemap-random" : "filemap", &o, init_s, time_s, cpu_s, cells * (double)o.reps,
                 8.0 * cells * (double)o.reps, checksum);
    return 0;
}
