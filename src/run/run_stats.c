#include "run/run_stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_PREFIX "specx-run-"
#define STATS_NAME "stats"
/* The file's name until it is locked: a sweep takes an unlocked `stats` for a dead run's. */
#define FRESH_NAME "stats.new"
#define NBASES 2

/* Every process of the run writes its counters through a shared mapping of this file. On a
 * disk file system each first write to a page allocates a block and the file is written back
 * at the end (about 1.7 ms per run here, most of specx's fixed cost); on tmpfs it is memory
 * only. So the file lives in /dev/shm when it can, else in $TMPDIR or /tmp. */
static void private_dir_bases(const char *bases[NBASES])
{
    const char *tmp = getenv("TMPDIR");
    bases[0] = "/dev/shm";
    bases[1] = tmp && *tmp ? tmp : "/tmp";
}

static int make_private_dir(char *dir, size_t size)
{
    const char *bases[NBASES];
    private_dir_bases(bases);
    for (size_t i = 0; i < NBASES; i++) {
        if ((size_t)snprintf(dir, size, "%s/" DIR_PREFIX "XXXXXX", bases[i]) >= size) {
            errno = ENAMETOOLONG;
            continue;
        }
        if (mkdtemp(dir))
            return 0;
    }
    return -1;
}

/* True if FD is a file of TYPE (S_IFDIR, S_IFREG) that this user owns. */
static bool owned(int fd, mode_t type)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == type && st.st_uid == geteuid();
}

/* Removes directory NAME of BASE_FD if it is ours and its statistics file is not locked: its
 * run is dead. Links are not followed; O_NONBLOCK: a FIFO there must not hang the run. */
static void remove_if_dead(int base_fd, const char *name)
{
    int dir = openat(base_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return;
    int fd = owned(dir, S_IFDIR) ?
        openat(dir, STATS_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
    /* Leftover processes of the dead run may still map the file: unlinked, it stays theirs. */
    if (fd >= 0 && owned(fd, S_IFREG) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        unlinkat(dir, STATS_NAME, 0) == 0)
        unlinkat(base_fd, name, AT_REMOVEDIR);
    if (fd >= 0)
        close(fd);
    close(dir);
}

/* A run killed outright (SIGKILL) cannot remove its directory, which would stay in memory for
 * good: each run removes those of dead runs. One readdir of each base. */
static void sweep_dead_runs(void)
{
    const char *bases[NBASES];
    private_dir_bases(bases);
    for (size_t i = 0; i < NBASES; i++) {
        DIR *d = opendir(bases[i]);
        if (!d)
            continue;
        struct dirent *e;
        while ((e = readdir(d)))
            if (strncmp(e->d_name, DIR_PREFIX, strlen(DIR_PREFIX)) == 0)
                remove_if_dead(dirfd(d), e->d_name);
        closedir(d);
    }
}

/* The statistics file, made at FRESH and renamed PATH once locked. Its descriptor, or -1. */
static int create_locked(const char *fresh, const char *path)
{
    int fd = open(fresh, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    struct specx_stats_header hdr = { SPECX_STATS_MAGIC, SPECX_STATS_MAX_SLOTS, 0 };
    if (fd >= 0 && flock(fd, LOCK_EX) == 0 && ftruncate(fd, SPECX_STATS_FILE_SIZE) == 0 &&
        pwrite(fd, &hdr, sizeof hdr, 0) == (ssize_t)sizeof hdr && rename(fresh, path) == 0)
        return fd;
    int err = errno;
    if (fd >= 0) {
        unlink(fresh);
        close(fd);
    }
    errno = err;
    return -1;
}

int run_stats_create(char *path, size_t size)
{
    char dir[PATH_MAX], fresh[PATH_MAX];
    sweep_dead_runs();
    if (make_private_dir(dir, sizeof dir) < 0)
        return -1;
    int fd = -1;
    if ((size_t)snprintf(path, size, "%s/" STATS_NAME, dir) >= size ||
        (size_t)snprintf(fresh, sizeof fresh, "%s/" FRESH_NAME, dir) >= sizeof fresh)
        errno = ENAMETOOLONG;
    else
        fd = create_locked(fresh, path);
    if (fd < 0) {
        int err = errno;
        rmdir(dir);
        errno = err;
    }
    return fd;
}

void run_stats_remove(const char *path, int fd)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    unlink(path);
    rmdir(dirname(dir));
    close(fd); /* the lock goes last: a sweep never sees the file unlocked under its name */
}

static void add_counters(struct specx_stats_slot *sum, const struct specx_stats_slot *s)
{
    /* A peak, not a count: the total is the largest of any process. */
    uint64_t copies_peak = s->copies_peak > sum->copies_peak ? s->copies_peak : sum->copies_peak;
#define SPECX_ADD(name, doc) sum->name += s->name;
    SPECX_COUNTERS(SPECX_ADD)
#undef SPECX_ADD
    sum->copies_peak = copies_peak;
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
