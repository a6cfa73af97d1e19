/* See memory.h. */
#include "memory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "maps.h"
#include "program_pagemap.h"

#define PAGE_SIZE_BYTES 4096ull
/* Ranges per process_madvise call (the kernel takes at most UIO_MAXIOV). */
#define BATCH 512
/* Page-table entries read at once. */
#define PAGEMAP_STEP 4096

/* The job's private anonymous mappings, read from /proc/PID/maps: what swaps. */
struct ranges {
    struct iovec *iov;
    size_t n;
};

static bool is_anonymous_private(const struct specx_mapping *m)
{
    return !m->shared && (m->prot & PROT_WRITE) && m->inode == 0 &&
           (m->path[0] == '\0' || strcmp(m->path, "[heap]") == 0 ||
            strcmp(m->path, "[stack]") == 0);
}

static struct ranges anonymous_ranges(pid_t pid)
{
    struct ranges r = { 0 };
    char path[64], *text = NULL;
    size_t cap = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return r;
    /* All at once: parsing while the job changes its mappings must not see half a line. */
    ssize_t len = getdelim(&text, &cap, '\0', f);
    fclose(f);
    for (char *line = text; len > 0 && *line;) {
        struct specx_mapping m;
        line = specx_maps_parse_line(line, &m);
        if (!is_anonymous_private(&m))
            continue;
        struct iovec *grown = realloc(r.iov, (r.n + 1) * sizeof *r.iov);
        if (!grown)
            break;
        r.iov = grown;
        r.iov[r.n++] = (struct iovec){ (void *)m.start, m.end - m.start };
    }
    free(text);
    return r;
}

static uint64_t swapped_in(int pagemap, const struct iovec *v)
{
    uint64_t entries[PAGEMAP_STEP], pages = 0;
    uintptr_t addr = (uintptr_t)v->iov_base, end = addr + v->iov_len;
    while (addr < end) {
        size_t n = (end - addr) / PAGE_SIZE_BYTES;
        if (n > PAGEMAP_STEP)
            n = PAGEMAP_STEP;
        ssize_t got = pread(pagemap, entries, n * sizeof *entries,
                            (off_t)(addr / PAGE_SIZE_BYTES * sizeof *entries));
        if (got <= 0)
            break;
        for (size_t i = 0; i < (size_t)got / sizeof *entries; i++)
            pages += (entries[i] & SPECX_PAGEMAP_SWAPPED) != 0;
        addr += (uintptr_t)got / sizeof *entries * PAGE_SIZE_BYTES;
    }
    return pages * PAGE_SIZE_BYTES;
}

static uint64_t swapped_bytes(pid_t pid, const struct ranges *r)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < r->n; i++)
        bytes += swapped_in(fd, &r->iov[i]);
    close(fd);
    return bytes;
}

static void advise(int pidfd, const struct ranges *r, int advice)
{
    for (size_t i = 0; i < r->n; i += BATCH) {
        size_t n = r->n - i < BATCH ? r->n - i : BATCH;
        syscall(SYS_process_madvise, pidfd, &r->iov[i], n, advice, 0u);
    }
}

/* What is done to one process of the job: ADVICE (0: none) after counting its swapped bytes. */
static uint64_t visit(pid_t pid, int advice)
{
    struct ranges r = anonymous_ranges(pid);
    uint64_t bytes = swapped_bytes(pid, &r);
    if (advice && r.n > 0) {
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd >= 0) {
            advise(pidfd, &r, advice);
            close(pidfd);
        }
    }
    free(r.iov);
    return bytes;
}

/* Every process of the job (a shell's children too: all are in its memory group), each
 * visited with ADVICE; returns their swapped bytes before. */
static uint64_t visit_job(const struct share_job *j, int advice)
{
    char text[65536];
    long n = specx_cgroup_read(&j->mem, "cgroup.procs", text, sizeof text - 1);
    uint64_t bytes = 0;
    if (n <= 0)
        return 0;
    text[n] = '\0';
    for (char *p = text, *end; *p; p = end) {
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 0)
            bytes += visit((pid_t)pid, advice);
    }
    return bytes;
}

uint64_t share_memory_swapped(const struct share_job *j)
{
    return visit_job(j, 0);
}

uint64_t share_memory_prefetch(const struct share_job *j)
{
    return visit_job(j, MADV_WILLNEED);
}

void share_memory_release(const struct share_job *j, int advice)
{
    visit_job(j, advice);
}
