/* See dirty_bound.h. */
#include "idle/dirty_bound.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idle/closed_files.h"
#include "idle/dirty_policy.h"
#include "idle/hold.h"
#include "idle/isolation.h"
#include "kernel/cgroup.h"
#include "kernel/group_fds.h"
#include "kernel/ioprio.h"
#include "kernel/memcg.h"
#include "idle/priority.h"

struct idle_dirty {
    const struct specx_cgroup *mem; /* the background's memory group */
    struct idle_closed *closed;     /* the files it wrote and closed (the thread's) */
    const struct idle_isolation *isolation; /* NULL: no directory isolated */
    struct idle_hold *hold;
    uint64_t bound;                 /* bytes; 0: none */
    bool enabled, held;
    uint64_t due_ns;                /* the next sample, unless resting */
    /* Resting (dirty_policy.h): the next sample comes with the memory control's, or sooner
     * when WATCH_FD, an eventfd, says the group's memory use moved; -1 where none can be had
     * (CAN_WATCH false: v2, or the kernel refused one). */
    bool resting, can_watch;
    int watch_fd;
    uint64_t calm_since_ns;         /* little unwritten data since; 0: not now */
    /* The thread that starts write-back, woken through WAKE_FD (an eventfd) when a sample asks
     * for a pass over the files open for writing, and by closes while FLUSHING. */
    pthread_t thread;
    bool thread_started;
    int wake_fd;
    pthread_mutex_t lock;
    bool asked, flushing, quit;
    uint64_t passes;                /* write-back passes done */
    unsigned last_pass_files;       /* files the last one wrote back: open, or closed since */
    uint64_t closed_flushed;        /* closed files written back */
    uint64_t closed_at_pass;        /* closed_flushed at the last pass */
    uint64_t passes_at_hold;        /* passes when the hold began */
    /* What it did, for the report. */
    uint64_t peak_bytes, holds, held_ns, held_since_ns, files_flushed, samples;
    bool closed_watched;            /* closes were seen (else left to the flushers) */
    const char *closed_unwatched;   /* why not (closed_files.h), with the bound on */
    uint64_t closed_dropped;        /* closes seen but not kept (closed_files.h) */
};

struct idle_dirty *idle_dirty_new(void)
{
    return calloc(1, sizeof(struct idle_dirty));
}

/* True if descriptor FD of PID is open for writing. */
static bool open_for_writing(pid_t pid, int fd)
{
    uint64_t pos;
    unsigned flags;
    return specx_fd_info(pid, fd, &pos, &flags) && (flags & O_ACCMODE) != O_RDONLY;
}

/* Starts write-back of the regular file the link PATH names (D: a struct idle_dirty). Regular
 * files only, checked before the open: opening a device can do things. Read-only:
 * sync_file_range needs no more. */
static bool start_write_back(const char *path, void *d)
{
    const struct idle_isolation *iso = ((const struct idle_dirty *)d)->isolation;
    char upper[PATH_MAX];
    if (iso && idle_isolation_upper_path(iso, path, upper, sizeof upper))
        path = upper;
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return false;
    bool started = sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) == 0;
    close(fd);
    return started;
}

struct pass {
    struct idle_dirty *d;
    unsigned files;
};

/* A file the background has open for writing, opened anew through /proc, so that none of the
 * background's own descriptors is touched; counted in the pass ARG. */
static void flush_file(pid_t pid, int fd, const char *target, void *arg)
{
    struct pass *p = arg;
    if (target[0] != '/' || !open_for_writing(pid, fd))
        return;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    p->files += start_write_back(path, p->d);
}

static unsigned flush_group(struct idle_dirty *d)
{
    struct pass p = { d, 0 };
    specx_cgroup_each_fd(d->mem, flush_file, &p);
    return p.files;
}

/* The thread works for the background, so at its priority: idle CPU, and the idle I/O class,
 * whose requests wait for the foreground's (the block layer takes an unset bio priority from
 * the submitting task). It starts write-back of the files the background has open when a
 * sample asks, and, while the background has more than a little unwritten data, of the files
 * it wrote and closed (closed_files.h) as soon as they are closed. */
