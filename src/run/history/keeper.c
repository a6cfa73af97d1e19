/* See keeper.h. The replay's plan and pacing are in replay.c, the new history in record.c. */
#include "run/history/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/history_trace.h"
#include "common/util.h"
#include "kernel/clock.h"
#include "kernel/ioprio.h"
#include "run/history/command_key.h"
#include "run/history/outside.h"
#include "run/history/record.h"
#include "run/history/replay.h"

/* How often the keeper looks at the trace: often enough to stay ahead of a program that
 * reads a file every millisecond or two, with a batch of prefetches each time. */
#define TICK_MS 5
/* How long a run waits for the last run of the same command to write its history: a few
 * milliseconds when it has just ended; a run of it still going holds it longer, and then this
 * one goes on with the history before. */
#define LOCK_WAIT_MS 100

bool history_mode_parse(const char *name, enum history_mode *mode)
{
    static const char *const names[] = { "off", "record", "replay", "auto" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0) {
            *mode = (enum history_mode)i;
            return true;
        }
    return false;
}

/* The history to replay: the command's own, else the latest of its program (near). */
static void load_old(struct history_keeper *k, const struct command_key *key)
{
    char name[64], err[PATH_MAX + 128];
    history_name(key->program, key->key, name, sizeof name);
    int found = history_load(&k->store, name, &k->old, err, sizeof err);
    if (found == 1) {
        found = history_load_latest_of(&k->store, key->program, key->key, &k->old, err,
                                       sizeof err);
        k->counts.near = found == 0;
    }
    if (found < 0)
        specx_warn("%s", err);
    if (found != 0)
        history_free(&k->old);
}

/* The trace the runtime notes reads in: a memory file, so that nothing is left anywhere
 * when its holder ends, sized for its bounds (pages are allocated as they are written). */
static bool make_trace(struct history_keeper *k)
{
    k->trace_fd = memfd_create("specx-history", MFD_CLOEXEC);
    void *p = k->trace_fd >= 0 && ftruncate(k->trace_fd, (off_t)SPECX_TRACE_SIZE) == 0
                  ? mmap(NULL, SPECX_TRACE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                         k->trace_fd, 0)
                  : MAP_FAILED;
    if (p == MAP_FAILED) {
        int e = errno;
        if (k->trace_fd >= 0)
            close(k->trace_fd);
        k->trace_fd = -1;
        errno = e;
        return false;
    }
    k->trace = p;
    k->trace->magic = SPECX_TRACE_MAGIC;
    k->trace->start_ns = specx_now_ns();
    return true;
}

static void release(struct history_keeper *k)
{
    free(k->sampler);
    k->sampler = NULL;
    history_plan_free(k->plan);
    k->plan = NULL;
    history_free(&k->old);
    history_store_close(&k->store);
    if (k->trace)
        munmap(k->trace, SPECX_TRACE_SIZE);
    k->trace = NULL;
    if (k->trace_fd >= 0)
        close(k->trace_fd);
    if (k->pidfd >= 0)
        close(k->pidfd);
    if (k->lock_fd >= 0)
        close(k->lock_fd);
    k->trace_fd = k->pidfd = k->lock_fd = -1;
}

bool history_keeper_prepare(struct history_keeper *k, enum history_mode mode,
                            char *const argv[])
{
    *k = (struct history_keeper){ .mode = mode, .trace_fd = -1, .pidfd = -1, .lock_fd = -1,
                                  .argv = argv };
    struct command_key key;
    char err[PATH_MAX + 128];
    if (mode == HISTORY_OFF || !getcwd(k->cwd, sizeof k->cwd) ||
        command_key_of(argv, k->cwd, &key) < 0)
        return false;
    if (history_store_open(&k->store, mode != HISTORY_REPLAY, err, sizeof err) < 0) {
        /* A store someone else could steer is always said; one that cannot be made (no
         * home, a read-only one) only where history was asked for by name, so that the
         * default adds nothing to the command's error output there. */
        bool untrusted = errno == EPERM || errno == ELOOP || errno == ENOTDIR;
        if (untrusted || (mode == HISTORY_RECORD) || (mode == HISTORY_REPLAY && errno != ENOENT))
            specx_warn("%s", err);
        return false;
    }
    /* The last run of this command may be writing its history still (it ended a moment ago). */
    int shared = history_lock(&k->store, key.key, false, LOCK_WAIT_MS);
    if (mode != HISTORY_RECORD)
        load_old(k, &key);
    if (shared >= 0)
        close(shared);
    if (mode != HISTORY_REPLAY)
        k->lock_fd = history_lock(&k->store, key.key, true, 0);
    if (!make_trace(k)) {
        specx_warn("no history for this run: cannot make its trace: %s", strerror(errno));
        release(k);
        return false;
    }
    k->plan = history_plan_new(&k->old, k->counts.near, &k->counts);
    k->program = key.program;
    k->key = key.key;
    /* Watching from the first read: the replay may bring in what the program reads first. */
    k->trace->watching = history_plan_has_work(k->plan);
    k->counts.active = true;
    return true;
}

void history_keeper_export(const struct history_keeper *k, pid_t holder)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)holder, k->trace_fd);
    setenv(SPECX_HISTORY_TRACE_ENV, path, 1);
}

