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
 * (--init is ignored: the blocks are always written in parallel), --file PATH,
 * --madvise normal|random and --procs P.
 * --procs P: after mapping the file, fork into P processes (docs/corun.md §6, the simulator's
 * `split=REGION`): process k (0 = the parent) is bound with sched_setaffinity to the CPUs of
 * the k-th online node (k mod nodes), and its --threads threads write block k of P; the file
 * holds P x threads x n pages. The parent writes block 0, waits for the others to end, then sums
 * the whole file --reps times: its numa_maps then shows every page of the file's page cache where
 * the others' faults placed it (numa_maps shows only the pages a process maps).
 * libgomp takes its places from the affinity mask it starts with, so OMP_PROC_BIND must be
 * unset or false with P > 1 (the threads inherit their process's node). */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET (and the _DEFAULT_SOURCE names) */
#include "common.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096L

/* --file, --madvise and --procs taken out of argv; the rest goes to parse_opts. */
static void take_opts(int *argc, char **argv, const char **file, int *random, long *procs)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL, *a = argv[i];
        int is_file = !strncmp(a, "--file", 6) && (a[6] == '=' || a[6] == 0);
        int is_madv = !strncmp(a, "--madvise", 9) && (a[9] == '=' || a[9] == 0);
        int is_procs = !strncmp(a, "--procs", 7) && (a[7] == '=' || a[7] == 0);
        if (!is_file && !is_madv && !is_procs) {
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
        } else if (is_procs) {
            char *end;
            *procs = strtol(v, &end, 10);
            if (*end || *procs < 1 || *procs > 64) {
                fprintf(stderr, "filemap: --procs must be a whole number from 1 to 64, got '%s'\n", v);
                exit(2);
            }
        } else if (!strcmp(v, "normal") || !strcmp(v, "random")) {
            *random = !strcmp(v, "random");
        } else {
            fprintf(stderr, "filemap: --madvise must be normal or random, got '%s'\n", v);
            exit(2);
        }
    }
    *argc = out;
}

/* The CPUs of the k-th online node (k mod nodes), from sysfs; 0 if sysfs has none. */
static int node_cpus(long k, cpu_set_t *set)
{
    int nodes[256], n = 0;
    FILE *f = fopen("/sys/devices/system/node/online", "r");
    for (int a, b; f && n < 256 && fscanf(f, "%d", &a) == 1;) {
        b = a;
        if (fscanf(f, "-%d", &b) != 1)
            b = a;
        for (int x = a; x <= b && n < 256; x++)
            nodes[n++] = x;
        if (fgetc(f) != ',')
            break;
    }
    if (f)
        fclose(f);
    if (n == 0)
        return 0;
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", nodes[k % n]);
    f = fopen(path, "r");
    CPU_ZERO(set);
    int count = 0;
    for (int a, b; f && fscanf(f, "%d", &a) == 1;) {
        b = a;
        if (fscanf(f, "-%d", &b) != 1)
            b = a;
        for (int x = a; x <= b && x < CPU_SETSIZE; x++, count++)
            CPU_SET(x, set);
        if (fgetc(f) != ',')
            break;
    }
    if (f)
        fclose(f);
    return count;
}

/* Fork into `procs` processes; returns this one's ordinal (0 in the parent), bound to its node.
 * They start writing together, as the simulator's co-run starts its copies: each child waits on
 * a pipe until the parent, having forked them all, closes its end. Forked one by one (a fork
 * takes milliseconds under TCG), a process could otherwise reach the end of its block before
 * the next one's first fault, and the read-around at that boundary would go the other way. */
static long fork_procs(long procs)
{
    int go[2];
    if (pipe(go) != 0) {
        fprintf(stderr, "filemap: pipe: %s\n", strerror(errno));
        exit(1);
    }
    long k = 0;
    fflush(NULL);
    for (long i = 1; i < procs && k == 0; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "filemap: fork: %s\n", strerror(errno));
            exit(1);
        }
        if (pid == 0)
            k = i;
    }
    cpu_set_t set;
    if (node_cpus(k, &set) > 0 && sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "filemap: sched_setaffinity for process %ld: %s\n", k, strerror(errno));
        exit(1);
    }
    close(go[1]);
    if (k > 0) {
        char c;
        while (read(go[0], &c, 1) < 0 && errno == EINTR)
            ;
    }
    close(go[0]);
    return k;
}

/* The parent's wait for the other processes: 0 if all ended well. */
static int wait_procs(long procs)
{
    int bad = 0;
    for (long i = 1; i < procs; i++) {
        int status;
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad = 1;
    }
    return bad;
}

int main(int argc, char **argv)
{
    (void)alloc_doubles; /* the memory here is the file's page cache */
    const char *file = "/dev/ram0";
    int random = 0;
    long procs = 1;
    take_opts(&argc, argv, &file, &random, &procs);
    struct opts o = parse_opts(argc, argv, "filemap", "pages per thread (4 KiB each)", 1024, 10, 1L << 22);
    const char *bind = getenv("OMP_PROC_BIND");
    if (procs > 1 && bind && strcmp(bind, "false") && strcmp(bind, "FALSE")) {
        fprintf(stderr, "filemap: --procs %ld needs OMP_PROC_BIND unset or false (each process binds to its node), got '%s'\n",
                procs, bind);
        return 2;
    }
    const long block = o.n * o.threads; /* pages of one process's block */
    const long pages = block * procs;
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
        fprintf(stderr, "filemap: %s holds %lld bytes, %ld processes x %ld threads x %ld pages need %zu\n", file,
                (long long)size, procs, (long)o.threads, o.n, bytes);
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

    /* After the mapping: every process maps the same file pages (MAP_SHARED survives fork). */
    const long k = procs > 1 ? fork_procs(procs) : 0;
    const long first = k * block, last = first + block;
    const long per_page = PAGE / (long)sizeof(double);
    double t0 = now_s();
    /* schedule(static) over this process's block: thread t writes its n pages, in order. */
#pragma omp parallel for schedule(static)
    for (long p = first; p < last; p++)
        for (long i = 0; i < per_page; i++)
            map[p * per_page + i] = (double)(p + i);
    double init_s = now_s() - t0;
    if (k > 0)
        exit(0); /* MAP_SHARED: the page cache keeps what this process wrote */
    if (procs > 1 && wait_procs(procs)) {
        fprintf(stderr, "filemap: one of the %ld processes failed\n", procs);
        return 1;
    }
    const long lo = procs > 1 ? 0 : first, hi = procs > 1 ? pages : last;

    /* Reading keeps the pages mapped and the process alive for the sampler. */
    double checksum = 0.0;
    t0 = now_s();
    double cpu0 = cpu_now_s();
    for (long rep = 0; rep < o.reps; rep++) {
#pragma omp parallel for schedule(static) reduction(+ : checksum)
        for (long p = lo; p < hi; p++)
            for (long i = 0; i < per_page; i++)
                checksum += map[p * per_page + i];
    }
    double time_s = now_s() - t0, cpu_s = cpu_now_s() - cpu0;

    munmap(map, bytes);
    close(fd);
    o.parallel_init = 1;
    double cells = (double)(hi - lo) * (double)per_page;
    print_result(random ? "filemap-random" : "filemap", &o, init_s, time_s, cpu_s, cells * (double)o.reps,
                 8.0 * cells * (double)o.reps, checksum);
    return 0;
}
