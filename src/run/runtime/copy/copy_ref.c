#include "run/runtime/copy/copy_ref.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/runtime/core/runtime.h"
#include "kernel/process_start.h"
#include "kernel/raw.h"

/* A pidfd on the copy, or -1 if it is gone. Opened first, checked second: if the pid had been
 * reused before the open, the process found has another start time. A copy whose start time
 * could not be read (start 0) is taken on its pid alone, as before pidfds. */
static int open_copy(struct specx_copy_ref copy)
{
    if (copy.pid <= 0) /* never pid 0 or -1: the program's group, every process */
        return -1;
    int pfd = pidfd_open(copy.pid, 0);
    if (pfd < 0)
        return -1;
    if (copy.start && specx_process_start_time(copy.pid) != copy.start) {
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

/* Reaps COPY if it has ended (with WAIT, once it ends); true if it is gone. */
static bool reap_one(struct specx_copy_ref copy, bool wait)
{
    int pfd = open_copy(copy);
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

/* Forgets *COPY if it is gone; returns whether it was. */
static bool reaped(struct specx_copy_ref *copy, bool wait)
{
    if (copy->pid == 0 || !reap_one(*copy, wait))
        return false;
    copy->pid = 0;
    return true;
}

unsigned specx_copy_reap(struct specx_copy_ref *copy, struct specx_copy_ref *dying, size_t n,
                         bool wait)
{
    unsigned gone = copy && reaped(copy, wait);
    for (size_t i = 0; i < n; i++)
        gone += reaped(&dying[i], wait);
    return gone;
}

static void kill_copy(struct specx_copy_ref copy, bool release)
{
    int pfd = open_copy(copy);
    if (pfd < 0)
        return;
    if (pidfd_send_signal(pfd, SIGKILL, NULL, 0) == 0 && release)
        specx_raw_syscall(SYS_process_mrelease, pfd, 0u);
    close(pfd);
}

enum specx_copy_end specx_copy_end(struct specx_copy_ref copy, bool release)
{
    if (reap_one(copy, false))
        return SPECX_COPY_GONE;
    kill_copy(copy, release);
    return reap_one(copy, false) ? SPECX_COPY_KILLED : SPECX_COPY_DYING;
}
