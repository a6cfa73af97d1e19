/* See run_oom_guard.h. */
#include "run_oom_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memcg.h"
#include "oom_victim.h"
#include "util.h"

/* After an OOM event the group's killed processes are freed every STEP_NS until the kill has
 * been counted and AFTER_KILL_STEPS more (50 ms), for at most MAX_STEPS (2 s, when the kernel's
 * own reaper comes). On v1 the event comes before the killer chooses, and a victim that is
 * itself the one charging, starved at idle priority, may take long to choose; a victim is the
 * more urgent to free the sooner it is found (starved, one needed 0.4-0.6 s to begin its exit,
 * docs/DESIGN.md §6.3). */
#define STEP_NS (2 * 1000000L)
#define AFTER_KILL_STEPS 25
#define MAX_STEPS 1000

static bool verbose;

/* The killed processes already freed in one window: each is freed (and told of) once. */
struct freed {
    pid_t pid[64];
    unsigned n;
};

static bool already(const struct freed *f, pid_t pid)
{
    for (unsigned i = 0; i < f->n; i++)
        if (f->pid[i] == pid)
            return true;
    return false;
}

static void release_victims(const struct specx_cgroup *cg, struct freed *f)
{
    static pid_t pids[SPECX_CGROUP_PROCS_MAX];
    long n = specx_cgroup_procs(cg, pids, SPECX_CGROUP_PROCS_MAX);
    pid_t self = getpid();
    for (long i = 0; i < n; i++) {
        if (pids[i] == self || already(f, pids[i]) || !specx_oom_victim_release(pids[i]))
            continue;
        if (f->n < sizeof f->pid / sizeof f->pid[0])
            f->pid[f->n++] = pids[i];
        if (verbose)
            specx_warn("OOM guard: freed the memory of killed process %d", (int)pids[i]);
    }
}

static void release_victims_after(const struct specx_cgroup *cg, uint64_t kills_before)
{
    struct freed f = { .n = 0 };
    int since_kill = -1;
    for (int step = 0; step < MAX_STEPS && since_kill < AFTER_KILL_STEPS; step++) {
        release_victims(cg, &f);
        uint64_t kills = kills_before;
        if (since_kill < 0 && specx_memcg_oom_kills(cg, &kills) && kills != kills_before)
            since_kill = 0;
        if (since_kill >= 0)
            since_kill++;
        nanosleep(&(struct timespec){ 0, STEP_NS }, NULL);
    }
}

/* The guard leaves the program's session (terminal signals are the program's), its files (a
 * pipe's reader waits for every writer; standard error is kept when verbose, and the guard
 * ends with the program) and its working directory (a mount it pins could not be unmounted),
 * and takes back the signals specx run handles. */
static void detach(int keep_fd)
{
    setsid();
    if (chdir("/") < 0)
        errno = 0; /* it stays where it is: nothing depends on it */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < (verbose ? 2 : 3) && null >= 0; fd++)
        dup2(null, fd);
    close_range(3, (unsigned)keep_fd - 1, 0);
    close_range((unsigned)keep_fd + 1, ~0u, 0);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_NAME, "specx-oomguard");
}

/* The guard must not be charged where the OOM is: at the group's limit its own allocations (a
 * pidfd, a /proc read, a page it touches) waited for the OOM like the program's (2.5 s seen, the
 * victim long gone by then). It moves to the nearest group above that takes it: v1 the parent,
 * v2 an ancestor that does not give controllers to its children (in practice the root). False
 * if none does (no permission): the guard is of no use then. */
static bool leave_group(const struct specx_cgroup *cg)
{
    struct specx_cgroup up = *cg;
    for (char *slash; (slash = strrchr(up.dir, '/')) && slash != up.dir;) {
        *slash = '\0';
        if (specx_cgroup_attach(&up, getpid()) == 0)
            return true;
        if (errno != EBUSY) /* v2 refuses processes beside child groups; go on above */
            return false;
    }
    return false;
}

static _Noreturn void guard(const struct specx_cgroup *cg, int program_fd)
{
    if (!leave_group(cg))
        _exit(0);
    detach(program_fd);
    bool only_oom;
    int watch = specx_memcg_oom_watch(cg, &only_oom);
    uint64_t kills = 0;
    specx_memcg_oom_kills(cg, &kills);
    struct pollfd fds[2] = { { .fd = program_fd, .events = POLLIN },
                             { .fd = watch, .events = POLLIN } };
    while (watch >= 0) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            break; /* the program has ended */
        if (!fds[1].revents)
            continue;
        specx_memcg_watch_drain(watch);
        uint64_t now = kills;
        specx_memcg_oom_kills(cg, &now);
        if (only_oom || now != kills)
            release_victims_after(cg, kills);
        specx_memcg_oom_kills(cg, &kills);
    }
    _exit(0);
}

void run_oom_guard_start(pid_t program, bool say_what)
{
    struct specx_cgroup cg;
    /* As PID 1 of a namespace the program would inherit the orphaned guard as a child. */
    if (getpid() == 1 || specx_memcg_of(program, &cg) < 0 || specx_memcg_limit(&cg) == 0)
        return;
    int program_fd = (int)syscall(SYS_pidfd_open, program, 0);
    if (program_fd < 0)
        return;
    verbose = say_what;
    pid_t parent = fork();
    if (parent == 0) {
        if (fork() == 0)
            guard(&cg, program_fd);
        _exit(0);
    }
    close(program_fd);
    while (parent > 0 && waitpid(parent, NULL, 0) < 0 && errno == EINTR)
        ;
}
