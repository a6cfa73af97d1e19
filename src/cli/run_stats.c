#include "run_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STATS_NAME "stats"

/* Every process of the run writes its counters through a shared mapping of this file. On a
 * disk file system each first write to a page allocates a block and the file is written back
 * at the end (about 1.7 ms per run here, most of specx's fixed cost); on tmpfs it is memory
 * only. So the file lives in /dev/shm when it can, else in $TMPDIR or /tmp. */
static int make_private_dir(char *dir, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    const char *const bases[] = { "/dev/shm", tmp && *tmp ? tmp : "/tmp" };
    for (size_t i = 0; i < sizeof bases / sizeof *bases; i++) {
        if ((size_t)snprintf(dir, size, "%s/specx-run-XXXXXX", bases[i]) >= size) {
            errno = ENAMETOOLONG;
            continue;
        }
        if (mkdtemp(dir))
            return 0;
    }
    return -1;
}

int run_stats_create(char *path, size_t size)
{
    char dir[PATH_MAX];
    if (make_private_dir(dir, sizeof dir) < 0)
        return -1;
    if ((size_t)snprintf(path, size, "%s/" STATS_NAME, dir) >= size) {
        rmdir(dir);
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    struct specx_stats_header hdr = { SPECX_STATS_MAGIC, SPECX_STATS_MAX_SLOTS, 0 };
    if (fd < 0 || ftruncate(fd, SPECX_STATS_FILE_SIZE) < 0 ||
        pwrite(fd, &hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        run_stats_remove(path);
        errno = err;
        return -1;
    }
    close(fd);
    return 0;
}

void run_stats_remove(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    unlink(path);
    rmdir(dirname(dir));
}

static void add_counters(struct specx_stats_slot *sum, const struct specx_stats_slot *s)
{
#define SPECX_ADD(name, doc) sum->name += s->name;
    SPECX_COUNTERS(SPECX_ADD)
#undef SPECX_ADD
    sum->flags |= s->flags;
}

int run_stats_load(const char *path, struct run_stats *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    void *map = mmap(NULL, SPECX_STATS_FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    const struct specx_stats_header *hdr = map;
    uint32_t claimed = __atomic_load_n(&hdr->claimed, __ATOMIC_ACQUIRE);
    size_t n = claimed < SPECX_STATS_MAX_SLOTS ? claimed : SPECX_STATS_MAX_SLOTS;
    out->lost = claimed - (uint32_t)n;
    out->procs = calloc(n ? n : 1, sizeof *out->procs);
    if (!out->procs) {
        munmap(map, SPECX_STATS_FILE_SIZE);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const struct specx_stats_slot *s =
            (const void *)((const char *)map + (i + 1) * SPECX_STATS_PAGE);
        if (__atomic_load_n(&s->pid, __ATOMIC_ACQUIRE) == 0)
            continue; /* claimed by a process that died before filling it */
        out->procs[out->nprocs] = *s;
        out->procs[out->nprocs].argv0[sizeof s->argv0 - 1] = '\0';
        add_counters(&out->total, s);
        out->nprocs++;
    }
    munmap(map, SPECX_STATS_FILE_SIZE);
    return 0;
}

void run_stats_free(struct run_stats *s)
{
    free(s->procs);
    s->procs = NULL;
}

uint64_t run_stats_unused(const struct specx_stats_slot *s)
{
    return s->spec_prefetches > s->spec_used ? s->spec_prefetches - s->spec_used : 0;
}

/* part / whole, or -1 when there is nothing to divide by. */
static double share_of(double part, uint64_t whole)
{
    return whole ? part / (double)whole : -1.0;
}

double run_stats_complete_share(const struct specx_stats_slot *s)
{
    return share_of((double)s->spec_complete, s->spec_used);
}

double run_stats_refork_completed_share(const struct specx_stats_slot *s)
{
    return share_of((double)s->refork_completed, s->refork_attempts);
}

double run_stats_refork_mean(const struct specx_stats_slot *s)
{
    return share_of((double)s->refork_ns / 1e9, s->refork_attempts);
}

double run_stats_refork_wait_mean(const struct specx_stats_slot *s)
{
    return share_of((double)s->refork_wait_ns / 1e9, s->refork_attempts);
}
