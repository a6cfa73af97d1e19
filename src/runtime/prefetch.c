/* The speculative process's reads (Fraser & Chang 2003 §4.1.2): data in memory is copied,
 * data that is not becomes a non-blocking prefetch and its part of the buffer is left as it
 * was, the (private) file offset advances, and execution goes on without waiting.
 * "In memory" means complete (mincore), not merely present (cachestat counts pages still
 * being read): copying those would make this process wait for the disk like its program. */
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "readpath.h"
#include "real.h"
#include "residency.h"
#include "runtime.h"
#include "spec.h"

/* Pages whose state one mincore call reports (1 MiB). */
#define STEP_PAGES 256u
/* A prefetch covers at least this much (up to EOF). A slow device pays mostly per request
 * (paper2003: 12 ms access, 3 ms to move 128 KiB), so one request of 128 KiB, a FUSE
 * request's maximum, costs about what 4 KiB costs: a 4 KiB stdio refill per request made the
 * speculative process slower than the program's own readahead, and GNU ld's scattered reads
 * of a ~100 KiB object file stalled it once per read until one prefetch covered the file.
 * Like readahead, the size doubles while a descriptor is read sequentially, up to
 * MAX_PREFETCH: the program's descriptor loses its own readahead (POSIX_FADV_RANDOM) once
 * these prefetches serve it. */
#define MIN_PREFETCH (128u * 1024u)
#define MAX_PREFETCH (1024u * 1024u)
#define TRACKED_FDS 1024

/* Per descriptor of this (speculative) process: where its last prefetch ended and how big
 * it was. */
static struct window {
    uint64_t dev, ino, next;
    uint32_t size;
} windows[TRACKED_FDS];

/* How much to prefetch at [off, ...): the readahead-like window. */
static uint64_t prefetch_size(int fd, const struct stat *st, uint64_t off)
{
    if (fd < 0 || fd >= TRACKED_FDS)
        return MIN_PREFETCH;
    struct window *w = &windows[fd];
    bool sequential = w->dev == (uint64_t)st->st_dev && w->ino == (uint64_t)st->st_ino &&
                      w->next == off;
    uint32_t size = MIN_PREFETCH;
    if (sequential)
        size = w->size < MAX_PREFETCH / 2 ? 2 * w->size : MAX_PREFETCH;
    *w = (struct window){ st->st_dev, st->st_ino, 0, size };
    return size;
}

static void window_advanced(int fd, uint64_t end)
{
    if (fd >= 0 && fd < TRACKED_FDS)
        windows[fd].next = end;
}

/* Copies data that is in memory and complete: this cannot block. */
static void copy_resident(int fd, char *buf, uint64_t off, uint64_t len)
{
    while (len > 0) {
        ssize_t n = REAL(pread64)(fd, buf, len, (off_t)off);
        if (n <= 0)
            return;
        buf += n;
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
}

/* Prefetches [off, off+len), widened to the descriptor's window, unless all of that is in
 * memory or on its way (the program's own read, kernel readahead, an earlier prefetch): that
 * must not be waited for either. */
static void fetch_missing(int fd, const struct stat *st, uint64_t off, uint64_t len)
{
    uint64_t window = specx_clamp_to_eof(off, prefetch_size(fd, st, off), (uint64_t)st->st_size);
    if (len < window)
        len = window;
    window_advanced(fd, off + len);
    int64_t cached = specx_cached_pages(fd, off, len);
    if (cached >= 0 && (uint64_t)cached == specx_pages_spanned(off, len))
        return;
    specx_horizon_wait(specx.ctl, specx.horizon);
    specx_start_read(fd, off, len);
    specx_log_prefetch(specx.ctl, st->st_dev, st->st_ino, off, len, specx_now_ns());
    SPECX_COUNT(spec_prefetches, 1);
    SPECX_COUNT(spec_bytes, len);
}

static uint64_t page_start(uint64_t off) { return off & ~(uint64_t)(SPECX_PAGE_SIZE - 1); }

/* One step of at most STEP_PAGES pages: runs of complete pages are copied, the rest fetched. */
static void emulate_step(int fd, const struct stat *st, char *buf, uint64_t off, uint64_t end)
{
    unsigned char vec[STEP_PAGES];
    if (specx_uptodate_pages(fd, off, end - off, vec) < 0) {
        copy_resident(fd, buf, off, end - off); /* cannot tell: read it (may block) */
        return;
    }
    uint64_t first = page_start(off);
    while (off < end) {
        bool uptodate = vec[(off - first) / SPECX_PAGE_SIZE] & 1;
        uint64_t run_end = page_start(off) + SPECX_PAGE_SIZE;
        while (run_end < end && (vec[(run_end - first) / SPECX_PAGE_SIZE] & 1) == uptodate)
            run_end += SPECX_PAGE_SIZE;
        if (run_end > end)
            run_end = end;
        if (uptodate)
            copy_resident(fd, buf, off, run_end - off);
        else
            fetch_missing(fd, st, off, run_end - off);
        buf += run_end - off;
        off = run_end;
    }
}

static void emulate_range(int fd, const struct stat *st, char *buf, uint64_t off, uint64_t len)
{
    uint64_t end = off + len;
    while (off < end) {
        uint64_t step_end = page_start(off) + STEP_PAGES * SPECX_PAGE_SIZE;
        if (step_end > end)
            step_end = end;
        emulate_step(fd, st, buf, off, step_end);
        buf += step_end - off;
        off = step_end;
    }
}

ssize_t specx_prefetch_read(const struct specx_read *r, const struct iovec *iov, int iovcnt,
                            off_t off)
{
    bool at_offset = off < 0;
    struct stat st;
    if (fstat(r->fd, &st) < 0)
        return -1;
    if (r->skip) {
        /* The read that created this process: the program issued it; what follows it in
         * the file is this process's to prefetch. */
        fetch_missing(r->fd, &st, r->off, r->len);
        if (at_offset)
            lseek(r->fd, (off_t)(r->off + r->len), SEEK_SET);
        return (ssize_t)r->len;
    }
    if (at_offset && (off = lseek(r->fd, 0, SEEK_CUR)) < 0)
        return -1;
    uint64_t pos = (uint64_t)off, size = (uint64_t)st.st_size;
    for (int i = 0; i < iovcnt; i++) {
        uint64_t n = specx_clamp_to_eof(pos, iov[i].iov_len, size);
        if (n == 0)
            break;
        emulate_range(r->fd, &st, iov[i].iov_base, pos, n);
        pos += n;
        if (n < iov[i].iov_len)
            break;
    }
    if (at_offset)
        lseek(r->fd, (off_t)pos, SEEK_SET);
    return (ssize_t)(pos - (uint64_t)off);
}
