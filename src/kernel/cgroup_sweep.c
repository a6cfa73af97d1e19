/* Ending groups for good: what a command does with its groups when it ends, and what the next
 * run does with groups left by a run that was killed outright (SIGKILL: no cleanup ran). */
#include "kernel/cgroup_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "kernel/freezer.h"

void specx_cgroup_kill_all(const struct specx_cgroup *cg)
{
    pid_t pids[4096];
    long n = specx_cgroup_procs(cg, pids, sizeof pids / sizeof pids[0]);
    for (long i = 0; i < n; i++)
        kill(pids[i], SIGKILL);
}

void specx_cgroup_destroy(const struct specx_cgroup *cg, int timeout_ms)
{
    DIR *d = opendir(cg->dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_type == DT_DIR && e->d_name[0] != '.') {
            struct specx_cgroup sub = { cg->version, "" };
            if (snprintf(sub.dir, sizeof sub.dir, "%s/%s", cg->dir, e->d_name) <
                (int)sizeof sub.dir)
                specx_cgroup_destroy(&sub, timeout_ms);
        }
    closedir(d);
    /* A frozen task dies only once thawed (v1's freezer holds even SIGKILL); a group of a
     * hierarchy without the freezer refuses the write, which is fine. */
    for (int waited = 0; !specx_cgroup_is_empty(cg) && waited < timeout_ms; waited += 10) {
        specx_cgroup_kill_all(cg);
        specx_freezer_set(cg, false);
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    }
    specx_cgroup_remove(cg, timeout_ms);
}

int specx_cgroup_hold(const struct specx_cgroup *cg)
{
    int fd = open(cg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* A run that locks its group's directory (flock) while it lives is alive while the lock is
 * held, whatever its pid looks like from here (another pid namespace's). */
static bool held_by_its_run(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

void specx_cgroup_sweep_stale(const char *controller, const char *prefix, int timeout_ms,
                              void (*removing)(const char *dir))
{
    struct specx_cgroup parent;
    if (specx_cgroup_parent_for(controller, &parent) < 0)
        return;
    DIR *d = opendir(parent.dir);
    if (!d)
        return;
    size_t len = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        char rest;
        if (strncmp(e->d_name, prefix, len) != 0 || e->d_name[len] != '-' ||
            sscanf(e->d_name + len + 1, "%d%c", &pid, &rest) != 1 || pid <= 0 ||
            kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        struct specx_cgroup stale = { parent.version, "" };
        if (snprintf(stale.dir, sizeof stale.dir, "%s/%s", parent.dir, e->d_name) >=
                (int)sizeof stale.dir ||
            held_by_its_run(stale.dir))
            continue;
        if (removing)
            removing(stale.dir);
        specx_cgroup_destroy(&stale, timeout_ms);
    }
    closedir(d);
}
