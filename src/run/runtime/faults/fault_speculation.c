/* Page-fault speculation in the speculative process; see fault_speculation.h. Everything here runs
 * in the sandboxed copy, most of it inside its SIGSEGV handler: system calls only, no malloc,
 * no stdio. */
#include "run/runtime/faults/fault_speculation.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "run/runtime/running/copy_idle.h"
#include "run/runtime/running/copy_timer.h"
#include "run/runtime/running/start_read.h"
#include "run/runtime/core/control.h"
#include "run/runtime/core/runtime.h"
#include "kernel/kernel_limits.h"
#include "kernel/maps.h"
#include "run/runtime/policy/horizon.h"
#include "run/runtime/policy/prefetch.h"
#include "kernel/program_pagemap.h"
#include "kernel/raw.h"
#include "kernel/residency.h"
#include "run/runtime/sandbox/privatize.h"

/* The unit of protection, prediction and prefetch is a chunk: what one WILLNEED call reads,
 * the device's read-ahead size (128 KiB on FUSE: docs/design/read-path.md), aligned in the file. A
 * smaller one would cost a device with a larger read-ahead more requests than the program's
 * own readahead makes (matvec, 1 MiB read-ahead, 16 MiB cgroup: 1.74 s cold, 3.27 s with
 * 128 KiB prefetches); a larger one, more memory per prediction. */
#define MIN_CHUNK SPECX_PREFETCH_CHUNK
#define MAX_CHUNK (1u << 20)
#define MAX_CHUNK_PAGES (MAX_CHUNK / SPECX_PAGE_SIZE)
#define MAX_REGIONS 32u
/* Chunks the copy may have open at once; opening one more closes the oldest. Small: closing
 * costs one system call, and an open stand-in is memory the copy holds. */
#define WINDOW 32u
/* Predictions the program must touch in a row before a dry copy starts prefetching. */
#define PROMOTE_HITS 2u
/* How far ahead a dry copy predicts: running further before its predictions are judged gains
 * nothing, and a copy that finished its program before the judgment would never prefetch. */
#define DRY_HORIZON (2u * PROMOTE_HITS)
/* How often a copy at its horizon looks at the program's page table again. */
#define PARK_MIN_NS (1000ull * 1000ull)
#define PARK_MAX_NS (50ull * 1000ull * 1000ull)
/* In a memory cgroup, outstanding prefetches hold at most the read path's share of its limit
 * (horizon.h) and at most MEMCG_MAX_BYTES: under the group's pressure, pages nobody has mapped yet are
 * reclaimed before the program's own, so prefetches far ahead are evicted and read again.
 * matvec (paper2003): demo scale (32 MiB in 16 MiB) 11 % slower than without speculation
 * with 8 MiB outstanding, 1 MiB 2 % slower, 2 MiB 5 % faster; full scale (512 MiB in 64 MiB)
 * 8 MiB re-read 5 % of the data (0.99 of cold), 2 MiB 0.4 % (0.96). Without a group, more
 * is better (demo: 2 MiB 0.97 of cold, 8 MiB 0.92). */
#define MEMCG_MAX_BYTES (2u << 20)
/* Without a memory cgroup, outstanding bytes are bounded as the read path's prefetches are:
 * --horizon of its largest prefetches. */
#define HORIZON_UNIT SPECX_PREFETCH_CHUNK

/* A file mapping the copy speculates on. */
struct region {
    uintptr_t start, end;
    uint64_t offset; /* file offset of start */
    uint64_t chunk;  /* its chunk size */
    int prot, fd;    /* its own protection; the copy's descriptor of the file */
};
static struct region regions[MAX_REGIONS];
static unsigned nregions;

/* [start, end) inside regions[r]. */
struct chunk {
    uintptr_t start, end;
    unsigned r;
};

/* Chunks the copy can touch without a fault (a ring, oldest first). */
static struct open_chunk {
    struct chunk c;
    bool stand_in; /* zeros were mapped over some of it */
} window[WINDOW];
static unsigned window_oldest, window_used;

