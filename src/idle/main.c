/* specx idle: a command that runs on idle capacity only — CPU, disk and memory nobody else
 * wants, given back the moment the foreground needs them — with its file changes kept apart
 * until they are validated and committed (Eggert 2002). docs/design/idle.md says how each
 * resource maps to this kernel; specx-idle(1) says how to use it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "kernel/cgroup_sweep.h"
#include "idle/closed_files.h"
#include "idle/dirty_bound.h"
#include "idle/groups.h"
#include "idle/hold.h"
#include "idle/isolation.h"
#include "kernel/kfile.h"
#include "idle/memory_yield.h"
#include "idle/net_class.h"
#include "idle/net_queue.h"
#include "idle/net_receive.h"
#include "idle/options.h"
#include "idle/priority.h"
#include "idle/report.h"
#include "common/util.h"

/* How long a command told to stop (Ctrl-C, SIGTERM) has before it is killed. */
#define STOP_GRACE_NS 5000000000ull
#define EXIT_CONFLICT 3

/* The command's network: its sockets' class and the queues it waits in, or why not. */
struct idle_network {
    int prog_fd;                  /* the socket classifier, -1 if none (or no longer) */
    bool classified;              /* its sockets were classified */
    struct idle_net_queue queue;
    struct idle_net_receive receive;
    char why[256];
};

struct idle {
    struct idle_options opt;
    struct idle_groups groups;
    struct idle_hold hold;   /* frozen for the memory control, the dirty bound, downloads */
    struct idle_memory memory;
    uint64_t memory_due_ns;  /* its next sample */
    struct idle_dirty *dirty;
    struct idle_closed closed; /* the files the command closes; the dirty bound's once started */
    struct idle_isolation isolation;
    struct idle_network network;
    bool own_mounts;         /* the command gets a mount namespace of its own (a slave) */
    pid_t pid;
    int pidfd, sigfd;
    int stop_signal;         /* the signal that interrupted the run, 0 if none */
    uint64_t stop_deadline_ns;
    uint64_t started_ns;
    time_t promoted_at;
    unsigned promoted_threads;
};

/* ---- the command's process, between fork and exec ---- */

/* Tells our side why the command could not start (one line), and ends. */
static _Noreturn void child_refuse(int status_fd, int code, const char *why)
{
    dprintf(status_fd, "%s", why);
    _exit(code);
}

static _Noreturn void child_fail(int status_fd, int code, const char *what, int err)
{
    char why[4300];
    snprintf(why, sizeof why, "%s: %s", what, strerror(err));
    child_refuse(status_fd, code, why);
}

static _Noreturn void run_command(struct idle *s, int status_fd, int go_fd)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Should specx idle be killed outright, the command goes with it; the next run removes
     * its groups and its uncommitted changes. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Whether a run is alive is the question its locks answer: ours alone. */
    idle_isolation_drop_lock(&s->isolation);
    idle_groups_drop_locks(&s->groups);
    idle_net_queue_drop_locks(&s->network.queue);
    if (idle_groups_attach(&s->groups, 0) < 0)
        child_fail(status_fd, 1, "cannot join the command's cgroups", errno);
    if (idle_priority_lower_self() < 0)
        child_fail(status_fd, 1, "cannot lower the command's priority", errno);
    /* In a real shortage the background goes first (Eggert 2002 §2.3, preemptability). */
    specx_kfile_write("/proc/self/oom_score_adj", "1000\n");
    char why[4300];
    if (s->opt.nisolate && idle_isolation_enter(&s->isolation, why, sizeof why) < 0)
        child_refuse(status_fd, 1, why);
    if (s->own_mounts && unshare(CLONE_NEWNS) == 0)
        mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL);
    /* Ready: our side starts watching what the command opens, then lets it go. */
    char go;
    if (write(status_fd, "", 1) != 1 || read(go_fd, &go, 1) != 1)
        _exit(1);
    execvp(s->opt.argv[0], s->opt.argv);
    int err = errno;
    char what[4200];
    snprintf(what, sizeof what, "cannot run '%s'", s->opt.argv[0]);
    child_fail(status_fd, err == ENOENT ? 127 : 126, what, err);
}

/* ---- ours ---- */

