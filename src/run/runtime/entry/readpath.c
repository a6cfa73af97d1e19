#include "run/runtime/entry/readpath.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/runtime/copy/copy.h"
#include "run/runtime/copy/copy_read.h"
#include "run/runtime/core/control.h"
#include "run/runtime/core/history.h"
#include "run/runtime/core/runtime.h"
#include "run/runtime/entry/real.h"
#include "kernel/residency.h"

/* A read of resident data that still takes this long waited for pages in flight (a prefetch
 * or the kernel's readahead not complete yet): a cached read takes microseconds. */
#define INFLIGHT_WAIT_NS 500000ull
/* Consecutive reads served by speculative prefetches before the kernel's own readahead is
 * switched off on that descriptor (§4.1.2: the default heuristics are then redundant). */
#define HITS_BEFORE_RANDOM 2
#define ADVISED_FDS 1024
/* Cached reads in a row after which reads are only timed, not checked (with no speculative
 * process about): a program whose data is in memory then pays two clock reads per read
 * instead of two or three system calls (the warm-cache bar, specx/plain <= 1.03). The first
 * slow read ends the run; nothing speculates on it and it is not counted (it may have been a
 * pipe): one unhidden, uncounted stall each time the program returns from cached data to the
 * disk. */
#define HITS_BEFORE_TIMING_ONLY 64u

/* Per-descriptor readahead state we set, tagged with the file so a reused descriptor
 * number starts afresh. Threads reading one descriptor race on it harmlessly: the worst is
 * one advice too many or too few, which changes how the kernel reads ahead, never what. */
struct fd_advice {
    uint64_t dev, ino;
    uint8_t hits;
    bool random;
    bool by_program; /* the program set its own advice: not ours to change */
};
static struct fd_advice advice[ADVISED_FDS];

/* Per-thread state of the read path, read at every read. libspecx.so is loaded with the
 * program (LD_PRELOAD), so its thread-local variables can live in the static TLS block: an
 * access is one %fs-relative load, where the default model for a shared object calls
 * __tls_get_addr (twice per read for `busy` alone). */
#define READ_PATH_TLS __thread __attribute__((tls_model("initial-exec")))

/* Our own syscalls must not leak into errno, and a read from a signal handler that
 * interrupts this code passes straight through. */
static READ_PATH_TLS bool busy;
/* Cached reads in a row, process-wide (threads race on it harmlessly: it is a heuristic). */
static unsigned hits_in_a_row;
/* The descriptor whose last read by this thread waited for pages in flight (-1: none): its
 * next read is where a copy can start with the data the thread has just received
 * (after_wait). */
static READ_PATH_TLS int waited_fd = -1;

static uint64_t iov_total(const struct iovec *iov, int iovcnt)
{
    uint64_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    return total;
}

static void set_advice(int fd, struct fd_advice *a, bool random)
{
    REAL(posix_fadvise)(fd, 0, 0, random ? POSIX_FADV_RANDOM : POSIX_FADV_NORMAL);
    a->random = random;
    if (random)
        SPECX_COUNT(fadv_random, 1);
    else
        SPECX_COUNT(fadv_normal, 1);
}

/* The entry of fd, afresh when the descriptor number now stands for another file. */
static struct fd_advice *advice_of(int fd, const struct stat *st)
{
    struct fd_advice *a = &advice[fd];
    if (a->dev != st->st_dev || a->ino != st->st_ino)
        *a = (struct fd_advice){ .dev = st->st_dev, .ino = st->st_ino };
    return a;
}

void specx_note_program_advice(int fd, int kind)
{
    struct stat st;
    if (kind != POSIX_FADV_NORMAL && kind != POSIX_FADV_RANDOM && kind != POSIX_FADV_SEQUENTIAL)
        return;
    if (specx.role != SPECX_ROLE_NORMAL || fd < 0 || fd >= ADVISED_FDS || busy ||
        !specx_calls_begin())
        return;
    int saved = errno;
    if (fstat(fd, &st) == 0)
        advice_of(fd, &st)->by_program = true;
    errno = saved;
    specx_calls_end();
}

/* §4.1.2: while the speculative process's prefetches keep serving a descriptor, the kernel's
 * readahead on it is redundant; as soon as the program stalls on it again, it is not. */
