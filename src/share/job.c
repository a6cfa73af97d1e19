/* See job.h. */
#include "share/job.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel/cgroup_sweep.h"
#include "kernel/clock.h"
#include "kernel/freezer.h"
#include "kernel/memcg.h"
#include "common/util.h"

/* How long a job's groups may take to empty once its processes are killed. */
#define EMPTY_TIMEOUT_MS 5000

/* Makes this run's group of CONTROLLER in OUT, held while the run lives (*HOLD). */
static int make_parent(const char *controller, struct specx_cgroup *out, int *hold, char *err,
                       size_t errsize)
{
    struct specx_cgroup parent;
    char name[64];
    if (specx_cgroup_parent_for(controller, &parent) < 0)
        return specx_format_error(err, errsize, "no cgroup hierarchy with the %s controller: %s",
                                  controller, strerror(errno));
    snprintf(name, sizeof name, "specx-share-%d", (int)getpid());
    if (specx_cgroup_make(&parent, name, controller, out) < 0)
        return specx_format_error(err, errsize, "cannot make the cgroup %s/%s: %s", parent.dir,
                                  name, strerror(errno));
    *hold = specx_cgroup_hold(out);
    return 0;
}

int share_groups_make(struct share_groups *g, uint64_t limit, char *err, size_t errsize)
{
    *g = (struct share_groups){ .mem_hold = -1, .frz_hold = -1 };
    if (make_parent("memory", &g->mem, &g->mem_hold, err, errsize) < 0)
        return -1;
    g->mem_made = true;
    if (specx_cgroup_make(&g->mem, "prefetch", "memory", &g->fetch) < 0) {
        specx_format_error(err, errsize, "cannot make the cgroup %s/prefetch: %s", g->mem.dir,
                           strerror(errno));
        share_groups_remove(g);
        return -1;
    }
    g->fetch_made = true;
    if (limit && specx_memcg_set_limit(&g->mem, limit) < 0) {
        specx_format_error(err, errsize, "cannot set the memory limit of %s: %s", g->mem.dir,
                           strerror(errno));
        share_groups_remove(g);
        return -1;
    }
    struct specx_cgroup frz_parent;
    if (specx_cgroup_parent_for("freezer", &frz_parent) < 0 ||
        frz_parent.version != g->mem.version || g->mem.version == SPECX_CG_V1) {
        /* v1: the freezer has its own hierarchy (or none: then making it says why). */
        if (make_parent("freezer", &g->frz, &g->frz_hold, err, errsize) < 0) {
            share_groups_remove(g);
            return -1;
        }
        g->frz_separate = g->frz_made = true;
    } else {
        g->frz = g->mem;
    }
    return 0;
}

static void let_go(int *hold)
{
    if (*hold >= 0)
        close(*hold);
    *hold = -1;
}

void share_groups_remove(struct share_groups *g)
{
    if (g->frz_made && specx_cgroup_remove(&g->frz, EMPTY_TIMEOUT_MS) < 0)
        specx_warn("cannot remove the cgroup %s: %s", g->frz.dir, strerror(errno));
    if (g->fetch_made) /* a helper still reading a job's file back in ends with the run */
        specx_cgroup_destroy(&g->fetch, EMPTY_TIMEOUT_MS);
    if (g->mem_made && specx_cgroup_remove(&g->mem, EMPTY_TIMEOUT_MS) < 0)
        specx_warn("cannot remove the cgroup %s: %s", g->mem.dir, strerror(errno));
    g->frz_made = g->mem_made = g->fetch_made = false;
    let_go(&g->mem_hold);
    let_go(&g->frz_hold);
}

static void say_removing(const char *dir)
{
    specx_warn("removing the cgroup %s left by a run that was killed", dir);
}

void share_groups_sweep_stale(void)
{
    /* The freezer's first: what is frozen there must be thawed to die. */
    specx_cgroup_sweep_stale("freezer", "specx-share", EMPTY_TIMEOUT_MS, say_removing);
    specx_cgroup_sweep_stale("memory", "specx-share", EMPTY_TIMEOUT_MS, say_removing);
}

static int make_job_groups(struct share_job *j, const struct share_groups *g, char *err,
                           size_t errsize)
{
    char name[32];
    snprintf(name, sizeof name, "job-%u", j->number);
    if (specx_cgroup_make(&g->mem, name, "memory", &j->mem) < 0)
        return specx_format_error(err, errsize, "cannot make the cgroup %s/%s: %s", g->mem.dir,
                                  name, strerror(errno));
    j->mem_made = true;
    if (!g->frz_separate) {
        j->frz = j->mem;
        return 0;
    }
    if (specx_cgroup_make(&g->frz, name, NULL, &j->frz) < 0)
        return specx_format_error(err, errsize, "cannot make the cgroup %s/%s: %s", g->frz.dir,
                                  name, strerror(errno));
    j->frz_made = true;
    return 0;
}

