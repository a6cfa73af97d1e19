/* The copy's reads (copy_read.h). "In memory" means complete (mincore), not merely present
 * (cachestat counts pages still being read): copying those would make this process wait for the disk like its program. */
#include "run/runtime/copy/copy_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/runtime/refork/lazy_memory.h"
#include "run/runtime/running/copy_idle.h"
#include "run/runtime/running/copy_timer.h"
#include "run/runtime/running/memory_watch.h"
#include "run/runtime/running/start_read.h"
#include "run/runtime/core/control.h"
#include "run/runtime/core/runtime.h"
#include "run/runtime/policy/horizon.h"
#include "run/runtime/policy/prefetch.h"
#include "run/runtime/policy/trust.h"
#include "kernel/raw.h"
#include "kernel/residency.h"

/* Pages whose state one mincore call reports (1 MiB). */
#define STEP_PAGES 256u
/* What is prefetched follows the descriptor's access pattern (§4.1.2: the speculative process
 * issues the reads its program would issue, so it needs no readahead window of its own):
 * see specx_prefetch_end. The program's descriptor loses its own readahead
 * (POSIX_FADV_RANDOM) once these prefetches serve it. */
#define TRACKED_FDS 1024

/* Per descriptor of this (speculative) process: its file and where its last read ended. */
static struct stream {
    uint64_t dev, ino, read_end;
} streams[TRACKED_FDS];

/* Records a read of [off, end) on fd and returns where its prefetch ends. Like the kernel's
 * readahead, a read at the start of the file or where the last one ended is sequential. */
static uint64_t prefetch_end(int fd, const struct stat *st, uint64_t off, uint64_t end)
{
    if (fd < 0 || fd >= TRACKED_FDS)
        return end;
    struct stream *s = &streams[fd];
    bool same_file = s->dev == (uint64_t)st->st_dev && s->ino == (uint64_t)st->st_ino;
    bool sequential = off == 0 || (same_file && off == s->read_end);
    *s = (struct stream){ st->st_dev, st->st_ino, end };
    return specx_prefetch_end(sequential, end, (uint64_t)st->st_size);
}

/* Copies data that is in memory and complete: this cannot block. */
static void copy_resident(int fd, char *buf, uint64_t off, uint64_t len)
{
    specx_lazy_prepare_write(buf, (size_t)len); /* the kernel writes there (lazy_memory.h) */
    while (len > 0) {
        ssize_t n = specx_raw_pread(fd, buf, len, (off_t)off);
        if (n <= 0)
            return;
        buf += n;
        off += (uint64_t)n;
        len -= (uint64_t)n;
    }
}

/* The missing ranges of one read, merged while adjacent so that each becomes as few (and as
 * well aligned) device requests as possible. */
struct fetch {
    int fd;
    const struct stat *st;
    uint64_t off, end; /* the range gathered so far (empty: off == end) */
};

/* Prefetches the gathered range unless all of it is in memory or on its way (the program's
 * own read, kernel readahead, an earlier prefetch): that must not be waited for either. */
static void fetch_flush(struct fetch *f)
{
    uint64_t off = f->off, len = f->end - f->off;
    f->off = f->end;
    if (len == 0)
        return;
    int64_t cached = specx_cached_pages(f->fd, off, len);
    if (cached >= 0 && (uint64_t)cached == specx_pages_spanned(off, len))
        return;
    if (!specx_memory_watch()) { /* the memory control stopped speculation */
        specx_memory_given_back();
        specx_copy_end_itself();
    }
    bool dry = specx_trust_dry();
    struct specx_stream_ctl *stream = specx_control_own_stream();
    if (dry && specx_log_pending(stream, f->st->st_dev, f->st->st_ino, off, len))
        return; /* predicted already: what "in flight" is to a live copy (trust.h) */
    /* The bound on what copies keep outstanding where memory is limited is the process's,
     * shared by the copies alive. */
    unsigned live = specx_control_live_copies(specx.ctl);
    uint64_t max_bytes = specx_horizon_memcg_bytes(specx_control_memory_limit(specx.ctl));
    specx_horizon_wait(stream, specx.horizon, len, live > 1 ? max_bytes / live : max_bytes);
    specx_log_prefetch(stream, f->st->st_dev, f->st->st_ino, off, len, specx_now_ns(), dry);
    if (dry) { /* a copy on probation only predicts (trust.h) */
        SPECX_COUNT(spec_predictions, 1);
        return;
    }
    specx_start_read(f->fd, off, len);
    SPECX_COUNT(spec_prefetches, 1);
    SPECX_COUNT(spec_bytes, len);
}

static void fetch_add(struct fetch *f, uint64_t off, uint64_t end)
{
    if (off != f->end) {
        fetch_flush(f);
        f->off = off;
    }
    f->end = end;
}

static uint64_t page_start(uint64_t off) { return off & ~(uint64_t)(SPECX_PAGE_SIZE - 1); }

/* One step of at most STEP_PAGES pages: runs of complete pages are copied, the rest fetched. */
static void emulate_step(struct fetch *f, char *buf, uint64_t off, uint64_t end)
{
    unsigned char vec[STEP_PAGES];
    if (specx_uptodate_pages(f->fd, off, end - off, vec) < 0) {
        copy_resident(f->fd, buf, off, end - off); /* cannot tell: read it (may block) */
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
            copy_resident(f->fd, buf, off, run_end - off);
        else
            fetch_add(f, off, run_end);
        buf += run_end - off;
        off = run_end;
    }
}

static void emulate_range(struct fetch *f, char *buf, uint64_t off, uint64_t len)
{
    uint64_t end = off + len;
    while (off < end) {
        uint64_t step_end = page_start(off) + STEP_PAGES * SPECX_PAGE_SIZE;
        if (step_end > end)
            step_end = end;
        emulate_step(f, buf, off, step_end);
        buf += step_end - off;
        off = step_end;
    }
}

ssize_t specx_copy_read_stalled(int fd, uint64_t off, uint64_t len, bool at_offset)
{
    specx_copy_active();
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -1;
    struct fetch f = { .fd = fd, .st = &st };
    uint64_t end = off + len;
    fetch_add(&f, end, prefetch_end(fd, &st, off, end));
    fetch_flush(&f);
    if (at_offset)
        lseek(fd, (off_t)end, SEEK_SET);
    return (ssize_t)len;
}

ssize_t specx_copy_read(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    bool at_offset = off < 0;
    specx_copy_active();
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -1;
    struct fetch f = { .fd = fd, .st = &st };
    if (at_offset && (off = lseek(fd, 0, SEEK_CUR)) < 0)
        return -1;
    uint64_t pos = (uint64_t)off, size = (uint64_t)st.st_size;
    for (int i = 0; i < iovcnt; i++) {
        uint64_t n = specx_clamp_to_eof(pos, iov[i].iov_len, size);
        if (n == 0)
            break;
        emulate_range(&f, iov[i].iov_base, pos, n);
        pos += n;
        if (n < iov[i].iov_len)
            break;
    }
    if (pos > (uint64_t)off && f.end == pos)
        fetch_add(&f, pos, prefetch_end(fd, &st, (uint64_t)off, pos));
    else if (pos > (uint64_t)off)
        prefetch_end(fd, &st, (uint64_t)off, pos); /* the read's end is in memory */
    fetch_flush(&f);
    if (at_offset)
        lseek(fd, (off_t)pos, SEEK_SET);
    return (ssize_t)(pos - (uint64_t)off);
}