/* Predictions the program has not touched yet (a ring, oldest first): the horizon. */
static struct prediction {
    struct chunk c;
    uint64_t time_ns;
    bool issued; /* prefetched, not only predicted */
} predictions[SPECX_HORIZON_MAX];
static unsigned pred_oldest, pred_count;
static uint64_t pred_bytes;    /* outstanding */
static uint64_t horizon_bytes; /* that may be outstanding once live */
static bool live;           /* predictions are prefetched */
static unsigned hits;       /* predictions touched in a row */
static pid_t program;       /* the normal process; 0 until specx_fault_speculation_begin */

static uint64_t file_offset(const struct chunk *c)
{
    const struct region *r = &regions[c->r];
    return r->offset + (c->start - r->start);
}

/* The chunk holding address a of a covered mapping; false if none holds it. */
static bool chunk_at(uintptr_t a, struct chunk *c)
{
    for (unsigned i = 0; i < nregions; i++) {
        const struct region *r = &regions[i];
        if (a < r->start || a >= r->end)
            continue;
        uintptr_t aligned = a - (r->offset + (a - r->start)) % r->chunk;
        *c = (struct chunk){ aligned < r->start ? r->start : aligned,
                             aligned + r->chunk > r->end ? r->end : aligned + r->chunk, i };
        return true;
    }
    return false;
}

static bool is_open(uintptr_t a)
{
    for (unsigned i = 0; i < window_used; i++) {
        const struct chunk *c = &window[(window_oldest + i) % WINDOW].c;
        if (a >= c->start && a < c->end)
            return true;
    }
    return false;
}

/* --- the program's progress ------------------------------------------------------------- */

/* Has the program touched a page of c? Its page table maps the pages it touched (and kept). */
static bool touched_by_program(const struct chunk *c)
{
    uint64_t entries[MAX_CHUNK_PAGES];
    size_t got = specx_pagemap_read(c->start, (c->end - c->start) / SPECX_PAGE_SIZE, entries);
    for (size_t i = 0; i < got; i++)
        if (entries[i] & SPECX_PAGEMAP_PRESENT)
            return true;
    return false;
}

static void issue(struct prediction *p)
{
    const struct region *r = &regions[p->c.r];
    uint64_t len = p->c.end - p->c.start;
    /* One call: a chunk is at most what one call reads. */
    specx_start_read(r->fd, file_offset(&p->c), len);
    p->issued = true;
    SPECX_COUNT(fault_prefetches, 1);
    SPECX_COUNT(fault_bytes, len);
}

/* The program touched PROMOTE_HITS predictions in a row: the copy is on its path, so what it
 * predicted and the program has not reached yet is worth reading now. */
static void promote(void)
{
    live = true;
    for (unsigned i = 0; i < pred_count; i++) {
        struct prediction *p = &predictions[(pred_oldest + i) % SPECX_HORIZON_MAX];
        if (!p->issued)
            issue(p);
    }
}

/* Retires the n oldest predictions, which the program has passed; `touched`: the caller saw
 * it touch the last of them (the earlier ones are looked at here). A dry copy is promoted
 * once the program touched PROMOTE_HITS of them in a row. */
static void retire(unsigned n, bool touched)
{
    for (unsigned i = 0; i < n; i++) {
        struct prediction *p = &predictions[pred_oldest];
        bool hit = i + 1 == n ? touched : touched_by_program(&p->c);
        if (hit && p->issued) {
            SPECX_COUNT(fault_used, 1);
            SPECX_COUNT(spec_used_pages, (p->c.end - p->c.start) / SPECX_PAGE_SIZE);
        }
        hits = hit ? hits + 1 : 0;
        pred_oldest = (pred_oldest + 1) % SPECX_HORIZON_MAX;
        pred_count--;
        pred_bytes -= p->c.end - p->c.start;
    }
    if (!live && hits >= PROMOTE_HITS)
        promote();
}

