/* See memory.h. */
#include "share/memory.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel/kfile.h"
#include "kernel/maps.h"
#include "kernel/memcg.h"
#include "kernel/program_pagemap.h"
#include "common/util.h"

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

/* A page of the job that is swapped out, and its slot on the swap device. */
struct swapped_page {
    uintptr_t addr;
    uint64_t slot; /* its offset on the swap device (0 without CAP_SYS_ADMIN) */
};

struct swapped_list {
    struct swapped_page *pages;
    size_t n, cap;
};

static void note_swapped(struct swapped_list *l, uintptr_t addr, uint64_t entry)
{
    if (!specx_grow(&l->pages, &l->cap, l->n, sizeof *l->pages, 1024))
        return;
    /* Bits 0-54: swap type (0-4) and offset (5-54); the offset orders the slots. */
    l->pages[l->n++] = (struct swapped_page){ addr, (entry & ((1ull << 55) - 1)) >> 5 };
}

static void collect_pages(int pagemap, const struct iovec *v, uint64_t want,
                          struct swapped_list *l)
{
    uint64_t entries[PAGEMAP_STEP];
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
            if (entries[i] & want)
                note_swapped(l, addr + i * PAGE_SIZE_BYTES, entries[i]);
        addr += (uintptr_t)got / sizeof *entries * PAGE_SIZE_BYTES;
    }
}

/* The pages of R whose page-table entry has WANT (SPECX_PAGEMAP_SWAPPED or _PRESENT). */
static struct swapped_list pages_with(pid_t pid, const struct ranges *r, uint64_t want)
{
    struct swapped_list l = { 0 };
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return l;
    for (size_t i = 0; i < r->n; i++)
        collect_pages(fd, &r->iov[i], want, &l);
    close(fd);
    return l;
}

/* In the order the pages were pushed out, which is the order of their slots: reclaim writes
 * out the least recently used first, into increasing slots. The paper brings a job's pages in
 * most recently used first, but nothing on this kernel tells that order (no idle-page
 * tracking, no soft-dirty bits; bench/share-recency found slot order, like address order,
 * uncorrelated with true recency: docs/design/share.md); slot order at least reads the swap
 * device from start to end, in the largest requests it can merge, and for a job that sweeps
 * its memory it is the order of next use. */
static int by_slot(const void *a, const void *b)
{
    const struct swapped_page *x = a, *y = b;
    return x->slot > y->slot ? 1 : x->slot < y->slot ? -1 : 0;
}

/* The pages as ranges of neighbours in address, none longer than MAX_LEN; with SLOTS_TOO (the
 * pages sorted by slot), only where their slots are neighbours too: each range is then one
 * run of the device. */
static struct ranges as_ranges(const struct swapped_list *l, bool slots_too, uint64_t max_len)
{
    struct ranges r = { 0 };
    r.iov = malloc((l->n ? l->n : 1) * sizeof *r.iov);
    for (size_t i = 0; r.iov && i < l->n; i++) {
        struct iovec *last = r.n ? &r.iov[r.n - 1] : NULL;
        if (last && (uintptr_t)last->iov_base + last->iov_len == l->pages[i].addr &&
            last->iov_len < max_len &&
            (!slots_too || l->pages[i - 1].slot + 1 == l->pages[i].slot))
            last->iov_len += PAGE_SIZE_BYTES;
        else
            r.iov[r.n++] = (struct iovec){ (void *)l->pages[i].addr, PAGE_SIZE_BYTES };
    }
    return r;
}

/* Waits until the reads of R (asked for in this order) have arrived: process_madvise returns
 * once the device's queue has taken them, which a deep queue does at once, so it says nothing
 * of how long the device took. Reading a byte of each range from the process faults it in
 * there (into its own memory group), each fault waiting for its page's read. */
