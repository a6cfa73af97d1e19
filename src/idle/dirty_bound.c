/* See dirty_bound.h. */
#include "dirty_bound.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirty_policy.h"
#include "group_fds.h"
#include "ioprio.h"
#include "memcg.h"

/* True if descriptor FD of PID is open for writing. */
static bool open_for_writing(pid_t pid, int fd)
{
    uint64_t pos;
    unsigned flags;
    return specx_fd_info(pid, fd, &pos, &flags) && (flags & O_ACCMODE) != O_RDONLY;
}

/* Starts write-back of what a regular file the background has open for writing holds, and
 * counts it in *ARG. The file is opened anew through /proc (read-only: sync_file_range
 * needs no more), so none of the background's own descriptors is touched. */
static void flush_file(pid_t pid, int fd, const char *target, void *arg)
{
    if (target[0] != '/' || !open_for_writing(pid, fd))
        return;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    /* Regular files only, checked before the open: opening a device can do things. */
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return;
    int own = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (own < 0)
        return;
    if (sync_file_range(own, 0, 0, SYNC_FILE_RANGE_WRITE) == 0)
        ++*(unsigned *)arg;
    close(own);
}

static unsigned flush_group(const struct specx_cgroup *mem)
{
    unsigned files = 0;
    specx_cgroup_each_fd(mem, flush_file, &files);
    return files;
}

/* The thread's requests carry its own class (the block layer takes an unset bio priority from
 * the submitting task), so the write-back it starts waits for the foreground's I/O. */
static void *flusher(void *arg)
{
    struct idle_dirty *d = arg;
    specx_ioprio_set(0, IOPRIO_CLASS_IDLE, 0);
    pthread_mutex_lock(&d->lock);
    while (!d->quit) {
        if (!d->asked) {
            pthread_cond_wait(&d->wake, &d->lock);
            continue;
        }
        d->asked = false;
        pthread_mutex_unlock(&d->lock);
        unsigned files = flush_group(d->mem);
        pthread_mutex_lock(&d->lock);
        d->files_flushed += files;
        d->passes++;
        d->last_pass_files = files;
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

void idle_dirty_start(struct idle_dirty *d, const struct specx_cgroup *mem,
                      struct idle_hold *hold, uint64_t bound, uint64_t now_ns)
{
    *d = (struct idle_dirty){ .mem = mem, .hold = hold, .bound = bound, .enabled = true,
                              .due_ns = now_ns, .watch_fd = -1, .can_watch = true };
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->wake, NULL);
    d->thread_started = bound && pthread_create(&d->thread, NULL, flusher, d) == 0;
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

/* Rests until the group's memory use leaves a window around where it is now. False where
 * the kernel cannot tell (v2), and the bound samples on. */
static bool rest(struct idle_dirty *d)
{
    close_watch(d);
    uint64_t usage = specx_memcg_usage(d->mem), window = idle_dirty_watch_window(d->bound);
    d->watch_fd = specx_memcg_usage_watch(d->mem, usage > window ? usage - window : 0,
                                          usage + window);
    d->resting = d->watch_fd >= 0;
    return d->resting;
}

/* While resting, whether the watch fired (and it is read, so that it can fire again). */
static bool watch_fired(struct idle_dirty *d)
{
    uint64_t count;
    return d->resting && read(d->watch_fd, &count, sizeof count) == sizeof count;
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
    if (calm && !d->resting && d->can_watch)
        d->can_watch = rest(d);
}

void idle_dirty_tick(struct idle_dirty *d, uint64_t now_ns, bool memory_sampled)
{
    if (!d->enabled)
        return;
    bool fired = watch_fired(d);
    bool due = d->resting ? fired || memory_sampled : now_ns >= d->due_ns;
    uint64_t dirty;
    if (!due || !specx_memcg_dirty(d->mem, &dirty))
        return;
    d->samples++;
    if (dirty > d->peak_bytes)
        d->peak_bytes = dirty;
    pthread_mutex_lock(&d->lock);
    bool flushable = d->passes == 0 || d->last_pass_files > 0;
    pthread_mutex_unlock(&d->lock);
    struct idle_dirty_step step = idle_dirty_decide(d->held, dirty, d->bound, flushable);
    set_held(d, step.hold, now_ns);
    if (step.flush && d->thread_started) {
        pthread_mutex_lock(&d->lock);
        d->asked = true;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
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
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
        d->thread_started = false;
    }
}