/* Retires the predictions the program has reached, oldest first. */
static void retire_touched(void)
{
    while (pred_count && touched_by_program(&predictions[pred_oldest].c))
        retire(1, true);
}

/* A program that touched a later prediction has passed the earlier ones, touched or not (a
 * chunk the kernel's readahead or fault-around served, or one it never needed). Returns
 * whether any was retired. Looks at every outstanding prediction: only when parked. */
static bool retire_passed(void)
{
    for (unsigned i = pred_count; i-- > 0;)
        if (touched_by_program(&predictions[(pred_oldest + i) % SPECX_HORIZON_MAX].c)) {
            retire(i + 1, true);
            return true;
        }
    return false;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The horizon in bytes: --horizon times HORIZON_UNIT; in a memory cgroup, no more than
 * its share of the limit (horizon.h) and MEMCG_MAX_BYTES. */
static uint64_t byte_horizon(void)
{
    uint64_t limit = specx_control_memory_limit(specx.ctl);
    uint64_t bytes = (uint64_t)specx.horizon * HORIZON_UNIT;
    return limit ? min_u64(bytes, min_u64(specx_horizon_memcg_bytes(limit), MEMCG_MAX_BYTES))
                 : bytes;
}

/* Whether a live copy may predict `next` more bytes: at least one chunk may always be
 * outstanding, or a chunk larger than the horizon would stop the copy for good. */
static bool within_bytes(uint64_t next)
{
    return !live || pred_count == 0 || pred_bytes + next <= horizon_bytes;
}

/* The horizon (§4.1.3): at most --horizon predictions (DRY_HORIZON while dry) of at most
 * horizon_bytes not yet touched by the program, and none added while the oldest is over
 * SPECX_HORIZON_MAX_AGE_NS old (idle page cache is reclaimed within ~10 s here). Sleeps
 * until the program catches up before predicting `next` bytes. */
static void wait_for_program(uint64_t next)
{
    uint64_t nap = PARK_MIN_NS;
    for (;;) {
        retire_touched();
        uint64_t age = pred_count ? specx_now_ns() - predictions[pred_oldest].time_ns : 0;
        if (!specx_horizon_should_park(pred_count, age, live ? specx.horizon : DRY_HORIZON) &&
            within_bytes(next))
            return;
        if (retire_passed())
            continue;
        struct timespec ts = { 0, (long)nap };
        nanosleep(&ts, NULL);
        nap = nap * 2 > PARK_MAX_NS ? PARK_MAX_NS : nap * 2;
    }
}

static bool predicted(const struct chunk *c)
{
    for (unsigned i = 0; i < pred_count; i++)
        if (predictions[(pred_oldest + i) % SPECX_HORIZON_MAX].c.start == c->start)
            return true;
    return false;
}

/* Logs c as a prediction, prefetching it if the copy is live. */
static void predict(const struct chunk *c)
{
    if (predicted(c))
        return;
    struct prediction *p = &predictions[(pred_oldest + pred_count++) % SPECX_HORIZON_MAX];
    *p = (struct prediction){ *c, specx_now_ns(), false };
    pred_bytes += c->end - c->start;
    if (live)
        issue(p);
    else
        SPECX_COUNT(fault_predictions, 1);
}

/* --- the copy's window of open chunks ---------------------------------------------------- */

/* Whether some page of c is absent from the page cache, not even being read: nobody asked
 * for it, so it is the copy's to prefetch. */
static bool nobody_asked(const struct chunk *c)
{
    int64_t n = specx_cached_pages(regions[c->r].fd, file_offset(c), c->end - c->start);
    return n >= 0 && (uint64_t)n < (c->end - c->start) / SPECX_PAGE_SIZE;
}

/* Marks in vec the pages of c whose data is in memory and complete (mincore: a page being
 * read is not); returns whether all are. A chunk it cannot tell is taken as complete: the
 * copy then touches it as its program would. */
static bool complete_pages(const struct chunk *c, unsigned char vec[MAX_CHUNK_PAGES])
{
    size_t n = (c->end - c->start) / SPECX_PAGE_SIZE;
    if (mincore((void *)c->start, c->end - c->start, vec) < 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (!(vec[i] & 1))
            return false;
    return true;
}

/* Opens the complete pages of c with the mapping's protection and maps zeros over the others
 * (the paper's fresh page frame): the copy never waits for a disk read, not even one the
 * program started, or it would only keep pace with the program's own readahead. */
static void stand_in_incomplete(const struct chunk *c, const unsigned char vec[MAX_CHUNK_PAGES])
{
    int prot = regions[c->r].prot;
    size_t n = (c->end - c->start) / SPECX_PAGE_SIZE;
    for (size_t i = 0; i < n;) {
        bool complete = vec[i] & 1;
        size_t j = i + 1;
        while (j < n && (bool)(vec[j] & 1) == complete)
            j++;
        void *at = (void *)(c->start + i * SPECX_PAGE_SIZE);
        size_t len = (j - i) * SPECX_PAGE_SIZE;
        if (complete)
            mprotect(at, len, prot);
        else
            specx_raw_mmap(at, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        i = j;
    }
}

/* Makes a chunk fault again on its next touch: a stand-in gives way to the file again. */
static void close_chunk(const struct open_chunk *o)
{
    const struct region *r = &regions[o->c.r];
    size_t len = o->c.end - o->c.start;
    if (o->stand_in)
        specx_raw_mmap((void *)o->c.start, len, PROT_NONE, MAP_PRIVATE | MAP_FIXED, r->fd,
                       (off_t)file_offset(&o->c));
    else
        mprotect((void *)o->c.start, len, PROT_NONE);
}

static void open_chunk(const struct chunk *c)
{
    if (window_used == WINDOW) {
        close_chunk(&window[window_oldest]);
        window_oldest = (window_oldest + 1) % WINDOW;
        window_used--;
    }
    retire_touched();
    unsigned char vec[MAX_CHUNK_PAGES];
    bool stand_in = !complete_pages(c, vec);
    bool prefetch = stand_in && nobody_asked(c);
    if (prefetch) {
        wait_for_program(c->end - c->start);
        stand_in = !complete_pages(c, vec); /* the program may have read it meanwhile */
    }
    if (stand_in)
        stand_in_incomplete(c, vec); /* before the prefetch makes its pages present */
    else
        mprotect((void *)c->start, c->end - c->start, regions[c->r].prot);
    if (stand_in && prefetch)
        predict(c);
    window[(window_oldest + window_used++) % WINDOW] = (struct open_chunk){ *c, stand_in };
}

/* A fault in a closed chunk opens it; any other fault is the copy's own (it ran on zeros, or
 * the program has a bug), and ends it (its large regions freed first, copy_timer.h). */
static void on_fault(int sig, siginfo_t *si, void *context)
{
    (void)context;
    int saved = errno;
    struct chunk c;
    uintptr_t a = (uintptr_t)si->si_addr;
    if (si->si_code == SEGV_ACCERR && chunk_at(a, &c) && !is_open(a)) {
        specx_copy_active();
        open_chunk(&c);
    } else {
        specx_copy_end_by_signal(sig);
    }
    errno = saved;
}

/* --- covering mappings --------------------------------------------------------------------- */

/* Page-cache files only: shared memory (tmpfs, hugetlbfs) has no disk read to prefetch. */
static bool on_a_disk_file_system(int fd)
{
    struct statfs fs;
    return fstatfs(fd, &fs) == 0 && fs.f_type != TMPFS_MAGIC && fs.f_type != HUGETLBFS_MAGIC;
}

/* Opens the program's page table and installs the fault handler, once, when the first
 * mapping is covered. */
static bool watching(void)
{
    static bool installed;
    if (installed)
        return true;
    if (!specx_pagemap_open(program))
        return false; /* no progress to measure, so no horizon: do not speculate */
    horizon_bytes = byte_horizon();
    struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_RESTART };
    sigemptyset(&sa.sa_mask);
    installed = sigaction(SIGSEGV, &sa, NULL) == 0;
    return installed;
}

/* The chunk of a file on device dev: its read-ahead size, a power of two between MIN_CHUNK
 * and MAX_CHUNK (MIN_CHUNK if unknown). */
static uint64_t chunk_size(dev_t dev)
{
    uint64_t readahead = specx_readahead_bytes(dev), chunk = MIN_CHUNK;
    while (chunk * 2 <= readahead && chunk * 2 <= MAX_CHUNK)
        chunk *= 2;
    return chunk;
}

/* Covers [start, end) of file fd (from offset), which the caller hands over. */
static void cover(uintptr_t start, uintptr_t end, uint64_t offset, int prot, int fd)
{
    if (fd < 0)
        return;
    struct stat st;
    if (nregions == MAX_REGIONS || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        !on_a_disk_file_system(fd) || !watching() || mprotect((void *)start, end - start, PROT_NONE) < 0) {
        close(fd);
        return;
    }
    regions[nregions++] =
        (struct region){ start, end, offset, chunk_size(st.st_dev), prot, specx_fd_out_of_the_way(fd) };
}

/* Files the process maps executable: ELF images, the program's and its libraries'. Static:
 * the copy may be the clone of a multi-threaded program, which must not allocate. */
#define MAX_IMAGES 1024u
static struct image { dev_t dev; unsigned long inode; } images[MAX_IMAGES];
static unsigned nimages;
static bool images_overflowed;

static bool noted_image(const struct specx_mapping *m)
{
    for (unsigned i = 0; i < nimages; i++)
        if (images[i].inode == m->inode && images[i].dev == m->dev)
            return true;
    return false;
}

static void note_image(const struct specx_mapping *m)
{
    if (noted_image(m))
        return;
    if (nimages == MAX_IMAGES)
        images_overflowed = true;
    else
        images[nimages++] = (struct image){ m->dev, m->inode };
}

/* Whether M is a piece of an ELF image (a file that is also mapped executable), or may be.
 * Its read-only pieces are code's data (.rodata: jump tables, constant strings, tables of
 * function pointers), not the program's input: zeros standing in for a page of it send the
 * copy down paths no input takes (PostgreSQL's copies covered the server's 2.4 MiB .rodata; a
 * program that takes its next file from a table of constants had its copies predict argv[0],
 * tests/test_fault_speculation.py). */
static bool is_image(const struct specx_mapping *m)
{
    return noted_image(m) || images_overflowed;
}

void specx_fault_speculation_begin(pid_t normal)
{
    char *buf;
    size_t size;
    program = normal;
    long len = specx_maps_read(&buf, &size);
    if (len < 0)
        return;
    /* An image's executable piece may come before or after its read-only ones: the images
     * first, then what to cover. The first pass leaves each line NUL-terminated. */
    struct specx_mapping m;
    for (char *line = buf; *line;) {
        line = specx_maps_parse_line(line, &m);
        if (m.inode && (m.prot & PROT_EXEC))
            note_image(&m);
    }
    for (char *line = buf; line < buf + len; line += strlen(line) + 1) {
        specx_maps_parse_line(line, &m);
        /* Still shared after the sandbox: the runtime's own regions. */
        if (m.inode && !m.shared && specx_fault_eligible(m.prot, m.end - m.start) &&
            !is_image(&m))
            cover(m.start, m.end, m.offset, m.prot, specx_open_mapped_file(&m));
    }
    munmap(buf, size);
}

void specx_fault_speculation_add(void *addr, size_t len, int prot, int fd, off_t off)
{
    if (!program)
        return;
    uintptr_t end = ((uintptr_t)addr + len + SPECX_PAGE_SIZE - 1) & ~(uintptr_t)(SPECX_PAGE_SIZE - 1);
    cover((uintptr_t)addr, end, (uint64_t)off, prot, fcntl(fd, F_DUPFD_CLOEXEC, 0));
}