static void wait_for_reads(pid_t pid, const struct ranges *r)
{
    struct iovec remote[BATCH];
    char sink[BATCH];
    for (size_t i = 0; i < r->n; i += BATCH) {
        size_t n = r->n - i < BATCH ? r->n - i : BATCH;
        for (size_t k = 0; k < n; k++)
            remote[k] = (struct iovec){ r->iov[i + k].iov_base, 1 };
        struct iovec local = { sink, n };
        if (process_vm_readv(pid, &local, 1, remote, n, 0) < 0)
            return;
    }
}

static void advise(int pidfd, const struct ranges *r, int advice)
{
    for (size_t i = 0; i < r->n; i += BATCH) {
        size_t n = r->n - i < BATCH ? r->n - i : BATCH;
        syscall(SYS_process_madvise, pidfd, &r->iov[i], n, advice, 0u);
    }
}

/* How many of R's ranges from FROM on make one chunk: SHARE_PREFETCH_CHUNK bytes at most, at
 * least one range. */
static size_t chunk_length(const struct ranges *r, size_t from)
{
    size_t n = 0;
    for (uint64_t bytes = 0; from + n < r->n; n++) {
        bytes += r->iov[from + n].iov_len;
        if (n > 0 && bytes > SHARE_PREFETCH_CHUNK)
            break;
    }
    return n;
}

/* Shortens R to its first *BUDGET bytes, which it takes off the budget. */
static void trim(struct ranges *r, uint64_t *budget)
{
    size_t i = 0;
    for (; i < r->n && *budget > 0; i++) {
        if (r->iov[i].iov_len > *budget)
            r->iov[i].iov_len = (size_t)*budget;
        *budget -= r->iov[i].iov_len;
    }
    r->n = i;
}

/* One process's swapped-out bytes. */
static uint64_t swapped_bytes(pid_t pid)
{
    struct ranges all = anonymous_ranges(pid);
    struct swapped_list swapped = pages_with(pid, &all, SPECX_PAGEMAP_SWAPPED);
    free(swapped.pages);
    free(all.iov);
    return swapped.n * PAGE_SIZE_BYTES;
}

/* The prefetching thread notes what it asks for while the main thread counts and forgets it
 * at the end of a turn. */
static pthread_mutex_t asked_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_asked(struct share_job *j, pid_t pid, const struct ranges *r)
{
    pthread_mutex_lock(&asked_lock);
    for (size_t i = 0; i < r->n; i++) {
        if (!specx_grow(&j->asked, &j->asked_cap, j->nasked, sizeof *j->asked, 64))
            break;
        j->asked[j->nasked++] = (struct share_asked){ pid, (uintptr_t)r->iov[i].iov_base,
                                                      r->iov[i].iov_len };
    }
    pthread_mutex_unlock(&asked_lock);
}

/* One process's swapped pages read back in, in slot order, at most *BUDGET bytes of them
 * (taken off the budget). Returns the bytes asked for. */
static uint64_t prefetch_process(struct share_job *j, pid_t pid, uint64_t *budget)
{
    struct ranges all = anonymous_ranges(pid);
    struct swapped_list swapped = pages_with(pid, &all, SPECX_PAGEMAP_SWAPPED);
    qsort(swapped.pages, swapped.n, sizeof *swapped.pages, by_slot);
    if (swapped.n * PAGE_SIZE_BYTES > *budget)
        swapped.n = *budget / PAGE_SIZE_BYTES;
    uint64_t bytes = swapped.n * PAGE_SIZE_BYTES;
    *budget -= bytes;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        struct ranges order = as_ranges(&swapped, true, SHARE_PREFETCH_CHUNK);
        note_asked(j, pid, &order);
        for (size_t i = 0, n; order.iov && i < order.n; i += n) {
            n = chunk_length(&order, i);
            struct ranges chunk = { order.iov + i, n };
            advise(pidfd, &chunk, MADV_WILLNEED);
            wait_for_reads(pid, &chunk);
        }
        free(order.iov);
        close(pidfd);
    }
    free(swapped.pages);
    free(all.iov);
    return pidfd >= 0 ? bytes : 0;
}

