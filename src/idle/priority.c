/* See priority.h. */
#include "idle/priority.h"

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernel/ioprio.h"

/* The level of the best-effort class a process gets by default (ionice(1)). */
#define DEFAULT_BE_LEVEL 4

int idle_priority_lower_self(void)
{
    struct sched_param none = { 0 };
    if (sched_setscheduler(0, SCHED_IDLE, &none) < 0)
        return -1;
    return specx_ioprio_set(0, IOPRIO_CLASS_IDLE, 0);
}

static unsigned promote_threads(pid_t pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    unsigned n = 0;
    struct sched_param none = { 0 };
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid > 0 && sched_setscheduler(tid, SCHED_OTHER, &none) == 0) {
            specx_ioprio_set(tid, IOPRIO_CLASS_BE, DEFAULT_BE_LEVEL);
            n++;
        }
    }
    closedir(d);
    return n;
}

unsigned idle_priority_promote(const struct specx_cgroup *group)
{
    pid_t pids[SPECX_CGROUP_PROCS_MAX];
    unsigned n = 0;
    /* Twice: a process started while the first pass ran inherited idle priority from a
     * thread not yet promoted. */
    for (int pass = 0; pass < 2; pass++) {
        long count = specx_cgroup_procs(group, pids, SPECX_CGROUP_PROCS_MAX);
        n = 0;
        for (long i = 0; i < count; i++)
            n += promote_threads(pids[i]);
    }
    return n;
}