/* The job's two output descriptors for the child: files in OUTPUT_DIR, or pipes whose read
 * ends the job keeps in its streams. */
static int open_outputs(struct share_job *j, const char *output_dir, int child_fds[2], char *err,
                        size_t errsize)
{
    struct share_stream *streams[2] = { &j->out, &j->err };
    static const char *const suffix[2] = { "out", "err" };
    for (int i = 0; i < 2; i++) {
        streams[i]->fd = -1;
        streams[i]->to = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
        if (output_dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%u.%s", output_dir, j->number, suffix[i]);
            child_fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (child_fds[i] < 0)
                return specx_format_error(err, errsize, "cannot write %s: %s", path,
                                          strerror(errno));
            continue;
        }
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
            return specx_format_error(err, errsize, "pipe: %s", strerror(errno));
        streams[i]->fd = p[0];
        child_fds[i] = p[1];
    }
    return 0;
}

/* In the child: into the job's groups (a frozen group freezes it here, before exec), its
 * output in place, signals as a fresh process has them, then the command. */
static _Noreturn void exec_job(struct share_job *j, const struct share_groups *g,
                               const int child_fds[2])
{
    /* The groups' holds are the run's: a job frozen before its exec (or killed and frozen)
     * must not keep them held once specx share is gone, or no later run would sweep them. */
    close(g->mem_hold);
    close(g->frz_hold);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Should specx share be killed outright, its jobs go with it (cleanup.c's sweep removes
     * what is left). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (specx_cgroup_attach(&j->mem, 0) < 0 || (j->frz_made && specx_cgroup_attach(&j->frz, 0) < 0)) {
        dprintf(STDERR_FILENO, "specx share: cannot join the job's cgroup: %s\n", strerror(errno));
        _exit(127);
    }
    /* Several jobs reading one terminal in turns would each get pieces of what is typed. */
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0)
        dup2(null, STDIN_FILENO);
    dup2(child_fds[0], STDOUT_FILENO);
    dup2(child_fds[1], STDERR_FILENO);
    execvp(j->argv[0], j->argv);
    int code = errno == ENOENT ? 127 : 126;
    dprintf(STDERR_FILENO, "specx share: cannot run '%s': %s\n", j->argv[0], strerror(errno));
    _exit(code);
}

/* While a job is frozen, the kernel's reclaim at the group's limit must be able to swap its
 * pages: they are what makes room for the running job, and a reclaim that cannot take them
 * ends in the OOM killer (a group with swappiness 0, which the job's group inherits, swaps
 * nothing). Frozen, its group weighs anonymous pages as much as file pages (100, or more if
 * the job's own is higher); thawed, it has its own swappiness again (docs/design/share.md). */
static void let_reclaim_swap(const struct share_job *j, bool frozen)
{
    const int frozen_swappiness = 100;
    if (j->swappiness < 0 || j->swappiness >= frozen_swappiness)
        return;
    specx_memcg_set_swappiness(&j->mem, frozen ? frozen_swappiness : j->swappiness);
}

int share_job_start(struct share_job *j, const struct share_groups *g, bool run,
                    const char *output_dir, char *err, size_t errsize)
{
    int child_fds[2] = { -1, -1 };
    j->pidfd = -1;
    if (make_job_groups(j, g, err, errsize) < 0)
        return -1;
    j->swappiness = specx_memcg_swappiness(&j->mem);
    if (!run && specx_freezer_set(&j->frz, true) < 0)
        return specx_format_error(err, errsize, "cannot freeze %s: %s", j->frz.dir,
                                  strerror(errno));
    if (!run)
        let_reclaim_swap(j, true);
    if (open_outputs(j, output_dir, child_fds, err, errsize) < 0)
        return -1;
    fflush(NULL);
    j->pid = fork();
    if (j->pid == 0)
        exec_job(j, g, child_fds);
    int fork_errno = errno;
    close(child_fds[0]);
    close(child_fds[1]);
    if (j->pid < 0)
        return specx_format_error(err, errsize, "fork: %s", strerror(fork_errno));
    j->pidfd = (int)syscall(SYS_pidfd_open, j->pid, 0);
    j->started_ns = specx_now_ns();
    j->turns = run;
    return 0;
}

