/* Fast refork, speculative side (Fraser & Chang 2003, §5.1, §5.2): the regions the clone left
 * out are mapped again empty and registered with userfaultfd; each first touch raises SIGBUS
 * (UFFD_FEATURE_SIGBUS: the copy is single-threaded, so no thread is left to serve a blocking
 * fault), and the handler fills a batch of pages from the program. See lazy_memory.h.
 *
 * How a page is filled depends on what the program has there (/proc/PID/pagemap):
 * - present: copied with process_vm_readv + UFFDIO_COPY, in batches of up to BATCH_PAGES
 *   (1.4-7 us per page in batches against 10-60 us one by one, measured here);
 * - swapped out (bit 62): the paper's swap speculation (§4.1.2) — MADV_WILLNEED on the
 *   program (process_madvise) starts reading the batch's swapped pages into the swap cache the
 *   program shares, all at once, then they are pulled like present ones: the copy waits for
 *   them, as the copy of a plain fork would. The paper's kernel maps a fresh frame instead and
 *   goes on; measured here, zeros in their place left a copy whose path depends on that
 *   memory predicting nothing (296 of 300 reads stalled, against 43 when it waits);
 * - absent (never touched, or dropped): a zero page, exactly what the program would read.
 * Nothing here changes what the program's memory holds.
 *
 * Everything here runs in the copy, partly in a signal handler: system calls only. */
#include "run/runtime/refork/lazy_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "run/runtime/running/copy_idle.h"
#include "run/runtime/core/runtime.h"
#include "kernel/program_pagemap.h"
#include "kernel/raw.h"

#define PAGE 4096ul
#define BATCH_PAGES 32u
/* The copy lives in the program's memory cgroup: it keeps at most its budget (lazy_budget.c)
 * of what it pulled and drops the oldest batches beyond (a dropped page is pulled again at its
 * next touch; what the copy wrote there is lost, which only changes the copy's predictions). */
#define HELD_BATCHES 4096u

static const struct specx_lazy_set *lazy; /* non-NULL once attached */
static pid_t program;
static int uffd = -1, pidfd = -1;
static struct sigaction program_sigbus;
static char batch[BATCH_PAGES * PAGE] __attribute__((aligned(4096)));

static struct held {
    unsigned long addr, len;
} held[HELD_BATCHES];
static unsigned held_first, held_count;
static unsigned long held_bytes;

int specx_lazy_userfaultfd(void)
{
    int fd = (int)specx_raw_syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == EPERM)
        fd = (int)specx_raw_syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    return fd;
}

