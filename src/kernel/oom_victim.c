/* See oom_victim.h. */
#include "oom_victim.h"
#include "kfile.h"
#include "proc_path.h"

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PF_EXITING 0x00000004u /* include/linux/sched.h */

/* The text of field N (N >= 3) of a /proc/PID/stat, or NULL. */
static const char *stat_field(const char *text, int n)
{
    const char *p = strrchr(text, ')');
    for (int field = 2; p && field < n; field++)
        p = strchr(p + 1, ' ');
    return p ? p + 1 : NULL;
}

bool specx_oom_victim_stat_killed(const char *text)
{
    const char *flags = stat_field(text, 9), *pending = stat_field(text, 31),
               *exit_code = stat_field(text, 52);
    if (!flags || !pending)
        return false;
    bool exiting = strtoul(flags, NULL, 10) & PF_EXITING;
    return (strtoull(pending, NULL, 10) & (1ull << (SIGKILL - 1))) ||
           (exiting && exit_code && (strtol(exit_code, NULL, 10) & 0x7f) == SIGKILL);
}

static bool killed(pid_t pid)
{
    char path[SPECX_PROC_PID_PATH_MAX], text[1024];
    specx_proc_pid_path(path, pid, "stat");
    return specx_kfile_read(path, text, sizeof text) > 0 && specx_oom_victim_stat_killed(text);
}

/* process_mrelease waits for the victim's memory map, which a victim starved at SCHED_IDLE
 * may hold: it gets a normal share of the CPU first. */
static void lift_out_of_idle(pid_t pid)
{
    if (sched_getscheduler(pid) == SCHED_IDLE)
        sched_setscheduler(pid, SCHED_OTHER, &(struct sched_param){ 0 });
}

bool specx_oom_victim_release(pid_t pid)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0)
        return false;
    /* Checked with the pidfd open: the pid cannot name another process before the release. */
    bool victim = killed(pid);
    if (victim) {
        lift_out_of_idle(pid);
        syscall(SYS_process_mrelease, pidfd, 0u);
    }
    specx_kfile_close(pidfd);
    return victim;
}