/* Starts the command; -1 with a one-line reason in err (its exit code in *CODE). */
static int start_command(struct idle *s, int *code, char *err, size_t errsize)
{
    int status[2], go[2];
    if (pipe2(status, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0)
        return specx_format_error(err, errsize, "pipe: %s", strerror(errno));
    /* The files it closes are watched on mounts of its own (closed_files.h), which follow the
     * machine's (a slave namespace) so that it sees every mount made or removed outside. Where
     * they would not, it stays in ours and those files are left to the kernel's flushers.
     * Under --isolate it has a namespace of its own already, its overlays'. */
    s->own_mounts = !s->opt.nisolate && s->opt.dirty_max_bytes && idle_closed_mounts_followed();
    fflush(NULL);
    s->pid = fork();
    if (s->pid == 0) {
        close(status[0]);
        close(go[1]);
        run_command(s, status[1], go[0]);
    }
    close(status[1]);
    close(go[0]);
    if (s->pid < 0)
        return specx_format_error(err, errsize, "fork: %s", strerror(errno));
    s->started_ns = specx_now_ns();
    /* The child says '\0' when ready for exec, or why it cannot start. Once let go, the
     * pipe closes at exec (nothing read) or says why exec failed. */
    ssize_t n = read(status[0], err, 1);
    if (n == 1 && err[0] == '\0') {
        if (s->opt.nisolate)
            idle_isolation_watch(&s->isolation, s->pid);
        if (s->opt.dirty_max_bytes)
            idle_closed_watch(&s->closed, s->pid, s->opt.nisolate ? &s->isolation : NULL);
        n = write(go[1], "", 1) == 1 ? read(status[0], err, errsize - 1) : -1;
    } else if (n == 1) {
        ssize_t more = read(status[0], err + 1, errsize - 2);
        n = more > 0 ? 1 + more : 1;
    }
    close(go[1]);
    close(status[0]);
    if (n == 0)
        return 0;
    int wstatus;
    waitpid(s->pid, &wstatus, 0);
    *code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
    if (n < 0)
        snprintf(err, errsize, "the command did not start");
    else
        err[n] = '\0';
    return -1;
}

/* Signals arrive through a descriptor, read in the loop. SIGPIPE is blocked too: a command
 * that dies before it reads its go byte makes that write fail, not end us. The command
 * unblocks all of them before it runs. */
static int open_signalfd(void)
{
    sigset_t set, blocked;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    blocked = set;
    sigaddset(&blocked, SIGPIPE);
    if (sigprocmask(SIG_BLOCK, &blocked, NULL) < 0)
        return -1;
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* The memory control, the dirty bound and the receive side let the command go for good: at
 * the deadline, when it is told to stop, at the end. */
static void stop_yielding(struct idle *s, uint64_t now_ns)
{
    idle_memory_stop(&s->memory, now_ns);
    idle_dirty_stop(s->dirty, now_ns);
    idle_net_receive_stop(&s->network.receive, now_ns);
}

/* The command's packets in the background class, queued behind the foreground's where they
 * leave (net_class.h, net_queue.h). What could not be done is said in the report; the command
 * runs either way. */
static void start_network(struct idle *s)
{
    struct idle_network *n = &s->network;
    n->prog_fd = -1;
    if (!s->opt.net) {
        snprintf(n->why, sizeof n->why, "left alone (--no-net)");
        return;
    }
    if (!s->groups.psi) {
        snprintf(n->why, sizeof n->why, "no cgroup v2 group to classify sockets in");
        return;
    }
    n->prog_fd = idle_net_classify(s->groups.psi, n->why, sizeof n->why);
    n->classified = n->prog_fd >= 0;
    if (n->classified)
        idle_net_queue_start(&n->queue, s->opt.net_dev, s->opt.net_rate_bps);
    idle_net_receive_start(&n->receive, &s->groups.mem.cg, &n->queue, s->opt.net_rate_down_bps,
                           &s->hold, specx_now_ns());
}

static void stop_network(struct idle *s)
{
    idle_net_queue_stop(&s->network.queue);
    if (s->network.prog_fd >= 0)
        close(s->network.prog_fd); /* detached with the group */
    s->network.prog_fd = -1;
}

/* The command at normal CPU, I/O and network priority, its memory no longer yielded; returns
 * the threads promoted. */
static unsigned lift_priorities(struct idle *s)
{
    stop_yielding(s, specx_now_ns());
    idle_groups_promote_cpu(&s->groups);
    if (s->network.prog_fd >= 0)
        idle_net_unclassify(s->groups.psi, s->network.prog_fd);
    idle_net_queue_promote(&s->network.queue);
    return idle_priority_promote(&s->groups.mem.cg);
}

/* The deadline came (§3.1.3 of the paper: deadline-bounded backgrounding falls back to
 * running the work like any other). */
static void promote(struct idle *s)
{
    s->promoted_at = time(NULL);
    s->promoted_threads = lift_priorities(s);
}

/* Ctrl-C, SIGTERM, SIGHUP: passed on to every process of the command, thawed and at normal
 * priority so that it can act on them at once (at idle CPU priority beside a busy foreground
 * it might get no CPU within the grace time); killed if it has not ended within
 * STOP_GRACE_NS — as is a command that ignores the signal (one started by a background shell
 * inherits an ignored SIGINT). */
static void take_signals(struct idle *s)
{
    struct signalfd_siginfo si;
    while (read(s->sigfd, &si, sizeof si) == sizeof si) {
        if (s->stop_signal)
            continue;
        s->stop_signal = (int)si.ssi_signo;
        s->stop_deadline_ns = specx_now_ns() + STOP_GRACE_NS;
        if (!s->promoted_at)
            lift_priorities(s);
        pid_t pids[SPECX_CGROUP_PROCS_MAX];
        long n = specx_cgroup_procs(&s->groups.mem.cg, pids, SPECX_CGROUP_PROCS_MAX);
        for (long i = 0; i < n; i++)
            kill(pids[i], s->stop_signal);
    }
}

/* Until the next sample (memory and downloads, or dirty data), or the deadline. */
static int poll_timeout_ms(const struct idle *s)
{
    uint64_t due = idle_dirty_due(s->dirty), now = specx_now_ns();
    if (s->memory_due_ns < due)
        due = s->memory_due_ns;
    long ms = due > now ? (long)((due - now + 999999) / 1000000) : 0;
    if (s->opt.deadline && !s->promoted_at) {
        long until = (long)(s->opt.deadline - time(NULL)) * 1000;
        ms = until < ms ? (until > 0 ? until : 0) : ms;
    }
    return (int)ms;
}

/* Waits for the command, yielding its memory, promoting it at the deadline and passing
 * signals on. Returns its wait status; USAGE gets its resource usage. */
static int supervise(struct idle *s, struct rusage *usage)
{
    for (;;) {
        /* poll skips a negative descriptor: no read set, the dirty bound not resting. */
        struct pollfd fds[4] = {
            { .fd = s->pidfd, .events = POLLIN },
            { .fd = s->sigfd, .events = POLLIN },
            { .fd = s->isolation.watch_fd, .events = POLLIN },
            { .fd = idle_dirty_fd(s->dirty), .events = POLLIN },
        };
        poll(fds, 4, poll_timeout_ms(s));
        if (fds[1].revents)
            take_signals(s);
        if (s->isolation.watch_fd >= 0)
            idle_isolation_drain(&s->isolation);
        int status;
        if (wait4(s->pid, &status, WNOHANG, usage) == s->pid)
            return status;
        uint64_t now = specx_now_ns();
        if (s->stop_signal && now > s->stop_deadline_ns)
            specx_cgroup_kill_all(&s->groups.mem.cg);
        if (s->opt.deadline && !s->promoted_at && time(NULL) >= s->opt.deadline)
            promote(s);
        /* Events (the read set's, the dirty bound's) wake the loop early: each sample keeps
         * its own period. */
        bool memory_sampled = now >= s->memory_due_ns;
        if (memory_sampled) {
            idle_memory_tick(&s->memory, now);
            idle_net_receive_tick(&s->network.receive, now);
            s->memory_due_ns = now + IDLE_SAMPLE_NS;
        }
        idle_dirty_tick(s->dirty, now, memory_sampled);
    }
}

static int exit_code_of(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The command's changes: committed only if it succeeded and was not interrupted. */
static void settle_changes(struct idle *s, int status)
{
    bool succeeded = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !s->stop_signal;
    if (!succeeded) {
        idle_isolation_abandon(&s->isolation);
        s->isolation.outcome = ISOLATION_DISCARDED;
        specx_warn("the command %s: its changes are discarded",
                   s->stop_signal ? "was interrupted" : "failed");
        return;
    }
    idle_isolation_finish(&s->isolation, s->opt.commit);
    const struct idle_isolation *iso = &s->isolation;
    if (iso->outcome == ISOLATION_CONFLICT) {
        specx_warn("not committed: others changed what the command read or wrote:");
        for (size_t i = 0; i < iso->conflicts.n; i++)
            fprintf(stderr, "  %s\n", iso->conflicts.paths[i]);
        if (iso->failure[0])
            fprintf(stderr, "  (%s)\n", iso->failure);
    } else if (iso->outcome == ISOLATION_INCOMPLETE) {
        specx_warn("%s; the next specx idle finishes the commit (or: specx idle --recover)",
                   iso->failure);
    } else if (iso->outcome == ISOLATION_DISCARDED) {
        specx_warn("not committed (--commit %s); the changes were:",
                   s->opt.commit == COMMIT_NEVER ? "never" : "ask");
        idle_changes_print(stderr, &iso->changes, (char (*)[4096])iso->dirs, 50);
    }
}

/* What the report tells of the network (figures.h); LINKS receives its interfaces. */
static struct idle_network_figures network_figures(const struct idle_network *n,
                                                   struct idle_link_figures *links)
{
    for (size_t i = 0; i < n->queue.n; i++)
        links[i] = (struct idle_link_figures){ n->queue.devs[i].name,
                                               n->queue.devs[i].rate_bps };
    return (struct idle_network_figures){
        .classified = n->classified, .why = n->why, .links = links, .nlinks = n->queue.n,
        .left_alone = n->queue.why, .capacity_bps = n->receive.capacity_bps,
        .clamps = n->receive.clamps, .holds = n->receive.holds,
        .clamped_ns = n->receive.clamped_ns, .held_ns = n->receive.held_ns,
    };
}

static int finish(struct idle *s, int status, const struct rusage *usage)
{
    uint64_t now = specx_now_ns();
    stop_yielding(s, now);
    idle_memory_end(&s->memory);
    idle_groups_destroy(&s->groups); /* what the command left running goes with it */
    stop_network(s);
    if (s->opt.nisolate)
        settle_changes(s, status);
    int code = exit_code_of(status);
    if (s->opt.nisolate && s->isolation.outcome == ISOLATION_CONFLICT)
        code = EXIT_CONFLICT;
    else if (s->opt.nisolate && s->isolation.outcome == ISOLATION_INCOMPLETE)
        code = 1;
    struct idle_link_figures links[IDLE_NET_MAX_DEVS];
    struct idle_isolation_figures isolation;
    if (s->opt.nisolate)
        isolation = idle_isolation_figures(&s->isolation);
    struct idle_run run = {
        .opt = &s->opt, .cpu_setting = s->groups.cpu_setting,
        .memory = idle_memory_figures(&s->memory), .dirty = idle_dirty_figures(s->dirty),
        .network = network_figures(&s->network, links),
        .isolation = s->opt.nisolate ? &isolation : NULL,
        .usage = *usage,
        .elapsed_s = (double)(now - s->started_ns) / 1e9, .exit_code = code,
        .command_status = status, .interrupted = s->stop_signal != 0,
        .promoted_at = s->promoted_at, .promoted_threads = s->promoted_threads,
    };
    if (s->opt.report)
        idle_report_table(stderr, &run);
    if (s->opt.json && idle_report_json(s->opt.json, &run) < 0)
        specx_warn("cannot write %s: %s", s->opt.json, strerror(errno));
    return code;
}

int main(int argc, char **argv)
{
    static struct idle s; /* large (the isolation's paths): not on the stack */
    char err[4200];
    specx_set_progname("specx idle");
    s.isolation.watch_fd = -1;
    s.closed = (struct idle_closed)IDLE_CLOSED_NONE;
    if (idle_options_parse(argc, argv, time(NULL), &s.opt, err, sizeof err) < 0) {
        specx_warn("%s", err);
        return 2;
    }
    if (s.opt.help) {
        idle_options_usage(stdout);
        return 0;
    }
    if (s.opt.version) {
        printf("specx idle %s\n", SPECX_VERSION);
        return 0;
    }
    if (!(s.dirty = idle_dirty_new()))
        specx_die(1, "out of memory");
    /* What runs killed outright left: their groups, their uncommitted changes, or a commit
     * they were in the middle of. */
    idle_groups_sweep_stale();
    idle_net_queue_sweep();
    /* --isolate says itself why the runs' state directory cannot be used. */
    int recovered = idle_isolation_recover(!s.opt.nisolate);
    if (s.opt.recover)
        return recovered < 0 ? 1 : 0;
    if ((s.sigfd = open_signalfd()) < 0)
        specx_die(1, "signalfd: %s", strerror(errno));
    if (s.opt.nisolate && idle_isolation_prepare(&s.isolation, &s.opt, err, sizeof err) < 0)
        specx_die(1, "%s", err);
    if (idle_groups_make(&s.groups, err, sizeof err) < 0) {
        idle_isolation_abandon(&s.isolation);
        specx_die(1, "%s", err);
    }
    start_network(&s);
    int code = 1;
    if (start_command(&s, &code, err, sizeof err) < 0) {
        idle_closed_stop(&s.closed);
        idle_groups_destroy(&s.groups);
        stop_network(&s);
        idle_isolation_abandon(&s.isolation);
        specx_warn("%s", err);
        return code;
    }
    s.pidfd = (int)syscall(SYS_pidfd_open, s.pid, 0);
    s.hold.freeze = s.groups.freeze;
    idle_memory_start(&s.memory, &s.groups, &s.hold, specx_now_ns());
    idle_dirty_start(s.dirty, &s.groups.mem.cg, &s.closed,
                     s.opt.nisolate ? &s.isolation : NULL, &s.hold, s.opt.dirty_max_bytes,
                     specx_now_ns());
    struct rusage usage = { 0 };
    int status = supervise(&s, &usage);
    return finish(&s, status, &usage);
}