int specx_lazy_reserve(const struct specx_lazy_set *set, pid_t prog)
{
    if (set->n == 0)
        return 0;
    for (unsigned i = 0; i < set->n; i++) {
        const struct specx_lazy_region *r = &set->r[i];
        /* PROT_NONE: an unexpected touch before attach kills the copy instead of reading
         * zeros where the program has data. */
        if (specx_raw_mmap((void *)r->start, r->end - r->start, PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
            return -errno;
    }
    program = prog;
    /* Opened now, before the sandbox; without it every page is treated as present (correct,
     * only slower: no zero pages, no swap prefetch). */
    specx_pagemap_open(prog);
    return 0;
}

static const struct specx_lazy_region *region_of(unsigned long addr)
{
    for (unsigned i = 0; lazy && i < lazy->n; i++)
        if (addr >= lazy->r[i].start && addr < lazy->r[i].end)
            return &lazy->r[i];
    return NULL;
}

/* --- filling ------------------------------------------------------------------------------ */

/* One UFFDIO_COPY from src, or UFFDIO_ZEROPAGE when src is NULL; *done: bytes installed
 * before it stopped (the kernel's count, negative on error). */
static int install_once(unsigned long dst, const char *src, unsigned long len, long long *done)
{
    if (src) {
        struct uffdio_copy c = { .dst = dst, .src = (unsigned long)src, .len = len };
        int ret = ioctl(uffd, UFFDIO_COPY, &c);
        *done = c.copy;
        return ret;
    }
    struct uffdio_zeropage z = { .range = { .start = dst, .len = len } };
    int ret = ioctl(uffd, UFFDIO_ZEROPAGE, &z);
    *done = z.zeropage;
    return ret;
}

/* Installs [dst, dst + len) from src (zeros when src is NULL); a page filled already (EEXIST)
 * is skipped. 0 or -errno. */
static int install(unsigned long dst, const char *src, unsigned long len)
{
    while (len > 0) {
        long long copied;
        if (install_once(dst, src, len, &copied) == 0)
            return 0;
        if (errno != EEXIST && errno != EAGAIN)
            return -errno;
        unsigned long done = copied > 0 ? (unsigned long)copied : 0;
        if (errno == EEXIST)
            done += PAGE;
        done = done < len ? done : len;
        dst += done;
        src = src ? src + done : NULL;
        len -= done;
    }
    return 0;
}

/* Pages the program has: what it no longer has (unmapped since) reads as zeros. */
static int pull(unsigned long addr, unsigned long len)
{
    struct iovec local = { batch, len }, remote = { (void *)addr, len };
    ssize_t got = specx_raw_syscall(SYS_process_vm_readv, program, &local, 1UL, &remote, 1UL, 0UL);
    if (got < 0)
        got = 0;
    if ((unsigned long)got < len)
        memset(batch + got, 0, len - (unsigned long)got);
    SPECX_COUNT(lazy_pulled, len / PAGE);
    return install(addr, batch, len);
}

/* Swapped-out pages: their reads into the program's swap cache start together, then the copy
 * pulls them (and waits for them). */
static int prefetch_swapped(unsigned long addr, unsigned long len)
{
    struct iovec range = { (void *)addr, len };
    specx_copy_active();
    if (pidfd >= 0 &&
        specx_raw_syscall(SYS_process_madvise, pidfd, &range, 1UL, MADV_WILLNEED, 0U) == (long)len)
        SPECX_COUNT(lazy_swap_prefetches, len / PAGE);
    return pull(addr, len);
}

static int zero(unsigned long addr, unsigned long len)
{
    SPECX_COUNT(lazy_zero, len / PAGE);
    return install(addr, NULL, len);
}

/* Where the program's page stands, from its pagemap entry. */
static int (*fill_kind(uint64_t entry))(unsigned long, unsigned long)
{
    return (entry & SPECX_PAGEMAP_PRESENT) ? pull
           : (entry & SPECX_PAGEMAP_SWAPPED) ? prefetch_swapped
                                              : zero;
}

/* The batch starting at page: up to BATCH_PAGES pages of its region, ending before the first
 * page the copy has already (filled earlier, or written). */
static unsigned long batch_end(unsigned long page, const struct specx_lazy_region *r)
{
    unsigned long end = page + BATCH_PAGES * PAGE < r->end ? page + BATCH_PAGES * PAGE : r->end;
    unsigned char vec[BATCH_PAGES];
    if (mincore((void *)page, end - page, vec) < 0)
        return page + PAGE;
    for (unsigned long i = 1; page + i * PAGE < end; i++)
        if (vec[i] & 1)
            return page + i * PAGE;
    return end;
}

/* Keeps the copy's footprint bounded: the oldest batches go first. */
static void hold(unsigned long addr, unsigned long len)
{
    while (held_count == HELD_BATCHES || (held_count > 0 && held_bytes + len > lazy->budget)) {
        struct held *old = &held[held_first];
        specx_raw_syscall(SYS_madvise, (void *)old->addr, old->len, MADV_DONTNEED);
        SPECX_COUNT(lazy_dropped, old->len / PAGE);
        held_bytes -= old->len;
        held_first = (held_first + 1) % HELD_BATCHES;
        held_count--;
    }
    held[(held_first + held_count++) % HELD_BATCHES] = (struct held){ addr, len };
    held_bytes += len;
}

/* Fills the batch at addr's page. Returns false if addr is not ours or cannot be filled. */
static bool fill(unsigned long addr)
{
    const struct specx_lazy_region *r = region_of(addr);
    if (!r)
        return false;
    unsigned long page = addr & ~(PAGE - 1), end = batch_end(page, r);
    unsigned long n = (end - page) / PAGE;
    uint64_t entries[BATCH_PAGES];
    if (specx_pagemap_read(page, n, entries) != n)
        for (unsigned long i = 0; i < n; i++)
            entries[i] = SPECX_PAGEMAP_PRESENT; /* cannot tell: ask the program for all of it */
    for (unsigned long i = 0; i < n;) {
        int (*kind)(unsigned long, unsigned long) = fill_kind(entries[i]);
        unsigned long j = i + 1;
        while (j < n && fill_kind(entries[j]) == kind)
            j++;
        if (kind(page + i * PAGE, (j - i) * PAGE) < 0)
            return false;
        i = j;
    }
    hold(page, end - page);
    return true;
}

/* A SIGBUS that is not a lazy page is the program's: its handler, or the default action. */
static void pass_on(int sig, siginfo_t *info, void *ctx)
{
    if ((program_sigbus.sa_flags & SA_SIGINFO) && program_sigbus.sa_sigaction)
        program_sigbus.sa_sigaction(sig, info, ctx);
    else if (program_sigbus.sa_handler != SIG_DFL && program_sigbus.sa_handler != SIG_IGN)
        program_sigbus.sa_handler(sig);
    else
        signal(SIGBUS, SIG_DFL); /* the access repeats and ends the copy */
}

static void on_sigbus(int sig, siginfo_t *info, void *ctx)
{
    int saved = errno;
    bool filled = info->si_code == BUS_ADRERR && fill((unsigned long)info->si_addr);
    errno = saved;
    if (!filled)
        pass_on(sig, info, ctx);
}

static int register_region(const struct specx_lazy_region *r)
{
    unsigned long len = r->end - r->start;
    if (specx_raw_mmap((void *)r->start, len, r->prot,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
        return -errno;
    struct uffdio_register reg = { .range = { r->start, len }, .mode = UFFDIO_REGISTER_MODE_MISSING };
    return ioctl(uffd, UFFDIO_REGISTER, &reg) < 0 ? -errno : 0;
}

int specx_lazy_attach(const struct specx_lazy_set *set)
{
    if (set->n == 0)
        return 0;
    uffd = specx_lazy_userfaultfd();
    struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_SIGBUS };
    if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) < 0)
        return -errno;
    /* For the swap prefetch only; without it swapped pages just read as zeros here. */
    pidfd = (int)specx_raw_syscall(SYS_pidfd_open, program, 0U);
    struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &program_sigbus) < 0)
        return -errno;
    lazy = set;
    for (unsigned i = 0; i < set->n; i++) {
        int err = register_region(&set->r[i]);
        if (err < 0)
            return err;
    }
    return 0;
}

void specx_lazy_prepare_write(void *buf, size_t len)
{
    if (!lazy || len == 0)
        return;
    unsigned long end = (unsigned long)buf + len;
    for (unsigned long p = (unsigned long)buf & ~(PAGE - 1); p < end; p += PAGE)
        if (region_of(p))
            (void)*(volatile const char *)p;
}
