/* See slurm.h. */
#include "share/slurm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "kernel/blocked_reads.h"
#include "kernel/freezer.h"

#define WATCHED (IN_CREATE | IN_DELETE | IN_ONLYDIR)

/* A directory of a group tree we trust: only root (or we ourselves) can make groups in it.
 * What a job group lists is acted on (its processes' memory prefetched and marked cold). */
static int check_trusted(const char *path, char *err, size_t errsize)
{
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return specx_format_error(err, errsize, "--follow-slurm: '%s' is no directory", path);
    if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022))
        return specx_format_error(err, errsize, "--follow-slurm: '%s' may be written by others "
                                  "than root", path);
    return 0;
}

static bool has_file(const char *dir, const char *file)
{
    char path[PATH_MAX + 32];
    struct stat st;
    return snprintf(path, sizeof path, "%s/%s", dir, file) < (int)sizeof path &&
           stat(path, &st) == 0;
}

int share_slurm_open(struct share_slurm *s, const char *root, char *err, size_t errsize)
{
    *s = (struct share_slurm){ .inotify = -1, .root_given = root != NULL };
    if (root) {
        if (strlen(root) >= sizeof s->top.dir)
            return specx_format_error(err, errsize, "--follow-slurm: '%s' is too long", root);
        if (check_trusted(root, err, errsize) < 0)
            return -1;
        snprintf(s->top.dir, sizeof s->top.dir, "%s", root);
        if (has_file(root, "freezer.state"))
            s->top.version = SPECX_CG_V1;
        else if (has_file(root, "cgroup.freeze"))
            s->top.version = SPECX_CG_V2;
        else
            return specx_format_error(err, errsize, "--follow-slurm: '%s' is no group of the "
                                      "v1 freezer nor of cgroup v2", root);
    } else {
        struct specx_cgroup_where w;
        if (specx_cgroup_where(0, "freezer", &w) < 0)
            return specx_format_error(err, errsize, "--follow-slurm: no cgroup freezer here");
        s->top.version = w.version;
        if (snprintf(s->top.dir, sizeof s->top.dir, "%s%s", w.mount,
                     w.version == SPECX_CG_V2 ? "/system.slice" : "") >= (int)sizeof s->top.dir)
            return specx_format_error(err, errsize, "--follow-slurm: path too long");
    }
    s->inotify = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (s->inotify < 0)
        return specx_format_error(err, errsize, "inotify: %s", strerror(errno));
    return 0;
}

void share_slurm_close(struct share_slurm *s)
{
    if (s->inotify >= 0)
        close(s->inotify);
    s->inotify = -1;
}

int share_slurm_fd(const struct share_slurm *s)
{
    return s->inotify;
}

static bool job_name(const char *name, unsigned long *id)
{
    char *end;
    if (strncmp(name, "job_", 4) != 0 || name[4] < '0' || name[4] > '9')
        return false;
    *id = strtoul(name + 4, &end, 10);
    return *end == '\0';
}

struct found_job {
    unsigned long id;
    struct specx_cgroup cg;
};

struct found_list {
    struct found_job *jobs;
    size_t n, cap;
};

/* The jobs in DIR (a root, or on v1 a root's uid_U), and below it to DEPTH more levels. */
static void find_jobs(struct share_slurm *s, const char *dir, int depth, struct found_list *l)
{
    DIR *d = opendir(dir);
    if (!d)
        return; /* removed meanwhile */
    inotify_add_watch(s->inotify, dir, WATCHED); /* a watch of a group removed ends with it */
    struct dirent *e;
    char path[PATH_MAX];
    unsigned long id;
    while ((e = readdir(d))) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            continue;
        if (job_name(e->d_name, &id)) {
            if (!specx_grow(&l->jobs, &l->cap, l->n, sizeof *l->jobs, 16))
                break;
            l->jobs[l->n] = (struct found_job){ .id = id, .cg.version = s->top.version };
            memcpy(l->jobs[l->n++].cg.dir, path, sizeof path);
        } else if (depth > 0 && strncmp(e->d_name, "uid_", 4) == 0) {
            find_jobs(s, path, depth - 1, l);
        }
    }
    closedir(d);
}