/* ADVICE (MADV_COLD or MADV_PAGEOUT) over one process's resident anonymous pages in address
 * order, at most *BUDGET bytes of them (taken off the budget): pages already out would only
 * use up the budget. */
static void release_process(pid_t pid, int advice, uint64_t *budget)
{
    struct ranges all = anonymous_ranges(pid);
    struct swapped_list present = pages_with(pid, &all, SPECX_PAGEMAP_PRESENT);
    struct ranges some = as_ranges(&present, false, UINT64_MAX);
    trim(&some, budget);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd >= 0) {
        advise(pidfd, &some, advice);
        close(pidfd);
    }
    free(some.iov);
    free(present.pages);
    free(all.iov);
}

long share_memory_processes(const struct share_job *j, pid_t *pids)
{
    return j->tasks_below ? specx_cgroup_procs_tree(&j->mem, false, pids, SPECX_CGROUP_PROCS_MAX)
                          : specx_cgroup_procs(&j->mem, pids, SPECX_CGROUP_PROCS_MAX);
}

/* Every process of a job counts: a shell's children too, all in its memory group. The
 * group's own swap count first: it is asked about the next job every turn, and a walk of the
 * page tables of jobs that fit in memory finds nothing, at a cost that grows with their size
 * (a few milliseconds a turn for a Python job of 64 MiB). */
uint64_t share_memory_swapped(const struct share_job *j)
{
    uint64_t group_swap;
    if (specx_memcg_swap(&j->mem, &group_swap) && group_swap == 0)
        return 0;
    pid_t pids[SPECX_CGROUP_PROCS_MAX];
    long n = share_memory_processes(j, pids);
    uint64_t bytes = 0;
    for (long i = 0; i < n; i++)
        bytes += swapped_bytes(pids[i]);
    return bytes;
}

uint64_t share_memory_prefetch(struct share_job *j, uint64_t max_bytes)
{
    pid_t pids[SPECX_CGROUP_PROCS_MAX];
    long n = share_memory_processes(j, pids);
    uint64_t bytes = 0;
    for (long i = 0; i < n && max_bytes > 0; i++)
        bytes += prefetch_process(j, pids[i], &max_bytes);
    return bytes;
}

/* Pages of LEN bytes at ADDR in PID that are not mapped (pagemap's present bit). */
static uint64_t pages_absent(pid_t pid, uintptr_t addr, size_t len)
{
    struct ranges one = { &(struct iovec){ (void *)addr, len }, 1 };
    struct swapped_list present = pages_with(pid, &one, SPECX_PAGEMAP_PRESENT);
    uint64_t absent = len / PAGE_SIZE_BYTES - present.n;
    free(present.pages);
    return absent;
}

uint64_t share_memory_unused(struct share_job *j)
{
    pthread_mutex_lock(&asked_lock);
    struct share_asked *asked = j->asked;
    size_t n = j->nasked;
    j->asked = NULL;
    j->nasked = j->asked_cap = 0;
    pthread_mutex_unlock(&asked_lock);
    uint64_t pages = 0;
    for (size_t i = 0; i < n; i++)
        pages += pages_absent(asked[i].pid, asked[i].addr, asked[i].len);
    free(asked);
    return pages * PAGE_SIZE_BYTES;
}

void share_memory_release(const struct share_job *j, int advice, uint64_t max_bytes)
{
    pid_t pids[SPECX_CGROUP_PROCS_MAX];
    long n = share_memory_processes(j, pids);
    for (long i = 0; i < n && max_bytes > 0; i++)
        release_process(pids[i], advice, &max_bytes);
}

uint64_t share_memory_room(const struct specx_cgroup *group)
{
    uint64_t limit, free_bytes = specx_memcg_free(group, &limit);
    uint64_t margin = limit / 16 > (4ull << 20) ? limit / 16 : (4ull << 20);
    return free_bytes > margin ? free_bytes - margin : 0;
}
