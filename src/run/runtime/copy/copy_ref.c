#include "run/runtime/copy/copy_ref.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/runtime/core/runtime.h"
#include "kernel/raw.h"

/* Field 22 of /proc/PID/stat; the command name (field 2) may hold spaces and parentheses, so
 * fields are counted from the last ')'. Raw syscalls: the runtime's own read wrappers must
 * not see this read. */
uint64_t specx_copy_start_time(pid_t pid)
{
    char path[32], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = (int)specx_raw_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = specx_raw_syscall(SYS_read, fd, buf, sizeof buf - 1);
    specx_raw_syscall(SYS_close, fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* A pidfd on the copy, or -1 if it is gone. Opened first, checked second: if the pid had been
 * reused before the open, the process found has another start time. A copy whose start time
 * could not be read (start 0) is taken on its pid alone, as before pidfds. */
static int open_copy(pid_t pid, uint64_t start)
{
    if (pid <= 0) /* never pid 0 or -1: the program's group, every process */
        return -1;
    int pfd = pidfd_open(pid, 0);
    if (pfd < 0)
        return -1;
    if (start && specx_copy_start_time(pid) != start) {
        close(pfd);
        return -1;
    }
    return pfd;
}

/* For --verbose: how a copy ended tells why it predicted what it did (a copy that dies of
 * the garbage it read in place of data not in memory exits early, or is killed by its
 * sandbox's filter). */
static void log_end(const siginfo_t *info)
{
    if (info->si_code == CLD_EXITED)
        specx_log("pid %d: speculative process %d ended: exit status %d", specx.pid,
                  (int)info->si_pid, info->si_status);
    else
        specx_log("pid %d: speculative process %d ended: %s", specx.pid, (int)info->si_pid,
                  strsignal(info->si_status));
}

bool specx_copy_reap(pid_t pid, uint64_t start, bool wait)
{
    int pfd = open_copy(pid, start);
    if (pfd < 0)
        return true;
    siginfo_t info;
    int ret;
    do {
        info.si_pid = 0;
        ret = waitid(P_PIDFD, (id_t)pfd, &info, WEXITED | __WALL | (wait ? 0 : WNOHANG));
    } while (ret < 0 && errno == EINTR);
    close(pfd);
    if (ret == 0 && info.si_pid != 0)
        log_end(&info);
    return ret < 0 || info.si_pid != 0; /* ECHILD: reaped by the program meanwhile */
}

static void kill_copy(pid_t pid, uint64_t start, bool release)
{
    int pfd = open_copy(pid, start);
    if (pfd < 0)
        return;
    if (pidfd_send_signal(pfd, SIGKILL, NULL, 0) == 0 && release)
        specx_raw_syscall(SYS_process_mrelease, pfd, 0u);
    close(pfd);
}

enum specx_copy_end specx_copy_end(pid_t pid, uint64_t start, bool release)
{
    if (specx_copy_reap(pid, start, false))
        return SPECX_COPY_GONE;
    kill_copy(pid, start, release);
    return specx_copy_reap(pid, start, false) ? SPECX_COPY_KILLED : SPECX_COPY_DYING;
}
