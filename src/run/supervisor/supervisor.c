/* See supervisor.h. */
#include "run/supervisor/supervisor.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kernel/clock.h"
#include "kernel/copy_hazards.h"
#include "kernel/kfile.h"
#include "kernel/memcg.h"
#include "run/supervisor/outside_copy.h"
#include "run/runtime/policy/backoff.h"
#include "run/runtime/policy/horizon.h"
#include "run/runtime/policy/trust.h"

/* A copy that makes no read for this long while not waiting at its horizon is stuck (a lock
 * another thread held at the clone, a Go runtime waiting for threads it does not have): the
 * runtime's bound (running/copy_idle.c). */
#define STUCK_NS (1000ull * 1000 * 1000)
/* How long a thread that stalled may take to come back from its read before the chance to
 * clone it there is let go, and how often it is looked at meanwhile. Generous: beside busy
 * CPUs the supervisor (nice 19) may not look for tens of milliseconds. */
#define RETURN_WAIT_NS (500ull * 1000 * 1000)
#define RETURN_POLL_NS (20ull * 1000)

void supervisor_init(struct supervisor *s, pid_t pid, unsigned horizon)
{
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->horizon = horizon;
    s->copy.oc = (struct outside_copy){ .pidfd = -1, .listener = -1 };
    s->copy.counts = &s->counts.served;
    s->counts.enabled = outside_copy_prepare() == 0;
    if (specx_memcg_limiting(pid, &s->memcg) == 0)
        s->memcg_limit = specx_memcg_limit(&s->memcg);
    specx_trust_reset();
    specx_backoff_reset();
}

/* Bytes the program has read so far (all its threads, all its descriptors). */
static uint64_t program_read(pid_t pid)
{
    char path[64], text[512];
    uint64_t rchar = 0;
    snprintf(path, sizeof path, "/proc/%d/io", pid);
    if (specx_kfile_read(path, text, sizeof text) > 0)
        specx_kfile_key_u64(text, "rchar:", &rchar);
    return rchar;
}

static bool copy_running(const struct supervisor *s)
{
    return s->copy.oc.pid > 0;
}

/* Why a copy ends: what its predictions not reached yet say. */
enum copy_end {
    COPY_DIVERGED, /* the program went elsewhere: they were wrong */
    COPY_REPLACED, /* by a live copy, the program still on its track: not known yet */
    COPY_STUCK,    /* it stopped making calls */
    COPY_GONE,     /* it died by itself, or the program ended */
};

/* Ends the copy and judges it (§6.1): predictions the program reached were worth making,
 * those it went past another way were not. */
static void end_copy(struct supervisor *s, enum copy_end why)
{
    if (!copy_running(s))
        return;
    struct specx_tally t = { .hits = s->copy.log.passed };
    if (why == COPY_DIVERGED)
        t.misses = s->copy.log.n - s->copy.log.passed;
    outside_copy_end(&s->copy.oc);
    specx_trust_judge(t);
    if (specx_backoff_judged(0, s->made_ino, t.hits > 0))
        s->counts.retired = true;
    s->parked = false;
    s->counts.stuck_ended += why == COPY_STUCK;
}

/* Waits for the stalled thread to come back from its read (§9.1: a thread in a FUSE wait is
 * never interrupted; it is cloned with the data it now has). */
static bool wait_running(pid_t pid, pid_t tid)
{
    uint64_t deadline = specx_now_ns() + RETURN_WAIT_NS;
    const struct timespec poll = { 0, (long)RETURN_POLL_NS };
    for (;;) { /* looked at once more after the deadline: a late wake-up is not an answer */
        bool late = specx_now_ns() >= deadline;
        char state = specx_thread_state(pid, tid);
        if (state == 'R')
            return true;
        if (late || state == 0 || state == 'Z' || state == 'X' || state == 'T' || state == 't')
            return false;
        nanosleep(&poll, NULL);
    }
}