static void *flusher(void *arg)
{
    struct idle_dirty *d = arg;
    idle_priority_lower_self();
    struct pollfd fds[2] = { { .fd = d->wake_fd, .events = POLLIN },
                             { .fd = idle_closed_fd(d->closed), .events = POLLIN } };
    for (;;) {
        uint64_t count;
        poll(fds, 2, -1);
        if (read(d->wake_fd, &count, sizeof count) < 0 && errno != EAGAIN)
            break;
        idle_closed_collect(d->closed);
        pthread_mutex_lock(&d->lock);
        bool quit = d->quit, asked = d->asked, flushing = d->flushing;
        d->asked = false;
        pthread_mutex_unlock(&d->lock);
        if (quit)
            break;
        unsigned closed = flushing ? idle_closed_each(d->closed, start_write_back, d) : 0;
        unsigned open = asked ? flush_group(d) : 0;
        pthread_mutex_lock(&d->lock);
        d->files_flushed += closed + open;
        d->closed_flushed += closed;
        if (asked) {
            d->passes++;
            d->last_pass_files = open + (unsigned)(d->closed_flushed - d->closed_at_pass);
            d->closed_at_pass = d->closed_flushed;
        }
        pthread_mutex_unlock(&d->lock);
    }
    return NULL;
}

/* Wakes the thread (a sample asked for write-back, or it must end). */
static void wake_flusher(struct idle_dirty *d)
{
    uint64_t one = 1;
    if (write(d->wake_fd, &one, sizeof one) < 0)
        return; /* the counter is full: the thread has wakeups pending anyway */
}

void idle_dirty_start(struct idle_dirty *d, const struct specx_cgroup *mem,
                      struct idle_closed *closed, const struct idle_isolation *isolation,
                      struct idle_hold *hold, uint64_t bound, uint64_t now_ns)
{
    *d = (struct idle_dirty){ .mem = mem, .closed = closed, .isolation = isolation,
                              .hold = hold, .bound = bound, .enabled = true,
                              .due_ns = now_ns, .watch_fd = -1, .can_watch = true };
    pthread_mutex_init(&d->lock, NULL);
    d->wake_fd = bound ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
    d->closed_watched = idle_closed_fd(closed) >= 0;
    d->closed_unwatched = closed->unwatched;
    d->thread_started = d->wake_fd >= 0 && pthread_create(&d->thread, NULL, flusher, d) == 0;
}

static void set_held(struct idle_dirty *d, bool held, uint64_t now_ns)
{
    if (held == d->held)
        return;
    d->held = held;
    idle_hold_set(d->hold, IDLE_HOLD_DIRTY, held);
    if (held) {
        d->holds++;
        d->held_since_ns = now_ns;
        pthread_mutex_lock(&d->lock);
        d->passes_at_hold = d->passes;
        pthread_mutex_unlock(&d->lock);
    } else {
        d->held_ns += now_ns - d->held_since_ns;
    }
}

static void close_watch(struct idle_dirty *d)
{
    if (d->watch_fd >= 0)
        close(d->watch_fd);
    d->watch_fd = -1;
    d->resting = false;
}

/* Rests: samples only with the memory control, and, where the kernel can tell (v1 usage
 * thresholds), at once when the group's memory use leaves a window around where it is now.
 * Where it cannot (v2), a writer that starts while the bound rests is seen at the next memory
 * sample, IDLE_SAMPLE_NS later: the price of not waking every IDLE_DIRTY_SLOW_NS for good. */
static void rest(struct idle_dirty *d)
{
    close_watch(d);
    if (d->can_watch) {
        uint64_t usage = specx_memcg_usage(d->mem), window = idle_dirty_watch_window(d->bound);
        d->watch_fd = specx_memcg_usage_watch(d->mem, usage > window ? usage - window : 0,
                                              usage + window);
        d->can_watch = d->watch_fd >= 0;
    }
    d->resting = true;
}