/* Slurm's roots below TOP (slurm.h), each searched for jobs. */
static void find_roots(struct share_slurm *s, struct found_list *l)
{
    if (s->root_given) {
        find_jobs(s, s->top.dir, 1, l);
        return;
    }
    DIR *d = opendir(s->top.dir);
    if (!d)
        return;
    inotify_add_watch(s->inotify, s->top.dir, WATCHED); /* for the root slurmd makes */
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d))) {
        bool root = s->top.version == SPECX_CG_V1
                        ? strcmp(e->d_name, "slurm") == 0 || strncmp(e->d_name, "slurm_", 6) == 0
                        : strcmp(e->d_name, "slurmstepd.scope") == 0;
        if (root && e->d_type == DT_DIR &&
            snprintf(path, sizeof path, "%s/%s", s->top.dir, e->d_name) < (int)sizeof path)
            find_jobs(s, path, 1, l);
    }
    closedir(d);
}

static int by_id(const void *a, const void *b)
{
    unsigned long x = ((const struct found_job *)a)->id, y = ((const struct found_job *)b)->id;
    return (x > y) - (x < y);
}

void share_slurm_scan(struct share_slurm *s, void (*found)(void *ctx, const struct specx_cgroup *job),
                      void *ctx)
{
    char events[4096];
    while (read(s->inotify, events, sizeof events) > 0)
        ; /* what changed is read from the tree itself */
    struct found_list l = { 0 };
    find_roots(s, &l);
    qsort(l.jobs, l.n, sizeof *l.jobs, by_id); /* the order Slurm started them in */
    for (size_t i = 0; i < l.n; i++)
        found(ctx, &l.jobs[i].cg);
    free(l.jobs);
}

/* The group of a step that holds its tasks: v2's "user" (slurmstepd has "slurm" beside it,
 * and Slurm freezes only "user"), else the step's own. */
static void task_group(const struct specx_cgroup *step, struct specx_cgroup *tasks)
{
    *tasks = *step;
    if (has_file(step->dir, "user/cgroup.procs") &&
        strlen(step->dir) + sizeof "/user" <= sizeof tasks->dir)
        strcat(tasks->dir, "/user");
}

/* Frozen, or being frozen: Slurm has asked. */
static bool freeze_asked(const struct specx_cgroup *g)
{
    char text[32];
    if (g->version == SPECX_CG_V1)
        return specx_cgroup_read(g, "freezer.state", text, sizeof text) > 0 &&
               strncmp(text, "THAWED", 6) != 0;
    return (specx_cgroup_read(g, "cgroup.freeze", text, sizeof text) > 0 && text[0] == '1') ||
           specx_freezer_is_frozen(g);
}

static bool all_stopped(const pid_t *pids, long n)
{
    for (long i = 0; i < n; i++)
        if (specx_thread_state(pids[i], pids[i]) != 'T')
            return false;
    return true;
}

/* 1: the step's tasks are suspended; 0: they run; -1: it has none. */
static int step_suspended(const struct specx_cgroup *step)
{
    struct specx_cgroup tasks;
    pid_t pids[SPECX_CGROUP_PROCS_MAX];
    task_group(step, &tasks);
    long n = specx_cgroup_procs_tree(&tasks, true, pids, SPECX_CGROUP_PROCS_MAX);
    if (n <= 0)
        return -1;
    return freeze_asked(&tasks) || all_stopped(pids, n);
}

int share_slurm_job_state(const struct specx_cgroup *job)
{
    DIR *d = opendir(job->dir);
    if (!d)
        return -1;
    struct dirent *e;
    struct specx_cgroup step = { .version = job->version };
    int suspended = 0, running = 0;
    while ((e = readdir(d)) && !running) {
        if (e->d_type != DT_DIR || strncmp(e->d_name, "step_", 5) != 0 ||
            snprintf(step.dir, sizeof step.dir, "%s/%s", job->dir, e->d_name) >=
                (int)sizeof step.dir)
            continue;
        int state = step_suspended(&step);
        suspended += state == 1;
        running += state == 0;
    }
    closedir(d);
    return running ? 0 : suspended ? 1 : -1;
}
