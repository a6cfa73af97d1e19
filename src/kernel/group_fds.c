/* See group_fds.h. */
#include "kernel/group_fds.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kfile.h"

#define MAX_PROCS 4096

static void each_fd_of(pid_t pid, specx_fd_visit visit, void *arg)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char link[128], target[PATH_MAX];
        snprintf(link, sizeof link, "%s/%.40s", dir, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        visit(pid, atoi(e->d_name), target, arg);
    }
    closedir(d);
}

void specx_cgroup_each_fd(const struct specx_cgroup *group, specx_fd_visit visit, void *arg)
{
    pid_t pids[MAX_PROCS]; /* on the stack: callers run in more than one thread */
    long n = specx_cgroup_procs(group, pids, MAX_PROCS);
    for (long i = 0; i < n; i++)
        each_fd_of(pids[i], visit, arg);
}

bool specx_fd_info(pid_t pid, int fd, uint64_t *pos, unsigned *flags)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)pid, fd);
    if (specx_kfile_read(path, text, sizeof text) <= 0 || !specx_kfile_key_u64(text, "pos:", pos))
        return false;
    const char *f = strstr(text, "flags:"); /* in octal */
    *flags = f ? (unsigned)strtoul(f + 6, NULL, 8) : 0;
    return true;
}
