#include "run/runtime/copy/copy.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "run/runtime/copy/copy_ref.h"
#include "run/runtime/faults/fault_speculation.h"
#include "run/runtime/refork/lazy_memory.h"
#include "run/runtime/running/copy_idle.h"
#include "run/runtime/running/copy_timer.h"
#include "run/runtime/running/memory_watch.h"
#include "run/runtime/running/start_read.h"
#include "kernel/copy_hazards.h"
#include "run/runtime/core/control.h"
#include "run/runtime/core/runtime.h"
#include "kernel/ioprio.h"
#include "run/runtime/policy/backoff.h"
#include "run/runtime/policy/prefetch.h"
#include "run/runtime/policy/stall.h"
#include "run/runtime/policy/trust.h"
#include "kernel/raw.h"
#include "kernel/process_start.h"
#include "kernel/residency.h"
#include "run/runtime/sandbox/sandbox.h"

/* How long the program waits for a new speculative process to privatize its state before
 * going on with its own read; it was already issued, so the wait hides in the disk's time. */
#define READY_TIMEOUT_NS (20ull * 1000000ull)
/* While it waits, the program looks this often whether its own read has completed (§5.1: a
 * refork must not delay the program beyond its own I/O). */
#define READY_SLICE_NS (100ull * 1000ull)
/* A copy that has not entered its sandbox after this long is stuck (in a file system that does
 * not answer, say) and is replaced at the next stall; see copy_entering. */
#define ENTRY_LIMIT_NS (1000ull * 1000000ull)

/* A stream beside the first gets a copy of its own only once the first's copy has shown that
 * it follows its own thread alone: this many of its records read by that thread, none by
 * another (followed_alone). A pool's copy runs through the pool's one queue, and the reads
 * of every thread consume its records within a few files. */
#define STREAM_EVIDENCE 4u
/* The regions the last clone left out (--refork=fast); the new copy inherits the list. */
static struct specx_lazy_set lazy_set;
/* The cloning thread's signal mask, which the copy takes back once sealed (clone_speculative). */
static sigset_t mask_at_clone;
/* This process's groups whose files may forbid a copy (copy_forbidden), found with its control
 * region. */
static struct specx_copy_groups copy_groups;

static unsigned index_of(const struct specx_stream *s)
{
    return (unsigned)(s - specx.stream);
}

/* What the copy of S shares with the program. */
static struct specx_stream_ctl *ctl_of(const struct specx_stream *s)
{
    return &specx.ctl->stream[index_of(s)];
}

/* The program no longer has the copy of S: the memory control's lock (running/memory_watch.c)
 * no longer counts it alive. */
static void forget_copy(struct specx_stream *s)
{
    s->copy = (struct specx_copy_ref){ 0 };
    if (specx.ctl)
        __atomic_store_n(&ctl_of(s)->copy_pid, 0, __ATOMIC_RELAXED);
}

/* Judges the copy that just ended or is about to be replaced, by what its predictions were
 * worth to the program (trust.h), T being their tally (facts_at): a copy none of whose
 * records the program read was useless, whether it prefetched nothing (it died of the data it
 * could not read: SQLite's page check, GNU ld's object headers) or prefetched wrongly (pointer
 * chasing). The stall at file ST that judges it passes without a new copy with STALL_PASSES
 * (counted against the back-off, backoff.h). Returns the mode of the next copy (trust.h). */
static bool judge_copy(const struct specx_stream *s, struct specx_tally t, const struct stat *st,
                       bool stall_passes)
{
    bool next_dry = specx_trust_judge(t);
    if (t.hits > 0)
        SPECX_COUNT(spec_judged_useful, 1);
    struct specx_judgment judged = { s->dev, s->ino, t.hits > 0 };
    if (specx_backoff_settle(&judged, (uint64_t)st->st_dev, (uint64_t)st->st_ino, stall_passes)) {
        __atomic_fetch_or(&specx.slot->flags, SPECX_SLOT_NEVER_PREDICTED, __ATOMIC_RELAXED);
        specx_log("pid %d: %u copies in a row predicted no read: no more copies", specx.pid,
                  SPECX_RETIRE_AFTER);
    }
    specx_log("pid %d: %s copy of stream %u judged: %u predictions read, %u not", specx.pid,
              s->dry ? "dry" : "live", index_of(s), t.hits, t.misses);
    return next_dry;
}

#define DYING (sizeof specx.dying / sizeof specx.dying[0])

/* Reaps the killed copies that have died by now (with WAIT, all of them, once they die) and,
 * with S, the copy of S if it has ended by itself (it is then forgotten): one call for all. */
