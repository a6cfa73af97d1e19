/* specx-oomguard: the OOM guard of `specx run` (run_oom_guard.h), a program of its own so that
 * its memory is allocated where it runs, above the program's memory cgroup, and not shared with
 * the `specx run` it was forked from (whose pages stay charged to the program's group).
 *
 * Internal: `specx run` starts it as
 *   specx-oomguard PROGRAM_PIDFD 1|2 GROUP_DIR [verbose]
 * with PROGRAM_PIDFD inherited, the group's hierarchy version and directory. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel/memcg.h"
#include "kernel/oom_victim.h"
#include "common/util.h"

/* After an OOM event the group's killed processes are freed every STEP_NS until the kill has
 * been counted and AFTER_KILL_STEPS more (50 ms), for at most MAX_STEPS (2 s, when the kernel's
 * own reaper comes). On v1 the event comes before the killer chooses, and a victim that is
 * itself the one charging, starved at idle priority, may take long to choose; a victim is the
 * more urgent to free the sooner it is found (starved, one needed 0.4-0.6 s to begin its exit,
 * docs/design/copies.md). */
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
    for (long i = 0; i < n; i++) { /* the guard itself is in the group above */
        if (already(f, pids[i]) || !specx_oom_victim_release(pids[i]))
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
 * and the signals ignored or blocked in specx run. */
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
}

static _Noreturn void guard(const struct specx_cgroup *cg, int program_fd)
{
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

int main(int argc, char **argv)
{
    specx_set_progname("specx run");
    struct specx_cgroup cg;
    char *end;
    long fd = argc >= 4 ? strtol(argv[1], &end, 10) : -1;
    if (argc > 5 || fd < 0 || *end || (strcmp(argv[2], "1") && strcmp(argv[2], "2")) ||
        strlen(argv[3]) >= sizeof cg.dir) {
        specx_warn("specx-oomguard is started by specx run, not by hand");
        return 2;
    }
    cg.version = argv[2][0] == '1' ? SPECX_CG_V1 : SPECX_CG_V2;
    strcpy(cg.dir, argv[3]);
    verbose = argc == 5 && strcmp(argv[4], "verbose") == 0;
    detach((int)fd);
    guard(&cg, (int)fd);
}