/* Follows the command until it has ended, replaying as it goes; then writes the history. */
static void keep(struct history_keeper *k)
{
    /* The idle I/O class: what the replay reads waits for every other request. */
    specx_ioprio_set(0, IOPRIO_CLASS_IDLE, 0);
    struct pollfd pfd = { .fd = k->pidfd, .events = POLLIN };
    bool ended = false;
    if (k->sampler)
        history_plan_misses_only(k->plan);
    while (!ended) {
        /* Ahead first: the program starts as the keeper does. */
        if (k->mode != HISTORY_RECORD)
            history_plan_advance(k->plan, k->trace);
        bool ticking = k->sampler || history_plan_active(k->plan);
        ended = poll(&pfd, 1, ticking ? TICK_MS : -1) > 0;
        if (k->sampler && !ended)
            history_outside_sample(k->sampler, k->trace);
        history_plan_follow(k->plan, k->trace, ended);
    }
    history_plan_finish(k->plan, k->trace);
    if (k->mode != HISTORY_REPLAY) {
        struct history_recording rec = { .store = &k->store, .program = k->program,
                                         .key = k->key,
                                         .old = k->counts.near ? NULL : &k->old,
                                         .plan = k->plan, .trace = k->trace,
                                         .argv = k->argv, .cwd = k->cwd,
                                         .run_ns = specx_now_ns() - k->trace->start_ns };
        history_record(&rec, &k->counts);
        if (k->lock_fd >= 0)
            close(k->lock_fd); /* written: the next run may load it */
        k->lock_fd = -1;
    } else if (k->counts.replayed && !k->counts.near) {
        history_touch(&k->store, &k->old);
    }
}

static void *keeper_thread(void *arg)
{
    keep(arg);
    return NULL;
}

/* A command watched from outside is only recorded by default, not replayed: its replay can
 * follow the program only by the reads it sees wait, and none wait once the replay serves
 * them. Measured on gofmt (a Go program whose goroutines read in parallel) its second run
 * took 1.06-1.13 of cold: the replay's idle-class requests held up reads the program
 * reached first. --history=replay still replays (docs/design/history.md). */
static void record_only(struct history_keeper *k)
{
    history_plan_free(k->plan);
    k->plan = NULL;
    k->counts.replayed = k->counts.near = false;
    k->counts.entries = k->counts.files = 0;
}

bool history_keeper_start_thread(struct history_keeper *k, pid_t pid)
{
    k->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (k->outside && (k->sampler = calloc(1, sizeof *k->sampler))) {
        k->sampler->pid = pid;
        k->counts.outside = true;
        if (k->mode == HISTORY_AUTO)
            record_only(k);
    }
    if (k->pidfd < 0 || (k->outside && !k->sampler) ||
        pthread_create(&k->thread, NULL, keeper_thread, k) != 0) {
        release(k);
        k->counts.active = false;
        return false;
    }
    k->threaded = true;
    return true;
}

void history_keeper_finish_thread(struct history_keeper *k)
{
    if (!k->threaded)
        return;
    pthread_join(k->thread, NULL);
    k->threaded = false;
    release(k);
}

static int ascending(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* In the keeper process: nothing of the terminal's or the command's, and no signal of theirs
 * (a ^C ends the command; its keeper then writes what it saw). */
static void become_keeper_process(const struct history_keeper *k)
{
    setsid();
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        close(null);
    }
    int keep[4] = { k->trace_fd, k->pidfd, k->store.fd, k->lock_fd };
    qsort(keep, 4, sizeof keep[0], ascending);
    unsigned from = STDERR_FILENO + 1;
    for (int i = 0; i < 4; i++) {
        if (keep[i] < (int)from)
            continue; /* -1: none */
        if ((unsigned)keep[i] > from)
            close_range(from, (unsigned)keep[i] - 1, 0);
        from = (unsigned)keep[i] + 1;
    }
    close_range(from, ~0u, 0);
}

bool history_keeper_detach(struct history_keeper *k)
{
    int pipefd[2];
    k->pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (k->pidfd < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
        release(k);
        return false;
    }
    pid_t middle = fork();
    if (middle == 0) {
        /* A grandchild, so that the command (this process, after exec) never has it as a
         * child: its wait(-1) would see it. */
        pid_t keeper = fork();
        if (keeper == 0) {
            ssize_t n = write(pipefd[1], &(pid_t){ getpid() }, sizeof(pid_t));
            become_keeper_process(k);
            if (n == (ssize_t)sizeof(pid_t))
                keep(k);
            _exit(0);
        }
        _exit(keeper > 0 ? 0 : 1);
    }
    close(pipefd[1]);
    pid_t keeper = -1;
    int status;
    ssize_t n = middle > 0 ? read(pipefd[0], &keeper, sizeof keeper) : -1;
    if (middle > 0)
        while (waitpid(middle, &status, 0) < 0 && errno == EINTR)
            ;
    close(pipefd[0]);
    bool started = n == (ssize_t)sizeof keeper && keeper > 0;
    if (started)
        history_keeper_export(k, keeper);
    release(k); /* the keeper has its own; the command gets none of them */
    return started;
}