static void count_refusal(struct supervisor *s, enum outside_refusal why)
{
    if (why == OUTSIDE_SHARED_MEMORY)
        s->counts.shared_memory++;
    else
        s->counts.not_made++;
}

/* Whether the program's memory cgroup, if it has a limit, is within an eighth of it. A copy's
 * private pages and its prefetches are charged there: no copy lives then, so that the program
 * never meets its limit because of one (the runtime's control, §6, does this with its own
 * accounting; seen from outside, the group's usage is what there is). */
static bool memory_short(const struct supervisor *s)
{
    if (s->memcg_limit == 0)
        return false;
    uint64_t margin = s->memcg_limit / SPECX_HORIZON_MEMCG_SHARE;
    return specx_memcg_usage(&s->memcg) + margin > s->memcg_limit;
}

/* Whether the kernel's view of the program forbids a copy (copy_hazards.h), counted. A
 * thread with a seccomp filter or strict mode is never held: the injected clone, and the
 * calls that seal the copy, are on no list of the program's, and the copy would inherit its
 * filter. Its groups are found afresh each time, on the supervisor's thread while the program
 * runs: a command may move into a group, then exec the program. */
static bool copy_forbidden(struct supervisor *s, pid_t tid)
{
    struct specx_copy_groups groups;
    specx_copy_groups_find(s->pid, &groups);
    switch (specx_copy_hazard(&groups, s->pid, tid)) {
    case SPECX_HAZARD_NONE:
        return false;
    case SPECX_HAZARD_SECCOMP:
        s->counts.seccomp++;
        break;
    case SPECX_HAZARD_UNKNOWN: /* the thread ended since its stall */
        s->counts.not_made++;
        break;
    case SPECX_HAZARD_OOM_GROUP:
        s->counts.oom_group++;
        break;
    case SPECX_HAZARD_PIDS_MAX:
        s->counts.pids_max++;
        break;
    }
    return true;
}

static void make_copy(struct supervisor *s, const struct specx_blocked_read *r)
{
    struct held_thread t;
    if (copy_forbidden(s, r->tid))
        return;
    if (memory_short(s)) {
        s->counts.memory_ended++;
        return;
    }
    if (!outside_copy_can_privatize() && outside_copy_maps_shared_memory(s->pid)) {
        /* refused without holding the program */
        s->counts.shared_memory++;
        return;
    }
    if (specx_thread_traced(s->pid, r->tid)) { /* a debugger: specx stands aside */
        s->counts.traced++;
        return;
    }
    if (!wait_running(s->pid, r->tid)) {
        s->counts.not_made++;
        return;
    }
    int err = held_stop(&t, r->tid);
    if (err) {
        if (err == -EPERM)
            s->counts.traced++; /* one that came in meanwhile */
        else
            s->counts.not_made++; /* refused, or the thread ended meanwhile (ESRCH) */
        return;
    }
    /* A filter may have come in since it was looked at; a stopped thread installs none. */
    if (specx_seccomp_mode(s->pid, r->tid) != 0) {
        held_release(&t);
        s->counts.seccomp++;
        return;
    }
    enum outside_refusal why = outside_copy_make(&t, &s->copy.oc);
    s->counts.held_ns += t.held_ns;
    if (t.held_ns > s->counts.held_max_ns)
        s->counts.held_max_ns = t.held_ns;
    if (why != OUTSIDE_MADE) {
        count_refusal(s, why);
        return;
    }
    s->copy.dry = !specx_trust_live();
    s->copy.read = 0;
    s->copy.horizon = s->horizon;
    s->copy.memcg_bytes = specx_horizon_memcg_bytes(s->memcg_limit);
    predictions_reset(&s->copy.log);
    s->program_read0 = program_read(s->pid);
    s->made_ino = r->ino;
    s->last_call_ns = specx_now_ns();
    s->counts.copies++;
    s->counts.live += !s->copy.dry;
}

/* Whether the copy has not yet read as much as the program since the clone. A copy starts
 * where the program's read ended, not (as the runtime's) where it began: the program's next
 * stall finds it behind, not astray, and that stall is its time to run ahead. */
