/* See oom_victim.h. */
#include "kernel/oom_victim.h"
#include "kernel/kfile.h"
#include "kernel/proc_path.h"
#include "kernel/raw.h"

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

bool specx_oom_victim_status_killed(const char *text)
{
    const uint64_t sigkill = 1ull << (SIGKILL - 1);
    uint64_t shared = 0, thread = 0;
    specx_kfile_key_hex(text, "ShdPnd:", &shared);
    specx_kfile_key_hex(text, "SigPnd:", &thread);
    return ((shared | thread) & sigkill) != 0;
}

static bool killed(pid_t pid)
{
    char path[SPECX_PROC_PID_PATH_MAX], text[4096];
    specx_proc_pid_path(path, pid, "status");
    return specx_kfile_read(path, text, sizeof text) > 0 && specx_oom_victim_status_killed(text);
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
    int pidfd = (int)specx_raw_syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0)
        return false;
    /* Checked with the pidfd open: the pid cannot name another process before the release. */
    bool victim = killed(pid);
    if (victim) {
        lift_out_of_idle(pid);
        specx_raw_syscall(SYS_process_mrelease, pidfd, 0u);
    }
    specx_kfile_close(pidfd);
    return victim;
}
