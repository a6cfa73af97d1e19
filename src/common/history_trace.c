/* See history_trace.h. */
#include "common/history_trace.h"

#include <string.h>
#include <unistd.h>

struct specx_trace_read *specx_trace_reads(const struct specx_trace_header *t)
{
    return (struct specx_trace_read *)((char *)t + SPECX_TRACE_READS_AT);
}

struct specx_trace_file *specx_trace_files(const struct specx_trace_header *t)
{
    return (struct specx_trace_file *)((char *)t + SPECX_TRACE_FILES_AT);
}

struct specx_trace_read *specx_trace_add_read(struct specx_trace_header *t,
                                              const struct specx_trace_read *r)
{
    uint32_t i = __atomic_fetch_add(&t->reads, 1, __ATOMIC_RELAXED);
    if (i >= SPECX_TRACE_MAX_READS)
        return NULL;
    struct specx_trace_read *slot = &specx_trace_reads(t)[i];
    *slot = *r;
    slot->ready = 0;
    __atomic_store_n(&slot->ready, 1, __ATOMIC_RELEASE);
    return slot;
}

void specx_trace_add_file(struct specx_trace_header *t, const char *link, const struct stat *st)
{
    char path[SPECX_TRACE_PATH_MAX];
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0 || (size_t)n >= sizeof path - 1 || path[0] != '/')
        return;
    path[n] = '\0';
    if (n > 10 && strcmp(path + n - 10, " (deleted)") == 0)
        return;
    uint32_t i = __atomic_fetch_add(&t->files, 1, __ATOMIC_RELAXED);
    if (i >= SPECX_TRACE_MAX_FILES)
        return;
    struct specx_trace_file *f = &specx_trace_files(t)[i];
    *f = (struct specx_trace_file){ .dev = st->st_dev, .ino = st->st_ino,
                                    .size = (uint64_t)st->st_size,
                                    .mtime_sec = st->st_mtim.tv_sec,
                                    .mtime_nsec = (uint32_t)st->st_mtim.tv_nsec };
    memcpy(f->path, path, (size_t)n + 1);
    __atomic_store_n(&f->ready, 1, __ATOMIC_RELEASE);
}