static void reap(struct specx_stream *s, bool wait)
{
    SPECX_COUNT(spec_ended, specx_copy_reap(s ? &s->copy : NULL, specx.dying, DYING, wait));
    if (s && s->copy.pid <= 0)
        forget_copy(s);
}

/* Whether the program's memory is bounded (a memory cgroup limit: running/memory_watch.h).
 * There a killed copy's memory is given back before the program goes on: a killed process
 * frees it in its own exit, at its own CPU priority, and a copy's is SCHED_IDLE, so beside
 * busy CPUs that takes seconds. Meanwhile the group is still charged for the copy's pages, yet
 * the OOM killer no longer sees the copy (an exiting process has let go of its memory map): a
 * program that allocates then is the only candidate, and is killed (docs/design/copies.md).
 * Without a limit the program does not pay for that release: the copy's private memory (a
 * PostgreSQL copy's privatized shared buffers, 128 MiB) takes milliseconds to free. */
static bool memory_bounded(void)
{
    return specx_control_memory_limit(specx.ctl) != 0;
}

/* Kills the speculative process without waiting for it to die: one blocked in a FUSE request
 * the server already has dies only when the request completes (the kernel waits it out), and
 * the program must not wait for that. The raw clone has exit signal 0: only __WALL reaps it.
 * Its memory is given back at once where memory is bounded, or the memory control asks
 * (STOPPED_FOR_MEMORY: it stopped speculation). */
static void kill_copy(struct specx_stream *s, bool stopped_for_memory)
{
    struct specx_copy_ref copy = s->copy;
    if (copy.pid <= 0)
        return;
    enum specx_copy_end end = specx_copy_end(copy, memory_bounded() || stopped_for_memory);
    forget_copy(s); /* after the kill: the copy runs no instruction after it */
    if (end != SPECX_COPY_GONE && stopped_for_memory)
        specx_memory_given_back();
    if (end != SPECX_COPY_DYING) {
        SPECX_COUNT(spec_ended, 1); /* reaped, or reaped already by the program */
        return;
    }
    for (;;) {
        for (size_t i = 0; i < DYING; i++)
            if (!specx.dying[i].pid) {
                specx.dying[i] = copy;
                return;
            }
        reap(NULL, true);
    }
}

/* One thread of the program at a time manages the copy: whichever stalls. A thread
 * that finds another at it goes on with its read unaided, since waiting would only lengthen its
 * stall. specx.manager holds the manager's tid (0: none), so that an exit or exec from a
 * signal handler that interrupted the manager does not wait for itself. */