int share_job_freeze(const struct share_job *j, bool frozen, int timeout_ms)
{
    if (!frozen)
        let_reclaim_swap(j, false);
    if (specx_freezer_set(&j->frz, frozen) < 0)
        return -1;
    int rc = specx_freezer_wait(&j->frz, frozen, timeout_ms);
    if (frozen)
        let_reclaim_swap(j, true);
    return rc;
}

uint64_t share_job_major_faults(const struct share_job *j)
{
    uint64_t n = 0;
    specx_memcg_stat(&j->mem, "pgmajfault", &n);
    return n;
}

uint64_t share_job_peak_bytes(const struct share_job *j)
{
    return specx_memcg_peak(&j->mem);
}

uint64_t share_job_cpu_ns(const struct share_job *j)
{
    uint64_t ns = specx_cgroup_cpu_ns(&j->mem);
    return j->exited && j->mem.version == SPECX_CG_V1 ? ns + j->cpu_at_exit_ns : ns;
}

void share_job_end(struct share_job *j)
{
    if (!j->mem_made)
        return;
    const struct timespec pause = { 0, 10 * 1000 * 1000 };
    for (int waited = 0; waited < EMPTY_TIMEOUT_MS; waited += 10) {
        specx_cgroup_kill_all(&j->mem);
        /* v1's freezer holds a killed task until thawed; v2's lets SIGKILL through. */
        specx_freezer_set(&j->frz, false);
        if (!j->exited && j->pid > 0 && waitpid(j->pid, &j->status, WNOHANG) == j->pid)
            j->exited = true;
        if (specx_cgroup_is_empty(&j->mem) && (!j->frz_made || specx_cgroup_is_empty(&j->frz)))
            break;
        nanosleep(&pause, NULL);
    }
    j->major_faults = share_job_major_faults(j);
    j->peak_bytes = share_job_peak_bytes(j);
    if (j->frz_made && specx_cgroup_remove(&j->frz, EMPTY_TIMEOUT_MS) < 0)
        specx_warn("cannot remove the cgroup %s: %s", j->frz.dir, strerror(errno));
    if (specx_cgroup_remove(&j->mem, EMPTY_TIMEOUT_MS) < 0)
        specx_warn("cannot remove the cgroup %s: %s", j->mem.dir, strerror(errno));
    j->mem_made = j->frz_made = false;
    share_files_clear(&j->files);
    if (j->pidfd >= 0)
        close(j->pidfd);
    j->pidfd = -1;
}

/* Writes all of BUF to FD (our stdout or stderr). */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

static void emit_line(const struct share_stream *s, unsigned number, const char *line,
                      size_t len, bool add_newline)
{
    char prefix[16];
    int plen = snprintf(prefix, sizeof prefix, "[%u] ", number);
    /* One write per line where it fits: lines of different jobs never mix. */
    char out[sizeof s->buf + 24];
    memcpy(out, prefix, (size_t)plen);
    memcpy(out + plen, line, len);
    size_t total = (size_t)plen + len;
    if (add_newline)
        out[total++] = '\n';
    write_all(s->to, out, total);
}

bool share_stream_relay(struct share_stream *s, unsigned number)
{
    if (s->fd < 0)
        return false;
    ssize_t n = read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    bool eof = n <= 0;
    if (n > 0)
        s->len += (size_t)n;
    size_t start = 0;
    for (size_t i = 0; i < s->len; i++)
        if (s->buf[i] == '\n') {
            emit_line(s, number, s->buf + start, i + 1 - start, false);
            start = i + 1;
        }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    /* A line longer than the buffer, or the end: out with what there is. */
    if (s->len == sizeof s->buf || (eof && s->len > 0)) {
        emit_line(s, number, s->buf, s->len, true);
        s->len = 0;
    }
    if (eof) {
        close(s->fd);
        s->fd = -1;
    }
    return !eof;
}

int share_job_exit_code(const struct share_job *j)
{
    if (WIFEXITED(j->status))
        return WEXITSTATUS(j->status);
    if (WIFSIGNALED(j->status))
        return 128 + WTERMSIG(j->status);
    return 1;
}

struct share_job_figures share_job_figures(const struct share_job *j)
{
    return (struct share_job_figures){
        .number = j->number, .argv = j->argv, .exited = j->exited, .status = j->status,
        .exit_code = j->exited ? share_job_exit_code(j) : -1,
        .started_ns = j->started_ns, .ended_ns = j->ended_ns, .turns = j->turns,
        .major_faults = j->major_faults, .majflt_first_second = j->majflt_first_second,
        .peak_bytes = j->peak_bytes, .prefetched_bytes = j->prefetched_bytes,
        .prefetched_file_bytes = j->prefetched_file_bytes, .unused_bytes = j->unused_bytes,
    };
}
