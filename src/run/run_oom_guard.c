/* See run_oom_guard.h. */
#include "run/run_oom_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/memcg.h"
#include "common/paths.h"

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

/* In the orphaned child: out of the program's group, then the guard's own program, its pages
 * allocated there. */
static _Noreturn void become_guard(const char *path, const struct specx_cgroup *cg,
                                   int program_fd, bool verbose)
{
    if (!leave_group(cg))
        _exit(0);
    char fd_text[16];
    snprintf(fd_text, sizeof fd_text, "%d", program_fd);
    fcntl(program_fd, F_SETFD, 0); /* a pidfd is close-on-exec */
    char *const argv[] = { "specx-oomguard", fd_text, cg->version == SPECX_CG_V1 ? "1" : "2",
                           (char *)cg->dir, verbose ? "verbose" : NULL, NULL };
    /* No environment: specx run may already have set the program's (LD_PRELOAD of the
     * runtime, which has no business in the guard). */
    execve(path, argv, (char *[]){ NULL });
    _exit(0);
}

void run_oom_guard_start(pid_t program, bool verbose)
{
    struct specx_cgroup cg;
    char path[PATH_MAX];
    /* As PID 1 of a namespace the program would inherit the orphaned guard as a child. */
    if (getpid() == 1 || specx_memcg_of(program, &cg) < 0 || specx_memcg_limit(&cg) == 0 ||
        specx_find_component("specx-oomguard", path, sizeof path) < 0)
        return;
    int program_fd = (int)syscall(SYS_pidfd_open, program, 0);
    if (program_fd < 0)
        return;
    pid_t parent = fork();
    if (parent == 0) {
        if (fork() == 0)
            become_guard(path, &cg, program_fd, verbose);
        _exit(0);
    }
    close(program_fd);
    while (parent > 0 && waitpid(parent, NULL, 0) < 0 && errno == EINTR)
        ;
}