static bool manage_try(void)
{
    pid_t none = 0;
    return __atomic_compare_exchange_n(&specx.manager, &none, gettid(), false,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Waits for the manager to finish; false if the manager is this very thread. */
static bool manage_wait(void)
{
    pid_t self = gettid();
    for (;;) {
        pid_t none = 0;
        if (__atomic_compare_exchange_n(&specx.manager, &none, self, false, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return true;
        if (none == self)
            return false;
        sched_yield();
    }
}

static void manage_end(void)
{
    __atomic_store_n(&specx.manager, 0, __ATOMIC_RELEASE);
}

/* Stops every copy of the process. */
static void stop_copy(void)
{
    bool stopped_for_memory = specx_memory_stopped();
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        kill_copy(&specx.stream[k], stopped_for_memory);
    reap(NULL, true);
}

/* An exec from a signal handler that interrupted this thread's own management of the copy
 * leaves the copy running; it is sandboxed and ends itself once idle (copy_idle.h). */
void specx_copy_stop(void)
{
    if (getpid() != specx.pid || !manage_wait())
        return;
    stop_copy();
    manage_end();
}

/* Stands aside for the rest of this process image (specx_copy_stand_aside): no copy, and every
 * wrapper passes straight through, so that the program's seccomp filter or strict mode never
 * meets a system call of the runtime's. */
static void stand_aside(void)
{
    __atomic_store_n(&specx.role, SPECX_ROLE_OFF, __ATOMIC_SEQ_CST);
    specx.spec_allowed = false;
    __atomic_fetch_or(&specx.slot->flags, SPECX_SLOT_SECCOMP, __ATOMIC_RELAXED);
}

/* Before the program's filter goes in, while the calls that stop a copy are still allowed.
 * A vfork child shares the program's state but is not the program: it leaves it alone (its
 * exec's new image looks for the filter itself). */
void specx_copy_stand_aside(void)
{
    if (specx.role != SPECX_ROLE_NORMAL || getpid() != specx.pid)
        return;
    stand_aside();
    /* A handler that interrupted this thread's own management of the copy cannot wait for it:
     * the copy is left to end itself once idle (copy_idle.h), sandboxed. */
    if (manage_wait()) {
        stop_copy();
        manage_end();
    }
    specx_calls_drain();
}

/* Turns speculation off for the rest of this process image, recording why in the slot, and
 * stops the copy. Called by the manager. */
static void disable_speculation(enum specx_slot_flag why)
{
    specx.spec_allowed = false;
    __atomic_fetch_or(&specx.slot->flags, why, __ATOMIC_RELAXED);
    stop_copy();
}

/* A speculative process that ended by itself (it ran to the program's end, §4.1.3, or died of
 * the garbage it read in place of data not in memory) is reaped at the next stall, with the
 * killed ones that have died by now; returns whether the copy still runs. */
static bool copy_still_running(struct specx_stream *s)
{
    reap(s, false);
    return s->copy.pid > 0;
}

/* A copy the program stopped waiting for (READY_TIMEOUT_NS) may still be entering its
 * sandbox, which takes a file-system round trip or more per open descriptor: 60 ms for GNU
 * ld's 560 objects on FUSE, longer than the program goes between stalls. Killing and
 * re-creating it at each stall would only start that over (and cost the program a clone and
 * the wait each time): it is left to get going. */
static bool copy_entering(const struct specx_stream *s)
{
    const struct specx_stream_ctl *ctl = ctl_of(s);
    return __atomic_load_n(&ctl->ready, __ATOMIC_ACQUIRE) != ctl->generation &&
           specx_now_ns() - s->born_ns < ENTRY_LIMIT_NS;
}

/* A copy that cannot complete its sandbox ends before it runs any program code. */
static _Noreturn void fail_to_enter(void)
{
    specx_control_report_ready(specx_control_own_stream(), SPECX_READY_FAILED);
    _exit(127);
}

/* In the new process: sever it from the program's life (§4.1.1), then seal it in the sandbox
 * before it runs any program code. Its priority is lowered by the program once it is sealed
 * (demote_copy): entering the sandbox at SCHED_IDLE took tens of milliseconds on a busy
 * machine, all of it spent by the program waiting for the copy to be ready. */
static void become_speculative(pid_t program)
{
    specx.role = SPECX_ROLE_SPEC;
    memset(specx.stream, 0, sizeof specx.stream); /* the program's copies, not its own */
    struct specx_stream_ctl *own = specx_control_own_stream();
    /* Alive, before its timers can take the memory control's lock (memory_watch.c). */
    __atomic_store_n(&own->copy_pid, (int32_t)getpid(), __ATOMIC_RELAXED);
    specx_raw_syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != program)
        _exit(0);
    /* Its own process group: terminal and job-control signals aimed at the program's group
     * must not run the program's handlers a second time in here. */
    setpgid(0, 0);
    specx_copy_idle_arm();
    specx_memory_watch_arm();
    specx_copy_crash_arm();
    const struct specx_region keep[] = {
        { specx.ctl, sizeof *specx.ctl },
        { specx.slot, SPECX_STATS_PAGE },
    };
    /* The left-out regions are filled from the program only once the copy is sealed: the
     * filter allows userfaultfd (the copy's own memory). */
    bool copied_shared = false;
    if (specx_sandbox_snapshot(keep, sizeof keep / sizeof keep[0], &copied_shared) < 0)
        fail_to_enter();
    if (copied_shared)
        __atomic_store_n(&own->snapshot_late, 1, __ATOMIC_RELAXED);
    specx_control_report_snapshot(own, own->generation);
    if (specx_sandbox_seal(&own->passed) < 0)
        fail_to_enter();
    /* Sealed: a signal that came since the clone (one aimed at the program's process group
     * before setpgid, one sent to every process of the program's name) runs its handler
     * here only now, where it can change nothing outside the copy. */
    pthread_sigmask(SIG_SETMASK, &mask_at_clone, NULL);
    if (specx_lazy_attach(&lazy_set) < 0)
        fail_to_enter();
    specx_control_report_ready(own, own->generation);
    specx_fault_speculation_begin(program);
}

/* The copy only uses what the program leaves idle (§4.1.3): the CPU when nothing else is
 * runnable, the disk in the idle I/O class. */
static void demote_copy(const struct specx_stream *s)
{
    struct sched_param idle = { 0 };
    sched_setscheduler(s->copy.pid, SCHED_IDLE, &idle);
    specx_ioprio_set(s->copy.pid, IOPRIO_CLASS_IDLE, 0);
}

/* Threads made inside libc (C11 thrd_create, SIGEV_THREAD timers) or by a library constructor
 * never pass through a pthread_create wrapper. /proc/self/task links one directory per thread
 * besides "." and ".."; stat opens no descriptor. */
static bool single_threaded(void)
{
    struct stat task;
    return stat("/proc/self/task", &task) == 0 && task.st_nlink == 3;
}

/* The report's peak of copies running at once in this process (one per stream). */
static void count_copies_running(void)
{
    uint64_t running = 0;
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        running += specx.stream[k].copy.pid > 0;
    uint64_t peak = __atomic_load_n(&specx.slot->copies_peak, __ATOMIC_RELAXED);
    while (running > peak &&
           !__atomic_compare_exchange_n(&specx.slot->copies_peak, &peak, running, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* Clones the program as it is now; with --refork=fast its large anonymous regions are left
 * out and filled in the copy on demand (lazy_memory.h, §5.1-5.2), but only while the program
 * has one thread: MADV_DONTFORK is the process's, and another thread's fork in the meantime
 * would give its child holes where the program has memory. Returns true in the speculative
 * process. */
static bool clone_speculative(struct specx_stream *s, bool dry)
{
    struct specx_stream_ctl *ctl = ctl_of(s);
    ctl->ready = 0;
    if (++ctl->generation == SPECX_READY_FAILED || ctl->generation == 0)
        ctl->generation = 1;
    s->issued_at_start = __atomic_load_n(&ctl->issued, __ATOMIC_ACQUIRE);
    s->dry = dry;
    /* Who reads its records is counted from here (followed_alone). */
    ctl->owner = (unsigned long)pthread_self();
    __atomic_store_n(&ctl->owner_read, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ctl->others_read, 0, __ATOMIC_RELAXED);
    pid_t program = getpid();
    /* Every signal is blocked from here: in the program while regions are left out of its
     * forks (a handler that forked meanwhile would give its child holes), in the copy until
     * it is sealed (become_speculative: until then it shares the program's descriptors,
     * process group and handlers, and a handler run there could write, signal or read input
     * as the program). The program's own signals wait the clone's time at most. */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &mask_at_clone);
    lazy_set.n = 0;
    if (single_threaded()) {
        specx_lazy_exclude(&lazy_set);
    } else {
        __atomic_fetch_or(&specx.slot->flags, SPECX_SLOT_THREADED, __ATOMIC_RELAXED);
    }
    /* Raw clone, exit signal 0: no SIGCHLD, invisible to the program's wait(-1), and no
     * pthread_atfork handlers of the program run for it. Made by a thread of a multi-threaded
     * program, it copies that thread alone, as fork does. CLONE_FILES: the copy starts with
     * the program's table instead of a copy of it, and takes one of its own at once holding
     * none of the program's descriptions (privatize.h). */
    pid_t thread = (pid_t)specx_raw_syscall(SYS_gettid);
    long pid = specx_raw_syscall(SYS_clone, (unsigned long)CLONE_FILES, NULL, NULL, NULL, 0UL);
    if (pid == 0) {
        specx.own_stream = index_of(s);
        if (specx_detach_fds() < 0)
            fail_to_enter();
        specx_control_report_detached(ctl, ctl->generation);
        if (specx_privatize_fds(program, thread) < 0)
            fail_to_enter();
        if (specx_lazy_reserve(&lazy_set, program) < 0)
            _exit(127);
        return true;
    }
    if (lazy_set.n > 0)
        specx_lazy_restore(&lazy_set);
    pthread_sigmask(SIG_SETMASK, &mask_at_clone, NULL);
    SPECX_COUNT(refork_fast, lazy_set.n > 0);
    if (pid < 0)
        return false;
    s->copy = (struct specx_copy_ref){ (pid_t)pid, specx_process_start_time((pid_t)pid) };
    __atomic_store_n(&ctl->copy_pid, (int32_t)pid, __ATOMIC_RELAXED);
    s->thread = specx.manager; /* this thread: only the manager clones */
    SPECX_COUNT(spec_created, 1);
    if (s->dry)
        SPECX_COUNT(spec_dry, 1);
    count_copies_running();
    return false;
}

/* The read the program stalled on; once its data has arrived a refork would delay the
 * program (kernel/residency.h, specx_range_arrived). */
static struct specx_file_range own_read(const struct specx_stall *stall)
{
    return (struct specx_file_range){ stall->fd, stall->off, stall->len };
}

/* Whether this process's copies take part of their snapshot in the sandbox rather than at
 * the clone: shared memory that cannot be mapped again privately is copied there (privatize.h),
 * and what the program writes into it meanwhile tears the copy's view of it. PostgreSQL's
 * buffer pool is such memory: a backend's copies, made after a wait for readahead while the
 * backend went on, found buffers the backend had begun reading after the clone and waited for
 * them (an epoll_wait on a descriptor the sandbox had closed: "epoll_wait() failed", then
 * abort). Their copies' snapshot is therefore awaited (at most READY_TIMEOUT_NS): the copy
 * privatizes its shared memory first (sandbox.h) and the program goes on once it has. */
static bool snapshot_taken_late(void)
{
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        if (__atomic_load_n(&specx.ctl->stream[k].snapshot_late, __ATOMIC_RELAXED))
            return true;
    return false;
}

/* Waits for the new process to start, in one call (core/control.h): first until it let go of
 * the program's descriptors, which until then it holds: a close by the program meanwhile would
 * not end a pipe or connection or release a flock. Then until it is sandboxed: until then it
 * takes the program's file offsets as they are, and it should not find them moved. At a stall
 * that wait is preemptible (§5.1): it ends when the program's own read has completed, and the
 * copy finishes entering on its own; but not before the copy has its snapshot, where that is
 * taken in the sandbox (snapshot_taken_late). The copy is born once it let go. Returns whether
 * a copy runs (sandboxed by now, or still entering). STALL: the read the program goes on with
 * (NULL: none, the wait is not preemptible). */
static bool copy_started(struct specx_stream *s, const struct specx_stall *stall)
{
    struct specx_file_range own = stall ? own_read(stall) : (struct specx_file_range){ 0 };
    const struct specx_start_wait wait = {
        .timeout_ns = READY_TIMEOUT_NS,
        .snapshot = stall && snapshot_taken_late(),
        .own_read = stall ? &own : NULL,
        .slice_ns = READY_SLICE_NS,
    };
    struct specx_start start = specx_control_start(ctl_of(s), s->issued_at_start, &wait);
    s->born_ns = start.detached_ns;
    if (start.ready != SPECX_READY_FAILED) {
        demote_copy(s);
        return true;
    }
    SPECX_COUNT(spec_ended, specx_copy_reap(&s->copy, NULL, 0, true));
    forget_copy(s);
    SPECX_COUNT(spec_failed, 1);
    disable_speculation(SPECX_SLOT_SANDBOX_FAILED);
    specx_log("cannot sandbox the speculative process; speculation off for pid %d", specx.pid);
    return false;
}

/* Starts the program's own read, so that a clone's cost hides in the disk's time. A read from
 * the start of a file reaches on to the end of its first chunk, as the copy's prefetch of it
 * would (prefetch.h): the copy issues that only once it is sandboxed (copy_entering), and a
 * copy that cannot follow the file (GNU ld's, left without the object's header) never does;
 * meanwhile the program would stall on the rest of the file read by read. That widened read
 * is started at every stall at a file's start. Elsewhere a WILLNEED of exactly the read's
 * range is started only when a copy is about to be made: it takes the place of the kernel's
 * on-demand readahead for that read, which would have read more around it (the sqlite3 shell
 * made 9 % more device requests for 11 % fewer bytes when every stall had one). */
static void start_own_read(const struct specx_stall *stall, const struct stat *st)
{
    uint64_t end = specx_prefetch_end(stall->off == 0, stall->off + stall->len,
                                      (uint64_t)st->st_size);
    specx_start_read(stall->fd, stall->off, end > stall->off ? end - stall->off : stall->len);
}

/* Whether this process may create a speculative process now: it is the program itself,
 * speculation is on, and the sandbox's filter and the control region are ready. The filter is
 * compiled, and the memory cgroup found, here in the program: never in a fresh clone. */
static bool may_create_copy(void)
{
    if (!specx.spec_allowed || getpid() != specx.pid)
        return false;
    if (specx.ctl)
        return true;
    if (specx_sandbox_prepare() < 0 || !(specx.ctl = specx_control_create())) {
        disable_speculation(0);
        return false;
    }
    specx_memory_watch_find_group(&specx.ctl->memory);
    specx_copy_groups_find(0, &copy_groups);
    return true;
}

/* Whether the kernel's view of the program forbids a copy now (copy_hazards.h); its reason is
 * noted in the slot. A seccomp filter or strict mode found here came in by a system call the
 * runtime did not see (the program's own syscall instruction): the runtime stands aside at
 * once and makes no further call, not even to stop its copy, which is sandboxed and ends
 * itself once idle (copy_idle.h). Looked at only where a copy is about to be cloned: the
 * files it reads cost tens of microseconds, which the program's own read hides. */
static bool copy_forbidden(void)
{
    enum specx_hazard hazard = specx_copy_hazard(&copy_groups, 0, 0);
    if (hazard == SPECX_HAZARD_SECCOMP || hazard == SPECX_HAZARD_UNKNOWN)
        stand_aside(); /* its own state unreadable: a filter could not be seen */
    else if (hazard != SPECX_HAZARD_NONE)
        __atomic_fetch_or(&specx.slot->flags, hazard == SPECX_HAZARD_OOM_GROUP
                                                  ? SPECX_SLOT_OOM_GROUP
                                                  : SPECX_SLOT_PIDS_MAX, __ATOMIC_RELAXED);
    return hazard != SPECX_HAZARD_NONE;
}

/* The memory control stopped speculation (running/memory_watch.h): no copy, and none left. */
static void stop_for_memory(void)
{
    reap(NULL, false);
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        kill_copy(&specx.stream[k], true);
}

bool specx_copy_watch_memory(void)
{
    if (!manage_try())
        return false; /* another thread manages the copy; the interval ends at a later read */
    bool stopped = !specx_memory_watch();
    if (stopped)
        stop_for_memory();
    manage_end();
    return stopped;
}

/* Whether a thread other than the copy's own has read a record of the copy of S: then the
 * copy serves a pool's threads, and their stalls say as much of it as its own thread's. */
static bool read_by_others(const struct specx_stream *s)
{
    return __atomic_load_n(&ctl_of(s)->others_read, __ATOMIC_RELAXED) != 0;
}

/* Whether no running copy's predictions were read by a thread other than its own: each copy
 * follows one thread's stream of reads, as in a program whose threads each read their own
 * files. A pool whose threads take work from one queue reads its copy's records from every
 * thread; there one copy serves all (docs/design/read-path.md). */
static bool copies_follow_their_threads(void)
{
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        if (specx.stream[k].copy.pid > 0 && read_by_others(&specx.stream[k]))
            return false;
    return true;
}

/* Whether the copy of S has shown that it follows its own thread alone: STREAM_EVIDENCE of
 * its records read by that thread, none by another, nor any other copy's by a thread not its
 * own. */
static bool followed_alone(const struct specx_stream *s)
{
    return __atomic_load_n(&ctl_of(s)->owner_read, __ATOMIC_RELAXED) >= STREAM_EVIDENCE &&
           !read_by_others(s) && copies_follow_their_threads();
}

/* What the prefetch log says of the copy of S at STALL (in file ST): the view the read path
 * took as it matched the read, unless it took none, or took it of another stream or of an
 * earlier copy (another thread replaced it meanwhile). */
static struct specx_log_view log_view(const struct specx_stream *s,
                                      const struct specx_stall *stall, const struct stat *st)
{
    if (stall->log_seen && stall->log.stream == index_of(s) &&
        stall->log.from == s->issued_at_start)
        return stall->log;
    return specx_log_view(ctl_of(s), s->issued_at_start, (uint64_t)st->st_dev,
                          (uint64_t)st->st_ino, stall->off, stall->len);
}

/* The copy the program had, as its stall finds it by LOG: RUNNING if it has not ended by
 * itself, ARRIVED if the program only waited for readahead. A wait for readahead is no sign of
 * divergence: a running copy skips the window in flight (copy_read.c) and predicts beyond it;
 * a copy made at the last wait may not have reached that far yet. A dry copy that predicted the
 * stall is on track; it is replaced by a live one (promoted) once its predictions have earned
 * the process's trust. */
static struct specx_stall_view view_of_copy(const struct specx_stream *s,
                                            const struct specx_log_view *log, bool running,
                                            bool arrived)
{
    struct specx_stall_view v = { .running = running, .dry = s->dry, .arrived = arrived };
    v.entering = running && copy_entering(s);
    if (v.entering)
        return v; /* left to get going, whatever else holds */
    v.on_track = log->predicted;
    v.earned = running && s->dry && specx_trust_earned(log->on_track);
    v.other_thread = specx.manager != s->thread;
    v.other_stream = v.other_thread && !v.on_track && followed_alone(s);
    return v;
}

/* What the program knows at a stall at STALL, for the decision (policy/stall.h), and what
 * acting on it needs: the file (ST) and the tally a judgment of the copy would rest on (TALLY):
 * its records not reached yet count as misses only if the program stalled somewhere the copy
 * did not predict (then it diverged, and they will not be read), on its own stream.
 * Looked at in the order the decision needs it, and no further than it needs: nothing once
 * speculation may not run or the memory control stopped it. Where it may run, a read from a
 * file's start is started at once, whatever the decision (start_own_read). */
static struct specx_stall_facts facts_at(struct specx_stream *s,
                                         const struct specx_stall *stall, bool arrived,
                                         struct stat *st, struct specx_tally *tally)
{
    struct specx_stall_facts f = { .allowed = may_create_copy() };
    f.memory_stopped = f.allowed && specx_memory_stopped();
    if (!f.allowed || f.memory_stopped)
        return f;
    if (fstat(stall->fd, st) < 0)
        *st = (struct stat){ 0 };
    if (stall->off == 0 && !arrived)
        start_own_read(stall, st);
    f.had_copy = s->copy.pid > 0;
    bool running = copy_still_running(s);
    struct specx_judgment judged = { s->dev, s->ino, false };
    if (f.had_copy) {
        struct specx_log_view log = log_view(s, stall, st);
        f.copy = view_of_copy(s, &log, running, arrived);
        /* A copy that ended is judged by what its own thread read of it, its records not
         * reached yet left out, at another stream's stall as at one it predicted. */
        *tally = f.copy.on_track || f.copy.other_stream ? log.on_track : log.diverged;
        judged.useful = tally->hits > 0;
    }
    f.backing_off = specx_backoff_would_skip((uint64_t)st->st_dev, (uint64_t)st->st_ino,
                                             f.had_copy ? &judged : NULL);
    return f;
}

/* Clones a new copy into stream S at STALL (in file ST), its running one (SYNC) killed
 * first, dry or live (DRY, trust.h). ARRIVED: its data is in memory already (the program has
 * just waited for the kernel's readahead, specx_copy_after_wait), so there is no read of its
 * own to start and nothing to hide the clone behind. Returns true in the new copy. */
static bool clone_at(struct specx_stream *s, const struct specx_stall *stall,
                     const struct stat *st, bool arrived, bool sync, bool dry)
{
    if (stall->off != 0 && !arrived)
        start_own_read(stall, st);
    if (copy_forbidden()) {
        if (sync && specx.role == SPECX_ROLE_NORMAL)
            kill_copy(s, false); /* it was to be replaced: it diverged */
        return false;
    }
    s->dev = (uint64_t)st->st_dev;
    s->ino = (uint64_t)st->st_ino;
    uint64_t t0 = specx_now_ns();
    SPECX_COUNT(refork_attempts, 1);
    if (sync) {
        SPECX_COUNT(sync_attempts, 1);
        kill_copy(s, false);
    }
    /* Preemptible refork (§5.1): with its data in already, the program would only wait for
     * the clone; it goes on, and the next stall reforks. */
    struct specx_file_range own = own_read(stall);
    if (!arrived && specx_range_arrived(&own)) {
        SPECX_COUNT(refork_ns, specx_now_ns() - t0);
        return false;
    }
    pid_t program = getpid();
    if (clone_speculative(s, dry)) {
        become_speculative(program);
        return true;
    }
    bool cloned = s->copy.pid > 0;
    bool started = cloned && copy_started(s, stall);
    /* The refork ends once the copy let go of the program's descriptors (copy_started). */
    uint64_t t_clone = cloned ? s->born_ns : specx_now_ns();
    SPECX_COUNT(refork_ns, t_clone - t0);
    SPECX_COUNT(refork_completed, started && !copy_entering(s));
    SPECX_COUNT(refork_wait_ns, specx_now_ns() - t_clone);
    if (started)
        specx_log("pid %d: %s speculative process %d of stream %u %s at fd %d offset %llu%s, "
                  "ready in %llu us", specx.pid, s->dry ? "dry" : "live", s->copy.pid,
                  index_of(s), sync ? "synchronized" : "created", stall->fd,
                  (unsigned long long)stall->off, arrived ? " after a readahead wait" : "",
                  (unsigned long long)(specx_now_ns() - t_clone) / 1000);
    if (sync) {
        SPECX_COUNT(sync_completed, started);
        SPECX_COUNT(sync_ns, specx_now_ns() - t0);
    }
    return false;
}

/* The stream of the copy of the stalled thread (the manager), if it has one beside the first;
 * else the first, which any thread's stall may manage (docs/design/read-path.md). */
static struct specx_stream *stream_of_stalled_thread(void)
{
    for (unsigned k = 1; k < SPECX_STREAMS; k++)
        if (specx.stream[k].copy.pid > 0 && specx.stream[k].thread == specx.manager)
            return &specx.stream[k];
    return &specx.stream[0];
}

/* A stream beside the first without a copy: one never used, or one whose copy has ended (its
 * thread exited, and the copy with it). NULL if there is none. */
static struct specx_stream *free_stream(void)
{
    for (unsigned k = 1; k < SPECX_STREAMS; k++) {
        struct specx_stream *s = &specx.stream[k];
        if (s->copy.pid <= 0 || !copy_still_running(s))
            return s;
    }
    return NULL;
}

/* A stall of a thread in a stream of its own that the first's copy does not serve: a copy in
 * a free stream, the first of its kind there (trust and back-off are the process's). With
 * every stream taken, the thread's read goes on unaided. */
static bool clone_in_new_stream(const struct specx_stall *stall, const struct stat *st)
{
    struct specx_stream *s = free_stream();
    if (!s)
        return false;
    SPECX_COUNT(stream_copies, 1);
    return clone_at(s, stall, st, false, false, specx_trust_next_dry());
}

/* A stall at STALL, classified once (policy/stall.h) for the stalled thread's stream and acted
 * on. Returns true in a new copy. */
static bool copy_at(const struct specx_stall *stall, bool arrived)
{
    struct specx_stream *s = stream_of_stalled_thread();
    struct stat st;
    struct specx_tally tally = { 0, 0 };
    struct specx_stall_facts f = facts_at(s, stall, arrived, &st, &tally);
    bool running = s->copy.pid > 0; /* facts_at forgot it if the copy had ended */
    switch (specx_stall_decide(&f)) {
    case SPECX_STALL_IGNORE:
    case SPECX_STALL_KEEP:
        return false;
    case SPECX_STALL_STOP:
        stop_for_memory();
        return false;
    case SPECX_STALL_BACK_OFF: /* the stall is counted against the back-off */
        if (f.had_copy)
            judge_copy(s, tally, &st, true);
        else
            specx_backoff_settle(NULL, (uint64_t)st.st_dev, (uint64_t)st.st_ino, true);
        if (running)
            kill_copy(s, false); /* diverged, none of its predictions read: not worth a new one */
        return false;
    case SPECX_STALL_NEW_STREAM:
        return clone_in_new_stream(stall, &st);
    case SPECX_STALL_COPY:
        return clone_at(s, stall, &st, arrived, running,
                        f.had_copy ? judge_copy(s, tally, &st, false) : specx_trust_next_dry());
    }
    return false;
}

/* Runs copy_at as the manager, if no other thread is; the copy itself (true) has no other
 * thread and leaves the lock as it found it in its own memory. */
static bool managed_copy_at(const struct specx_stall *stall, bool arrived)
{
    if (!manage_try())
        return false;
    bool in_copy = copy_at(stall, arrived);
    manage_end();
    return in_copy;
}

bool specx_copy_on_stall(const struct specx_stall *stall)
{
    return managed_copy_at(stall, false);
}

bool specx_copy_after_wait(const struct specx_stall *stall)
{
    return managed_copy_at(stall, true);
}

/* The program has no hook at a page fault (§4.1.2 handles faults in the kernel): a new large
 * file mapping that is not in memory is where its faults will come from, so a copy is created
 * there, unless one is running (it makes the same mapping itself and speculates on it,
 * fault_speculation.h). The program first faults in the mapping's first chunk, as its first touch
 * would (a header, usually): the copy never waits for a disk read, so without it the copy
 * would run on zeros where the data decides its path, and end. */
static bool copy_on_mapping(void *addr, int fd, uint64_t len)
{
    if (!may_create_copy())
        return false;
    if (specx_memory_stopped()) {
        stop_for_memory();
        return false;
    }
    struct specx_stream *s = &specx.stream[0];
    if (copy_still_running(s) || specx_backoff_retired())
        return false;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return false;
    specx_raw_madvise(addr, len < SPECX_PREFETCH_CHUNK ? len : SPECX_PREFETCH_CHUNK,
                      MADV_POPULATE_READ);
    if (copy_forbidden())
        return false;
    s->dev = (uint64_t)st.st_dev;
    s->ino = (uint64_t)st.st_ino;
    pid_t program = getpid();
    if (clone_speculative(s, specx_trust_next_dry())) {
        become_speculative(program);
        return true;
    }
    if (s->copy.pid > 0 && copy_started(s, NULL))
        specx_log("pid %d: %s speculative process %d created at a mapping of fd %d", specx.pid,
                  s->dry ? "dry" : "live", s->copy.pid, fd);
    return false;
}

bool specx_copy_on_mapping(void *addr, int fd, uint64_t len)
{
    if (!manage_try())
        return false;
    bool in_copy = copy_on_mapping(addr, fd, len);
    manage_end();
    return in_copy;
}
