/* The speculative process's reads (Fraser & Chang 2003 §4.1.2): data in memory is copied,
 * data that is not becomes a non-blocking prefetch and its part of the buffer is left as it
 * was, the (private) file offset advances, and execution goes on without waiting. */
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "readpath.h"
#include "real.h"
#include "residency.h"
#include "runtime.h"
#include "spec.h"

static bool page_resident(int fd, uint64_t off, uint64_t end)
{
    return specx_cached_pages(fd, off, end - off) > 0;
}

/* Copies resident data; a page evicted meanwhile makes this block, which in here only costs
 * the speculative process time. */
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

static void prefetch(int fd, const struct stat *st, uint64_t off, uint64_t len)
{
    specx_horizon_wait(specx.ctl, specx.horizon);
    specx_start_read(fd, off, len);
    specx_log_prefetch(specx.ctl, st->st_dev, st->st_ino, off, len, specx_now_ns());
    SPECX_COUNT(spec_prefetches, 1);
    SPECX_COUNT(spec_bytes, len);
}

/* End of the page holding off, or end if sooner. */
static uint64_t page_end(uint64_t off, uint64_t end)
{
    uint64_t next = (off / SPECX_PAGE_SIZE + 1) * SPECX_PAGE_SIZE;
    return next < end ? next : end;
}

/* Splits [off, off+len) into runs of resident and absent pages. */
static void emulate_range(int fd, const struct stat *st, char *buf, uint64_t off, uint64_t len)
{
    int64_t cached = specx_cached_pages(fd, off, len);
    if (cached == (int64_t)specx_pages_spanned(off, len)) {
        copy_resident(fd, buf, off, len);
        return;
    }
    if (cached == 0) {
        prefetch(fd, st, off, len);
        return;
    }
    uint64_t end = off + len;
    while (off < end) {
        bool resident = page_resident(fd, off, page_end(off, end));
        uint64_t run_end = page_end(off, end);
        while (run_end < end && page_resident(fd, run_end, page_end(run_end, end)) == resident)
            run_end = page_end(run_end, end);
        if (resident)
            copy_resident(fd, buf, off, run_end - off);
        else
            prefetch(fd, st, off, run_end - off);
        buf += run_end - off;
        off = run_end;
    }
}

ssize_t specx_prefetch_read(const struct specx_read *r, const struct iovec *iov, int iovcnt,
                            off_t off)
{
    bool at_offset = off < 0;
    if (r->skip) {
        /* The read that created this process: the program issues it. */
        if (at_offset)
            lseek(r->fd, (off_t)(r->off + r->len), SEEK_SET);
        return (ssize_t)r->len;
    }
    struct stat st;
    if (fstat(r->fd, &st) < 0 || (at_offset && (off = lseek(r->fd, 0, SEEK_CUR)) < 0))
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
