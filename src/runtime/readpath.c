#include "readpath.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "residency.h"
#include "runtime.h"
#include "spec.h"

/* A read of resident data that still takes this long waited for pages in flight (a prefetch
 * or the kernel's readahead not complete yet): a cached read takes microseconds. */
#define INFLIGHT_WAIT_NS 500000ull
/* Consecutive reads served by speculative prefetches before the kernel's own readahead is
 * switched off on that descriptor (§4.1.2: the default heuristics are then redundant). */
#define HITS_BEFORE_RANDOM 2
#define ADVISED_FDS 1024

/* Per-descriptor readahead state we set, tagged with the file so a reused descriptor
 * number starts afresh. */
struct fd_advice {
    uint64_t dev, ino;
    uint8_t hits;
    bool random;
};
static struct fd_advice advice[ADVISED_FDS];

/* Our own syscalls must not leak into errno, and a read from a signal handler that
 * interrupts this code passes straight through. */
static __thread bool busy;

static uint64_t iov_total(const struct iovec *iov, int iovcnt)
{
    uint64_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    return total;
}

static void set_advice(int fd, struct fd_advice *a, bool random)
{
    posix_fadvise(fd, 0, 0, random ? POSIX_FADV_RANDOM : POSIX_FADV_NORMAL);
    a->random = random;
    if (random)
        SPECX_COUNT(fadv_random, 1);
    else
        SPECX_COUNT(fadv_normal, 1);
}

/* §4.1.2: while the speculative process's prefetches keep serving a descriptor, the kernel's
 * readahead on it is redundant; as soon as the program stalls on it again, it is not. */
static void adjust_readahead(int fd, const struct stat *st, bool served_by_spec, bool miss)
{
    if (fd < 0 || fd >= ADVISED_FDS)
        return;
    struct fd_advice *a = &advice[fd];
    if (a->dev != st->st_dev || a->ino != st->st_ino)
        *a = (struct fd_advice){ .dev = st->st_dev, .ino = st->st_ino };
    if (served_by_spec) {
        if (a->hits < HITS_BEFORE_RANDOM)
            a->hits++;
        if (a->hits >= HITS_BEFORE_RANDOM && !a->random)
            set_advice(fd, a, true);
    } else if (miss) {
        a->hits = 0;
        if (a->random)
            set_advice(fd, a, false);
    }
}

/* Matches the read against the speculative process's prefetch log (Table 2's "used" and
 * "unused" prefetches) and moves its horizon on. */
static void track_prefetches(struct specx_read *r, const struct stat *st)
{
    if (!specx.ctl || !__atomic_load_n(&specx.ctl->issued, __ATOMIC_ACQUIRE))
        return;
    unsigned n = specx_log_consume(specx.ctl, st->st_dev, st->st_ino, r->off, r->len);
    if (n && r->miss)
        SPECX_COUNT(spec_evicted, n);
    else if (n) {
        r->used = n;
        SPECX_COUNT(spec_used, n);
    }
    adjust_readahead(r->fd, st, r->used > 0, r->miss);
}

static bool is_direct_io(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_DIRECT);
}

static enum specx_read_action check_read(struct specx_read *r, int fd, uint64_t want, off_t off)
{
    struct stat st;
    if (want == 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return SPECX_READ_PASS;
    if (specx.role == SPECX_ROLE_SPEC) {
        *r = (struct specx_read){ .fd = fd };
        return SPECX_READ_EMULATE;
    }
    if (off < 0 && (off = lseek(fd, 0, SEEK_CUR)) < 0)
        return SPECX_READ_PASS;
    uint64_t len = specx_clamp_to_eof((uint64_t)off, want, (uint64_t)st.st_size);
    int64_t cached = len ? specx_cached_pages(fd, (uint64_t)off, len) : -1;
    if (cached < 0)
        return SPECX_READ_PASS;
    *r = (struct specx_read){ .fd = fd, .off = (uint64_t)off, .len = len,
                              .miss = (uint64_t)cached < specx_pages_spanned((uint64_t)off, len) };
    /* O_DIRECT bypasses the page cache: residency says nothing about it. */
    if (r->miss && is_direct_io(fd))
        return SPECX_READ_PASS;
    SPECX_COUNT(reads, 1);
    r->t0 = specx_now_ns();
    track_prefetches(r, &st);
    if (r->miss) {
        const struct specx_stall stall = { fd, r->off, r->len };
        if (specx_spec_on_stall(&stall)) {
            r->skip = true;
            return SPECX_READ_EMULATE;
        }
    }
    return SPECX_READ_ACCOUNT;
}

enum specx_read_action specx_read_begin(struct specx_read *r, int fd, const struct iovec *iov,
                                        int iovcnt, off_t off)
{
    if (specx.role == SPECX_ROLE_OFF || busy)
        return SPECX_READ_PASS;
    busy = true;
    int saved = errno;
    enum specx_read_action action = check_read(r, fd, iov_total(iov, iovcnt), off);
    errno = saved;
    busy = false;
    return action;
}

void specx_read_end(const struct specx_read *r)
{
    uint64_t waited = specx_now_ns() - r->t0;
    if (r->miss) {
        SPECX_COUNT(stalls, 1);
        SPECX_COUNT(stall_ns, waited);
    } else if (waited > INFLIGHT_WAIT_NS) {
        SPECX_COUNT(inflight_waits, 1);
        SPECX_COUNT(inflight_wait_ns, waited);
    } else if (r->used) {
        SPECX_COUNT(spec_complete, r->used);
    }
}
