/* See history.h. */
#include "run/runtime/core/history.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/history_trace.h"
#include "kernel/clock.h"
#include "kernel/raw.h"

/* Files whose path this process has noted (open addressing on dev and ino; when it is full,
 * a file may be noted twice, which specx run merges). */
#define SEEN_FILES 512u

static struct specx_trace_header *trace;

struct seen {
    uint64_t dev, ino;
};
static struct seen seen[SEEN_FILES];

/* The process's last range: a read that continues it extends it. Threads race on it
 * harmlessly: the worst is a range noted twice. */
static struct specx_trace_read *last;

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
        if (p != MAP_FAILED && ((struct specx_trace_header *)p)->magic == SPECX_TRACE_MAGIC)
            trace = p;
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
    uint64_t h = (st->st_dev * 0x9e3779b97f4a7c15ull) ^ (st->st_ino * 0xff51afd7ed558ccdull);
    for (unsigned i = 0; i < 8; i++) {
        struct seen *s = &seen[(h + i) % SEEN_FILES];
        if (s->dev == st->st_dev && s->ino == st->st_ino && (s->dev | s->ino))
            return true;
        if (!(s->dev | s->ino)) {
            *s = (struct seen){ st->st_dev, st->st_ino };
            return false;
        }
    }
    return false;
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

void specx_history_note(int fd, const struct stat *st, uint64_t off, uint64_t len, bool miss,
                        bool by_copy)
{
    if (!trace || len == 0 || (!miss && !by_copy && !specx_history_watching()))
        return;
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
