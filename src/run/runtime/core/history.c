/* See history.h. */
#include "run/runtime/core/history.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/history_trace.h"
#include "run/runtime/core/runtime.h"
#include "kernel/clock.h"
#include "kernel/kfile.h"
#include "kernel/raw.h"

/* Files whose path this process has noted (open addressing on dev and ino; when it is full,
 * a file may be noted twice, which specx run merges). */
#define SEEN_FILES 512u

static struct specx_trace_header *trace;

struct seen {
    uint64_t dev, ino;
};
static struct seen seen[SEEN_FILES];
/* Files whose mappings by the dynamic loader this process has noted. */
static struct seen seen_mapped[SEEN_FILES];

/* Objects the dynamic loader had loaded when this process last looked (dlpi_adds). */
static unsigned long long objects_looked_at;
static uint32_t looking; /* a thread is reading the process's mappings */

/* The process's last range: a read that continues it extends it. Threads race on it
 * harmlessly: the worst is a range noted twice. */
static struct specx_trace_read *last;

/* Whether TABLE holds the file (DEV, INO) already; puts it there. */
static bool in_table(struct seen *table, uint64_t dev, uint64_t ino)
{
    uint64_t h = (dev * 0x9e3779b97f4a7c15ull) ^ (ino * 0xff51afd7ed558ccdull);
    for (unsigned i = 0; i < 8; i++) {
        struct seen *s = &table[(h + i) % SEEN_FILES];
        if (s->dev == dev && s->ino == ino && (s->dev | s->ino))
            return true;
        if (!(s->dev | s->ino)) {
            *s = (struct seen){ dev, ino };
            return false;
        }
    }
    return false;
}

/* The runtime's own library is mapped by the loader as the program's libraries are, but it is
 * no part of what the program reads. */
static void leave_out_own_library(void)
{
    Dl_info info;
    struct stat st;
    if (dladdr((void *)specx_history_init, &info) && info.dli_fname &&
        specx_raw_syscall(SYS_newfstatat, AT_FDCWD, info.dli_fname, &st, 0) == 0)
        in_table(seen_mapped, st.st_dev, st.st_ino);
}

void specx_history_init(void)
{
    const char *path = getenv(SPECX_HISTORY_TRACE_ENV);
    if (!path || trace)
        return;
    int saved = errno;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        void *p = specx_raw_mmap(NULL, SPECX_TRACE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                                 fd, 0);
        close(fd); /* descriptor numbers are the program's: keep none */
        if (p != MAP_FAILED && ((struct specx_trace_header *)p)->magic == SPECX_TRACE_MAGIC) {
            trace = p;
            leave_out_own_library();
        }
        else if (p != MAP_FAILED)
            munmap(p, SPECX_TRACE_SIZE);
    }
    errno = saved;
}

bool specx_history_on(void)
{
    return trace != NULL;
}

bool specx_history_watching(void)
{
    return trace && __atomic_load_n(&trace->watching, __ATOMIC_RELAXED);
}

/* Whether this process noted the file already; marks it noted. */
static bool noted_before(const struct stat *st)
{
    return in_table(seen, st->st_dev, st->st_ino);
}

static void note_file(int fd, const struct stat *st)
{
    char link[32];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    specx_trace_add_file(trace, link, st);
}

static struct specx_trace_read *new_record(const struct stat *st, uint64_t off, uint64_t len,
                                           uint32_t flags)
{
    const struct specx_trace_read r = { .dev = st->st_dev, .ino = st->st_ino, .off = off,
                                        .len = len, .flags = flags,
                                        .t_ns = specx_now_ns() - trace->start_ns };
    return specx_trace_add_read(trace, &r);
}

static void note_range(const struct stat *st, uint64_t off, uint64_t len, bool miss)
{
    struct specx_trace_read *l = last;
    if (l && l->dev == st->st_dev && l->ino == st->st_ino && !(l->flags & SPECX_TRACE_MAPPED) &&
        l->off + l->len == off) {
        __atomic_store_n(&l->len, l->len + len, __ATOMIC_RELAXED);
        if (miss)
            __atomic_fetch_or(&l->flags, SPECX_TRACE_MISS, __ATOMIC_RELAXED);
        return;
    }
    struct specx_trace_read *r = new_record(st, off, len, miss ? SPECX_TRACE_MISS : 0);
    if (r)
        last = r;
}

/* The status of the file mapped at [START, END) (its map_files link names it), if it is the
 * regular file (DEV, INO) the mapping has. By its path, without opening it (an open reaches
 * the file system: a FUSE server would see one the program never made); not through the
 * link, which only a process with CAP_CHECKPOINT_RESTORE may follow. */