/* While resting, whether the watch fired (and it is read, so that it can fire again). */
static bool watch_fired(struct idle_dirty *d)
{
    uint64_t count;
    return d->resting && d->watch_fd >= 0 &&
           read(d->watch_fd, &count, sizeof count) == sizeof count;
}

/* Whether the bound rests after a sample that found little unwritten data (REST_LEVEL) or
 * not. A fired watch sends it back to the clock until it is calm for IDLE_DIRTY_CALM_NS
 * again: a fast reader moves the use a window every few milliseconds, and a watch set for
 * each would cost more than the samples. The old watch is closed only when one is set anew
 * or at the end: closing it removes its thresholds, which waits for the kernel (2 ms seen)
 * just when a writer may have started. */
static void settle_rest(struct idle_dirty *d, bool rest_level, bool fired, uint64_t now_ns)
{
    if (!rest_level || fired)
        d->resting = false;
    if (!rest_level)
        d->calm_since_ns = 0;
    else if (!d->calm_since_ns || fired)
        d->calm_since_ns = now_ns;
    bool calm = d->calm_since_ns && now_ns - d->calm_since_ns >= IDLE_DIRTY_CALM_NS;
    if (calm && !d->resting)
        rest(d);
}

void idle_dirty_tick(struct idle_dirty *d, uint64_t now_ns, bool memory_sampled)
{
    if (!d->enabled)
        return;
    bool fired = watch_fired(d);
    bool due = d->resting ? fired || memory_sampled : now_ns >= d->due_ns;
    uint64_t dirty, writeback;
    if (!due || !specx_memcg_dirty(d->mem, &dirty, &writeback))
        return;
    d->samples++;
    if (dirty > d->peak_bytes)
        d->peak_bytes = dirty;
    pthread_mutex_lock(&d->lock);
    bool flushable = idle_dirty_hold_helps(d->held, d->passes == 0 || d->last_pass_files > 0,
                                           d->passes > d->passes_at_hold, writeback);
    pthread_mutex_unlock(&d->lock);
    struct idle_dirty_step step = idle_dirty_decide(d->held, dirty, d->bound, flushable);
    set_held(d, step.hold, now_ns);
    if (d->thread_started) {
        pthread_mutex_lock(&d->lock);
        d->asked = step.flush;
        d->flushing = step.flush;
        pthread_mutex_unlock(&d->lock);
        if (step.flush)
            wake_flusher(d);
    }
    /* Memory use moved a window: a writer may be starting, sampled at once again. */
    d->due_ns = now_ns + (fired ? IDLE_DIRTY_FAST_NS : step.next_ns);
    settle_rest(d, step.rest, fired, now_ns);
}

uint64_t idle_dirty_due(const struct idle_dirty *d)
{
    return d->enabled && !d->resting ? d->due_ns : UINT64_MAX;
}

int idle_dirty_fd(const struct idle_dirty *d)
{
    return d->resting ? d->watch_fd : -1;
}

void idle_dirty_stop(struct idle_dirty *d, uint64_t now_ns)
{
    if (!d->enabled)
        return;
    d->enabled = false;
    close_watch(d);
    set_held(d, false, now_ns);
    if (d->thread_started) {
        pthread_mutex_lock(&d->lock);
        d->quit = true;
        pthread_mutex_unlock(&d->lock);
        wake_flusher(d);
        pthread_join(d->thread, NULL);
        d->thread_started = false;
    }
    if (d->wake_fd >= 0)
        close(d->wake_fd);
    d->wake_fd = -1;
    d->closed_dropped = d->closed->dropped;
    idle_closed_stop(d->closed);
}

struct idle_dirty_figures idle_dirty_figures(const struct idle_dirty *d)
{
    return (struct idle_dirty_figures){
        .bound = d->bound, .peak_bytes = d->peak_bytes, .holds = d->holds,
        .held_ns = d->held_ns, .samples = d->samples, .files_flushed = d->files_flushed,
        .closed_flushed = d->closed_flushed, .closed_dropped = d->closed_dropped,
        .closed_watched = d->closed_watched, .closed_unwatched = d->closed_unwatched,
    };
}