static bool copy_behind(const struct supervisor *s)
{
    return s->copy.read <= program_read(s->pid) - s->program_read0;
}

/* A thread of the program has just blocked in a read R. Only the copy's own thread says whether
 * it diverged (docs/design/read-path.md): the other threads' reads come from the same queue of work. */
static void on_stall(struct supervisor *s, const struct specx_blocked_read *r)
{
    if (copy_running(s)) {
        bool predicted = predictions_stalled_at(&s->copy.log, r->ino, r->off);
        if (predicted)
            s->counts.stalls_predicted++;
        else
            s->counts.stalls_unpredicted++;
        struct specx_tally so_far = { .hits = s->copy.log.passed };
        bool promote = predicted && s->copy.dry && specx_trust_earned(so_far);
        if (r->tid != s->copy.oc.from_tid || (predicted && !promote) ||
            (!predicted && copy_behind(s)))
            return;
        end_copy(s, predicted ? COPY_REPLACED : COPY_DIVERGED);
    } else {
        s->counts.stalls_unpredicted++;
    }
    if (s->counts.retired || specx_backoff_skip(0, r->ino)) {
        s->counts.backed_off++;
        s->counts.retired = specx_backoff_retired();
        return;
    }
    make_copy(s, r);
}

void supervisor_sampled(void *p, const struct specx_blocked_read *r, const bool *fresh, int n)
{
    struct supervisor *s = p;
    if (!s->counts.enabled)
        return;
    for (int i = 0; i < n; i++)
        if (fresh[i])
            on_stall(s, &r[i]);
    if (!copy_running(s))
        return;
    predictions_pass_read(&s->copy.log, program_read(s->pid) - s->program_read0);
    if (s->parked && serve_call(&s->copy, &s->parked_req)) {
        s->parked = false;
        s->last_call_ns = specx_now_ns();
    }
    if (!s->parked && specx_now_ns() - s->last_call_ns > STUCK_NS) {
        end_copy(s, COPY_STUCK);
    } else if (memory_short(s)) {
        end_copy(s, COPY_GONE); /* reaped: its memory is given back before the next sample */
        s->counts.memory_ended++;
    }
}

/* Serves the copy's next call, if one comes before DEADLINE (one already waiting, if that
 * has passed); false at the deadline. */
static bool serve_next(struct supervisor *s, const struct timespec *deadline)
{
    struct timespec now, left;
    clock_gettime(CLOCK_MONOTONIC, &now);
    left.tv_sec = deadline->tv_sec - now.tv_sec;
    left.tv_nsec = deadline->tv_nsec - now.tv_nsec;
    if (left.tv_nsec < 0) {
        left.tv_nsec += 1000000000L;
        left.tv_sec--;
    }
    bool late = left.tv_sec < 0;
    if (late)
        left = (struct timespec){ 0, 0 };
    struct pollfd pfd = { .fd = s->copy.oc.listener, .events = POLLIN };
    int ready = ppoll(&pfd, 1, &left, NULL);
    if (ready < 0)
        return errno == EINTR && !late;
    if (ready == 0)
        return false;
    if (!(pfd.revents & POLLIN)) { /* the copy has ended by itself */
        end_copy(s, COPY_GONE);
        return true;
    }
    struct seccomp_notif req;
    memset(&req, 0, sizeof req);
    if (ioctl(s->copy.oc.listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
        return true; /* its call ended first (the copy was killed) */
    s->last_call_ns = specx_now_ns();
    if (!serve_call(&s->copy, &req)) {
        s->parked = true;
        s->parked_req = req;
    }
    return !late;
}

void supervisor_wait_until(void *p, const struct timespec *deadline)
{
    struct supervisor *s = p;
    while (copy_running(s) && !s->parked)
        if (!serve_next(s, deadline))
            return;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline, NULL) == EINTR)
        ;
}

void supervisor_ended(void *p)
{
    end_copy(p, COPY_GONE);
}