static bool mapped_file_status(const char *link, uint64_t dev, uint64_t ino, struct stat *st)
{
    char path[SPECX_TRACE_PATH_MAX];
    long n = specx_raw_syscall(SYS_readlinkat, AT_FDCWD, link, path, sizeof path - 1);
    if (n <= 0 || (size_t)n >= sizeof path - 1)
        return false;
    path[n] = '\0';
    return specx_raw_syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(st->st_mode) && st->st_dev == dev && st->st_ino == ino;
}

/* Notes a mapping of the dynamic loader's, one line of /proc/self/maps. */
static void note_loader_mapping(const char *line, struct seen *last)
{
    unsigned long start, end, major, minor;
    unsigned long long off, ino;
    int path_at = 0;
    if (sscanf(line, "%lx-%lx %*4s %llx %lx:%lx %llu %n", &start, &end, &off, &major, &minor,
               &ino, &path_at) < 6 || !path_at || line[path_at] != '/' || ino == 0)
        return;
    if (start == (unsigned long)specx.slot)
        return; /* the runtime's statistics (core/stats.c) */
    uint64_t dev = makedev(major, minor);
    /* The lines of one object follow each other: all of them are noted, once. */
    if (!(dev == last->dev && ino == last->ino) && in_table(seen_mapped, dev, ino))
        return;
    *last = (struct seen){ dev, ino };
    char link[64];
    struct stat st;
    snprintf(link, sizeof link, "/proc/self/map_files/%lx-%lx", start, end);
    if (!mapped_file_status(link, dev, ino, &st) || off >= (uint64_t)st.st_size)
        return;
    if (!noted_before(&st))
        specx_trace_add_file(trace, link, &st);
    uint64_t len = end - start, left = (uint64_t)st.st_size - off;
    new_record(&st, off, len < left ? len : left, SPECX_TRACE_MAPPED | SPECX_TRACE_MISS);
}

static int count_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1;
}

/* The files the dynamic loader maps (the program's libraries, and the modules an interpreter
 * loads with dlopen: Python's and Node's extensions) are mapped by ld.so itself, which calls
 * no interposed mmap: their pages come in by page faults the runtime never sees. Whenever the
 * loader has loaded more objects, the process's file mappings are read and each new file's
 * noted as a mapped range (what faults brought in is asked when the command ends). */
static void note_loaded_objects(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(count_loaded, &adds);
    if (adds == __atomic_load_n(&objects_looked_at, __ATOMIC_RELAXED) ||
        __atomic_exchange_n(&looking, 1, __ATOMIC_ACQUIRE))
        return;
    objects_looked_at = adds;
    int fd = specx_kfile_open("/proc/self/maps", O_RDONLY);
    struct seen last = { 0, 0 };
    char buf[4096 + 1];
    size_t have = 0;
    ssize_t n;
    while (fd >= 0 &&
           (n = specx_raw_syscall(SYS_read, fd, buf + have, sizeof buf - 1 - have)) > 0) {
        have += (size_t)n;
        buf[have] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = '\0';
            note_loader_mapping(line, &last);
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (have == sizeof buf - 1)
            have = 0; /* a line longer than the buffer: a path too long to note */
    }
    if (fd >= 0)
        specx_kfile_close(fd);
    __atomic_store_n(&looking, 0, __ATOMIC_RELEASE);
}

void specx_history_note(int fd, const struct stat *st, uint64_t off, uint64_t len, bool miss,
                        bool by_copy)
{
    if (!trace || len == 0 || (!miss && !by_copy && !specx_history_watching()))
        return;
    note_loaded_objects();
    struct stat own;
    if (!st) {
        if (fstat(fd, &own) < 0 || !S_ISREG(own.st_mode))
            return;
        st = &own;
    }
    if (!noted_before(st))
        note_file(fd, st);
    note_range(st, off, len, miss);
}

void specx_history_note_mapping(int fd, uint64_t off, uint64_t len, bool cold)
{
    struct stat st;
    if (!trace || (!cold && !specx_history_watching()) || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || off >= (uint64_t)st.st_size)
        return;
    if (!noted_before(&st))
        note_file(fd, &st);
    uint64_t n = (uint64_t)st.st_size - off < len ? (uint64_t)st.st_size - off : len;
    new_record(&st, off, n, SPECX_TRACE_MAPPED | (cold ? SPECX_TRACE_MISS : 0));
}