static void adjust_readahead(int fd, const struct stat *st, bool served_by_spec, bool miss)
{
    if (fd < 0 || fd >= ADVISED_FDS)
        return;
    struct fd_advice *a = advice_of(fd, st);
    if (a->by_program)
        return;
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

/* Whether any stream's log has records (ISSUED) or records the program has not reached
 * (otherwise). */
static bool prefetches_logged(bool issued)
{
    for (unsigned k = 0; specx.ctl && k < SPECX_STREAMS; k++) {
        const struct specx_stream_ctl *stream = &specx.ctl->stream[k];
        uint32_t n = __atomic_load_n(&stream->issued, __ATOMIC_ACQUIRE);
        if (issued ? n != 0 : n != __atomic_load_n(&stream->passed, __ATOMIC_ACQUIRE))
            return true;
    }
    return false;
}

static bool prefetches_issued(void)
{
    return prefetches_logged(true);
}

/* Reads that are only timed cannot be matched against the prefetch log: a speculative
 * process's outstanding prefetches must have been reached (or a fresh process started). */
static bool prefetches_outstanding(void)
{
    return prefetches_logged(false);
}

static bool any_copy(void)
{
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        if (specx.stream[k].copy.pid > 0)
            return true;
    return false;
}

/* The stream of the copy of the calling thread, if it has one; else the process's first
 * (copy/copy.c). Its view is what a stall asks the log. */
static unsigned stream_of_this_thread(void)
{
    unsigned long self = (unsigned long)pthread_self();
    for (unsigned k = 1; k < SPECX_STREAMS; k++)
        if (specx.stream[k].copy.pid > 0 && specx.ctl->stream[k].owner == self)
            return k;
    return 0;
}

/* Only while no speculative process exists: one that has caught up for a moment will go on
 * prefetching, and reads it serves must reach the prefetch log or its horizon never moves
 * (it parks, and the program meets the disk again). */
static bool timing_only(void)
{
    return __atomic_load_n(&hits_in_a_row, __ATOMIC_RELAXED) >= HITS_BEFORE_TIMING_ONLY &&
           !any_copy() && !prefetches_outstanding() && !specx_history_watching();
}

static void count_hit_run(bool miss)
{
    if (miss)
        __atomic_store_n(&hits_in_a_row, 0, __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(&hits_in_a_row, 1, __ATOMIC_RELAXED);
}

/* Matches the read against the speculative process's prefetch log (Table 2's "used" and
 * "unused" prefetches) and moves its horizon on. At a STALL (NULL: the read is none) the same
 * look at the log says what the copy's life cycle will ask of it there. */
static void track_prefetches(struct specx_read *r, const struct stat *st,
                             struct specx_stall *stall)
{
    unsigned long self = (unsigned long)pthread_self();
    unsigned k = stall ? stream_of_this_thread() : 0;
    unsigned n = stall ? specx_log_consume_at_stall(specx.ctl, self, st->st_dev, st->st_ino,
                                                    r->off, r->len, k,
                                                    specx.stream[k].issued_at_start, &stall->log)
                       : specx_log_consume(specx.ctl, self, st->st_dev, st->st_ino, r->off,
                                           r->len);
    if (stall)
        stall->log_seen = true;
    if (n && r->miss)
        SPECX_COUNT(spec_evicted, n);
    else if (n) {
        r->used = n;
        SPECX_COUNT(spec_used, n);
        SPECX_COUNT(spec_used_pages, specx_pages_spanned(r->off, r->len));
    }
    adjust_readahead(r->fd, st, r->used > 0, r->miss);
}

static bool is_direct_io(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_DIRECT);
}

static bool is_regular(int fd, struct stat *st)
{
    return fstat(fd, st) == 0 && S_ISREG(st->st_mode);
}

/* The speculative process emulates every read of a regular file (§4.1.2). */
static enum specx_read_action check_spec_read(struct specx_read *r, int fd)
{
    struct stat st;
    if (!is_regular(fd, &st))
        return SPECX_READ_PASS;
    *r = (struct specx_read){ .fd = fd };
    return SPECX_READ_EMULATE;
}

/* Whether this read of data in memory follows a wait for the kernel's readahead on the same
 * descriptor (docs/design/read-path.md): a sequential reader waits there once per readahead
 * window, which keeps one or two requests in flight; no read of it misses, so without this no
 * copy would run ahead of it. Once per wait. */
static bool after_wait(int fd)
{
    if (fd != waited_fd)
        return false;
    waited_fd = -1;
    return true;
}

/* Whether the copy's life cycle will be asked about this read while a copy runs: a miss, or
 * the read after a wait for readahead on its descriptor (after_wait). */
static bool stall_with_copy(const struct specx_read *r)
{
    return (r->miss || r->fd == waited_fd) && any_copy();
}

/* Whether the read misses is settled by one cachestat over the requested range: when every
 * page is there (the common case, and all of the warm-cache overhead) nothing else is asked.
 * Only a range that looks incomplete needs the fstat that tells a regular file (cachestat
 * answers 0 pages for pipes and devices) and its size (pages past EOF are never cached). */
static enum specx_read_action check_read(struct specx_read *r, int fd, uint64_t want, off_t off)
{
    if (off == SPECX_AT_FILE_OFFSET && (off = lseek(fd, 0, SEEK_CUR)) < 0)
        return SPECX_READ_PASS; /* pipes, sockets, terminals */
    int64_t cached = specx_cached_pages(fd, (uint64_t)off, want);
    if (cached < 0) {
        /* cachestat (and mincore, which has the same rule) tells the page cache's state of
         * a file only to a caller that owns it or may write it: others could use it to spy
         * on each other. Such reads cannot be told from stalls: they pass uncounted. */
        if (errno == EPERM)
            SPECX_COUNT(residency_denied, 1);
        return SPECX_READ_PASS;
    }
    *r = (struct specx_read){ .fd = fd, .off = (uint64_t)off, .len = want };
    struct stat st;
    bool have_st = false;
    if ((uint64_t)cached < specx_pages_spanned(r->off, want)) {
        if (!is_regular(fd, &st))
            return SPECX_READ_PASS;
        have_st = true;
        r->len = specx_clamp_to_eof(r->off, want, (uint64_t)st.st_size);
        r->miss = (uint64_t)cached < specx_pages_spanned(r->off, r->len);
        /* O_DIRECT bypasses the page cache: residency says nothing about it. */
        if (r->miss && is_direct_io(fd))
            return SPECX_READ_PASS;
    }
    SPECX_COUNT(reads, 1);
    count_hit_run(r->miss);
    r->t0 = specx_now_ns();
    struct specx_stall stall = { .fd = fd, .off = r->off, .len = r->len };
    if (prefetches_issued() && (have_st || (have_st = is_regular(fd, &st))))
        track_prefetches(r, &st, stall_with_copy(r) ? &stall : NULL);
    specx_history_note(fd, have_st ? &st : NULL, r->off, r->len, r->miss, r->used > 0);
    if (r->miss) {
        if (specx_copy_on_stall(&stall)) {
            r->skip = true;
            return SPECX_READ_EMULATE;
        }
    } else if (after_wait(fd) && specx_copy_after_wait(&stall)) {
        return SPECX_READ_EMULATE; /* the copy reads it: the data is in memory */
    }
    return SPECX_READ_ACCOUNT;
}

/* check_read, unless the runtime stands aside meanwhile (core/runtime.h, specx_calls_begin). */
static enum specx_read_action checked_read(struct specx_read *r, int fd, uint64_t want, off_t off)
{
    if (!specx_calls_begin())
        return SPECX_READ_PASS;
    enum specx_read_action action = check_read(r, fd, want, off);
    specx_calls_end();
    return action;
}

static enum specx_read_action time_read(struct specx_read *r, int fd)
{
    *r = (struct specx_read){ .fd = fd, .timed = true, .t0 = specx_now_ns() };
    return SPECX_READ_ACCOUNT;
}

enum specx_read_action specx_read_begin(struct specx_read *r, int fd, const struct iovec *iov,
                                        int iovcnt, off_t off)
{
    if (specx.role == SPECX_ROLE_OFF || busy || off < SPECX_AT_FILE_OFFSET)
        return SPECX_READ_PASS;
    busy = true;
    int saved = errno;
    uint64_t want = iov_total(iov, iovcnt);
    enum specx_read_action action;
    if (want == 0)
        action = SPECX_READ_PASS;
    else if (specx.role == SPECX_ROLE_SPEC)
        action = check_spec_read(r, fd);
    else
        action = timing_only() ? time_read(r, fd) : checked_read(r, fd, want, off);
    errno = saved;
    busy = false;
    return action;
}

void specx_read_end(const struct specx_read *r)
{
    if (__atomic_load_n(&specx.role, __ATOMIC_SEQ_CST) == SPECX_ROLE_OFF)
        return; /* it stood aside during the read: no call of its own, not even the clock */
    uint64_t now = specx_now_ns(), waited = now - r->t0;
    /* After the read, never before it: ending an interval reads a few kernel files (and must
     * leave the read's errno as it was). With or without a copy: a stop is lifted only at
     * the end of an interval. The copy's life cycle is entered only then. */
    if (specx.memory_control && specx_control_memory_due(specx.ctl, now) &&
        specx_calls_begin()) {
        int saved = errno;
        specx_copy_watch_memory();
        errno = saved;
        specx_calls_end();
    }
    if (r->timed) {
        /* Not counted: a slow pipe or terminal read is no stall. Check from the next on. */
        if (waited > INFLIGHT_WAIT_NS)
            count_hit_run(true);
        return;
    }
    if (r->miss) {
        SPECX_COUNT(stalls, 1);
        SPECX_COUNT(stall_ns, waited);
    } else if (waited > INFLIGHT_WAIT_NS) {
        waited_fd = r->fd;
        SPECX_COUNT(inflight_waits, 1);
        SPECX_COUNT(inflight_wait_ns, waited);
    } else if (r->used) {
        SPECX_COUNT(spec_complete, r->used);
    }
}

ssize_t specx_read_emulate(const struct specx_read *r, const struct iovec *iov, int iovcnt,
                           off_t off)
{
    if (r->skip)
        return specx_copy_read_stalled(r->fd, r->off, r->len, off < 0);
    return specx_copy_read(r->fd, iov, iovcnt, off);
}
