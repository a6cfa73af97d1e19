/* See sandbox_open_trap.h. Runs in a SIGSYS handler: system calls only, errno preserved. */
#include "run/runtime/sandbox/sandbox_open_trap.h"
#include "run/runtime/sandbox/privatize.h"
#include "kernel/proc_path.h"
#include "kernel/raw.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "the open trap reads system-call arguments from x86-64 registers; port on_sigsys"
#endif

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code of a SIGSYS raised by a seccomp SECCOMP_RET_TRAP */
#endif

static uint64_t cookie;
static struct sigaction previous;

uint64_t specx_open_trap_choose_cookie(void)
{
    if (getrandom(&cookie, sizeof cookie, 0) != sizeof cookie)
        cookie = 0;
    return cookie;
}

/* Opens PATH like openat(DIRFD, PATH, FLAGS, MODE) would, if it names a file that is safe to
 * open (privatize.h), but read-only where FLAGS ask for O_RDWR: the copy reads what the program
 * would read, and its writes fail as they would on any descriptor. Returns the descriptor (the
 * number openat would have given) or -errno. */
static long checked_open(long dirfd, long path, long flags, long mode)
{
    bool asked_rdwr = (flags & O_ACCMODE) == O_RDWR;
    flags &= ~(long)O_ACCMODE;
    int probe = (int)specx_raw_syscall(SYS_openat, dirfd, path,
                             O_PATH | O_CLOEXEC | (flags & (O_NOFOLLOW | O_DIRECTORY)));
    if (probe < 0)
        return -errno;
    struct stat st;
    int refused = specx_open_refusal(probe, asked_rdwr ? O_RDWR : O_RDONLY, &st);
    if (refused) {
        close(probe);
        return refused;
    }
    char self[SPECX_PROC_FD_PATH_MAX];
    specx_proc_fd_path(self, probe);
    /* The O_PATH open already honoured O_NOFOLLOW; on the /proc link it would mean ELOOP.
     * O_NOATIME where the kernel allows it (owner or CAP_FOWNER): a file the program itself
     * never reads keeps its access time. */
    long reopen_flags = flags & ~(long)O_NOFOLLOW;
    int fd = (int)specx_raw_syscall(SYS_openat, AT_FDCWD, self, reopen_flags | O_NOATIME, mode,
                                    0, cookie);
    if (fd < 0 && errno == EPERM)
        fd = (int)specx_raw_syscall(SYS_openat, AT_FDCWD, self, reopen_flags, mode, 0, cookie);
    if (fd < 0) {
        int err = errno;
        close(probe);
        return -err;
    }
    /* probe took the number the application's open would have got: move the file there. */
    dup3(fd, probe, (flags & O_CLOEXEC) ? O_CLOEXEC : 0);
    close(fd);
    return probe;
}

static void pass_to_previous(int sig, siginfo_t *info, void *context)
{
    if (previous.sa_flags & SA_SIGINFO)
        previous.sa_sigaction(sig, info, context);
    else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN)
        previous.sa_handler(sig);
    else if (previous.sa_handler == SIG_DFL)
        /* what the default action would end with */
        specx_raw_syscall(SYS_exit_group, 128 + SIGSYS);
}

static void on_sigsys(int sig, siginfo_t *info, void *context)
{
    if (info->si_code != SYS_SECCOMP ||
        (info->si_syscall != SYS_openat && info->si_syscall != SYS_open)) {
        pass_to_previous(sig, info, context);
        return;
    }
    int saved_errno = errno;
    greg_t *reg = ((ucontext_t *)context)->uc_mcontext.gregs;
    if (info->si_syscall == SYS_openat)
        reg[REG_RAX] = checked_open(reg[REG_RDI], reg[REG_RSI], reg[REG_RDX], reg[REG_R10]);
    else
        reg[REG_RAX] = checked_open(AT_FDCWD, reg[REG_RDI], reg[REG_RSI], reg[REG_RDX]);
    errno = saved_errno;
}

int specx_open_trap_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    /* Nothing may interrupt the handler: SIGSYS is blocked while it runs, and the kernel kills
     * a process whose seccomp trap finds SIGSYS blocked. A handler that opened a file in there
     * (the copy's own memory watch reads /proc/self/smaps_rollup on a timer) killed the copy
     * that way (seen: live copies of a Python pool ending by SIGSYS after hundreds of opens,
     * each of which runs this handler for two file-system round trips). */
    sigfillset(&sa.sa_mask);
    sigset_t sigsys;
    sigemptyset(&sigsys);
    sigaddset(&sigsys, SIGSYS);
    if (sigaction(SIGSYS, &sa, &previous) < 0 || sigprocmask(SIG_UNBLOCK, &sigsys, NULL) < 0)
        return -errno;
    return 0;
}
