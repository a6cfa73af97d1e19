/* The speculative process's system-call allow-list (§4.1.1: "speculative processes perform a
 * table lookup indexed by the system call number and then ... either return immediately or
 * continue with the system call"). Everything not listed fails with EPERM: writes to files,
 * pipes, sockets and terminals, changes to the file system, signals to other processes,
 * process creation, IPC, privileged operations. The policy is conservative, as the paper asks:
 * a call that *may* be unsafe is refused; the speculative copy then merely predicts worse.
 *
 * By the time the filter is loaded, privatize.c has left the child no shared file description
 * and no shared writable mapping except the runtime's own control regions, and every descriptor
 * it holds is read-only or /dev/null. The rules below rely on that. */
#include "run/runtime/sandbox/sandbox_filter.h"
#include "kernel/raw.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* Linux 6.5; older C headers lack it */
#endif

/* Stands for the speculative process's own pid while the filter is compiled (before that pid
 * exists); specx_filter_load patches the real pid in. Above any pid_max, so never a real pid. */
#define SELF_PID_PLACEHOLDER 0x5ec0f00dU
/* Stands likewise for the address of the one shared futex word the process may wait on; the
 * filter compares an address as two 32-bit halves, so each half has its own placeholder. */
#define SHARED_WAIT_HI_PLACEHOLDER 0x5ec0a11eU
#define SHARED_WAIT_LO_PLACEHOLDER 0x5ec0a11fU

/* Opens that write, create, truncate or claim a file; never allowed. O_EXCL without O_CREAT
 * claims a block device exclusively. glibc's __O_TMPFILE includes O_DIRECTORY: only its own
 * bit is tested, or every directory open (grep -r, opendir) would be refused. */
#define WRITE_OPEN_FLAGS                                                                      \
    (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_EXCL | (__O_TMPFILE & ~O_DIRECTORY))

/* One entry of the table: the call and, for the reader, why it is harmless. */
#define ALLOW(nr, why) nr

/* System calls allowed whatever their arguments, in both kinds of copy. */
static const int allowed[] = {
    ALLOW(SCMP_SYS(fstat), "metadata read"),
    ALLOW(SCMP_SYS(newfstatat), "metadata read"),
    ALLOW(SCMP_SYS(stat), "metadata read"),
    ALLOW(SCMP_SYS(lstat), "metadata read"),
    ALLOW(SCMP_SYS(statx), "metadata read"),
    ALLOW(SCMP_SYS(statfs), "metadata read"),
    ALLOW(SCMP_SYS(fstatfs), "metadata read"),
    ALLOW(SCMP_SYS(readlink), "metadata read"),
    ALLOW(SCMP_SYS(readlinkat), "metadata read"),
    ALLOW(SCMP_SYS(access), "metadata read"),
    ALLOW(SCMP_SYS(faccessat), "metadata read"),
    ALLOW(SCMP_SYS(faccessat2), "metadata read"),
    ALLOW(SCMP_SYS(getxattr), "metadata read"),
    ALLOW(SCMP_SYS(lgetxattr), "metadata read"),
    ALLOW(SCMP_SYS(fgetxattr), "metadata read"),
    ALLOW(SCMP_SYS(listxattr), "metadata read"),
    ALLOW(SCMP_SYS(llistxattr), "metadata read"),
    ALLOW(SCMP_SYS(flistxattr), "metadata read"),
    ALLOW(SCMP_SYS(getcwd), "process-local state"),
    ALLOW(SCMP_SYS(chdir), "process-local state"),
    ALLOW(SCMP_SYS(fchdir), "process-local state"),
    ALLOW(SCMP_SYS(umask), "process-local state"),
    ALLOW(SCMP_SYS(munmap), "own memory; no shared writable mapping is left"),
    ALLOW(SCMP_SYS(mremap), "own memory; moves keep a mapping's kind"),
    ALLOW(SCMP_SYS(mprotect), "own memory: every file it maps was opened read-only"),
    ALLOW(SCMP_SYS(brk), "own memory"),
    ALLOW(SCMP_SYS(mincore), "residency query, used to find would-block faults"),
    ALLOW(__NR_cachestat, "residency query, the would-block test of §4.1.2"),
    ALLOW(SCMP_SYS(process_vm_readv), "read-only; lets the runtime pull memory from the parent"),
    ALLOW(SCMP_SYS(pidfd_open), "names a process; what could act through it (signals, "
                                "pidfd_getfd, setns, process_mrelease) is refused, "
                                "process_madvise may only prefetch"),
    ALLOW(SCMP_SYS(set_robust_list), "thread runtime"),
    ALLOW(SCMP_SYS(get_robust_list), "thread runtime"),
    ALLOW(SCMP_SYS(set_tid_address), "thread runtime"),
    ALLOW(SCMP_SYS(rseq), "thread runtime"),
    ALLOW(SCMP_SYS(membarrier), "thread runtime"),
    ALLOW(SCMP_SYS(arch_prctl), "thread pointer of this process"),
    ALLOW(SCMP_SYS(clock_gettime), "time"),
    ALLOW(SCMP_SYS(clock_getres), "time"),
    ALLOW(SCMP_SYS(gettimeofday), "time"),
    ALLOW(SCMP_SYS(time), "time"),
    ALLOW(SCMP_SYS(nanosleep), "time"),
    ALLOW(SCMP_SYS(clock_nanosleep), "time"),
    ALLOW(SCMP_SYS(getpid), "identity"),
    ALLOW(SCMP_SYS(gettid), "identity"),
    ALLOW(SCMP_SYS(getppid), "identity"),
    ALLOW(SCMP_SYS(getuid), "identity"),
    ALLOW(SCMP_SYS(geteuid), "identity"),
    ALLOW(SCMP_SYS(getgid), "identity"),
    ALLOW(SCMP_SYS(getegid), "identity"),
    ALLOW(SCMP_SYS(getresuid), "identity"),
    ALLOW(SCMP_SYS(getresgid), "identity"),
    ALLOW(SCMP_SYS(getgroups), "identity"),
    ALLOW(SCMP_SYS(getpgrp), "identity"),
    ALLOW(SCMP_SYS(getpgid), "identity"),
    ALLOW(SCMP_SYS(getsid), "identity"),
    ALLOW(SCMP_SYS(capget), "identity"),
    ALLOW(SCMP_SYS(uname), "system information"),
    ALLOW(SCMP_SYS(sysinfo), "system information"),
    ALLOW(SCMP_SYS(getrusage), "system information"),
    ALLOW(SCMP_SYS(times), "system information"),
    ALLOW(SCMP_SYS(getrandom), "system information"),
    ALLOW(SCMP_SYS(getcpu), "system information"),
    ALLOW(SCMP_SYS(getpriority), "system information"),
    ALLOW(SCMP_SYS(getrlimit), "system information"),
    ALLOW(SCMP_SYS(ioprio_get), "system information"),
    ALLOW(SCMP_SYS(get_mempolicy), "system information"),
    ALLOW(SCMP_SYS(sched_getaffinity), "system information"),
    ALLOW(SCMP_SYS(sched_getparam), "system information"),
    ALLOW(SCMP_SYS(sched_getscheduler), "system information"),
    ALLOW(SCMP_SYS(sched_getattr), "system information"),
    ALLOW(SCMP_SYS(sched_get_priority_max), "system information"),
    ALLOW(SCMP_SYS(sched_get_priority_min), "system information"),
    ALLOW(SCMP_SYS(sched_yield), "scheduling of itself"),
    ALLOW(SCMP_SYS(rt_sigprocmask), "own signal state"),
    ALLOW(SCMP_SYS(rt_sigreturn), "own signal state"),
    ALLOW(SCMP_SYS(rt_sigpending), "own signal state"),
    ALLOW(SCMP_SYS(rt_sigsuspend), "own signal state"),
    ALLOW(SCMP_SYS(rt_sigtimedwait), "own signal state"),
    ALLOW(SCMP_SYS(sigaltstack), "own signal state"),
    ALLOW(SCMP_SYS(pause), "own signal state"),
    ALLOW(SCMP_SYS(restart_syscall), "own signal state"),
    ALLOW(SCMP_SYS(alarm), "timers signal only this process"),
    ALLOW(SCMP_SYS(setitimer), "timers signal only this process"),
    ALLOW(SCMP_SYS(getitimer), "timers signal only this process"),
    ALLOW(SCMP_SYS(timer_create), "timers signal only this process"),
    ALLOW(SCMP_SYS(timer_settime), "timers signal only this process"),
    ALLOW(SCMP_SYS(timer_gettime), "timers signal only this process"),
    ALLOW(SCMP_SYS(timer_getoverrun), "timers signal only this process"),
    ALLOW(SCMP_SYS(timer_delete), "timers signal only this process"),
    ALLOW(SCMP_SYS(poll), "waits on private objects or /dev/null"),
    ALLOW(SCMP_SYS(ppoll), "waits on private objects or /dev/null"),
    ALLOW(SCMP_SYS(select), "waits on private objects or /dev/null"),
    ALLOW(SCMP_SYS(pselect6), "waits on private objects or /dev/null"),
    ALLOW(SCMP_SYS(wait4), "it has no children: ECHILD"),
    ALLOW(SCMP_SYS(waitid), "it has no children: ECHILD"),
    ALLOW(SCMP_SYS(exit), "ending itself; its exit signal is 0 (§4.1.1, second restriction)"),
    ALLOW(SCMP_SYS(exit_group), "ending itself"),
};

/* Allowed in the runtime's copy, whose descriptors privatize.c made its own. The
 * supervisor's copy shares its descriptors' offsets with the program: there these are served
 * by the supervisor (the calls that use an offset, and close, which ends what it keeps), or
 * refused (the calls that make descriptors it would not know, or change a shared one). */
static const int allowed_privatized[] = {
    ALLOW(SCMP_SYS(read), "reading is what speculation is for (§4.1.2); all fds are private"),
    ALLOW(SCMP_SYS(pread64), "read at an offset"),
    ALLOW(SCMP_SYS(readv), "read"),
    ALLOW(SCMP_SYS(preadv), "read"),
    ALLOW(SCMP_SYS(preadv2), "read; RWF_NOWAIT tells resident data apart"),
    ALLOW(SCMP_SYS(lseek), "offsets were privatized (§4.1.1: file pointers are copied)"),
    ALLOW(SCMP_SYS(getdents64), "directory reads on a private offset"),
    ALLOW(SCMP_SYS(getdents), "directory reads on a private offset"),
    ALLOW(SCMP_SYS(close), "own descriptor table"),
    ALLOW(SCMP_SYS(close_range), "own descriptor table"),
    ALLOW(SCMP_SYS(dup), "own descriptor table"),
    ALLOW(SCMP_SYS(dup2), "own descriptor table"),
    ALLOW(SCMP_SYS(dup3), "own descriptor table"),
    ALLOW(SCMP_SYS(readahead), "the prefetch itself (§4.1.2)"),
    ALLOW(SCMP_SYS(userfaultfd), "faults of its own memory: the fast refork fills the regions "
                                 "it left out (lazy_memory.h, §5.1)"),
    ALLOW(SCMP_SYS(pipe), "a new pipe is private to the child"),
    ALLOW(SCMP_SYS(pipe2), "a new pipe is private to the child"),
    ALLOW(SCMP_SYS(eventfd), "private object"),
    ALLOW(SCMP_SYS(eventfd2), "private object"),
    ALLOW(SCMP_SYS(timerfd_create), "private object"),
    ALLOW(SCMP_SYS(timerfd_settime), "private object"),
    ALLOW(SCMP_SYS(timerfd_gettime), "private object"),
    ALLOW(SCMP_SYS(signalfd), "private object"),
    ALLOW(SCMP_SYS(signalfd4), "private object"),
    ALLOW(SCMP_SYS(epoll_create), "private object"),
    ALLOW(SCMP_SYS(epoll_create1), "private object"),
    ALLOW(SCMP_SYS(epoll_ctl), "private object"),
    ALLOW(SCMP_SYS(epoll_wait), "waits on private objects or /dev/null"),
    ALLOW(SCMP_SYS(epoll_pwait), "waits on private objects or /dev/null"),
    ALLOW(SCMP_SYS(epoll_pwait2), "waits on private objects or /dev/null"),
};

/* What the supervisor serves in its copy (docs/design/supervisor.md), by user notification. */
static const int served_outside[] = {
    SCMP_SYS(read),
    SCMP_SYS(pread64),
    SCMP_SYS(readv),
    SCMP_SYS(preadv),
    SCMP_SYS(preadv2),
    SCMP_SYS(lseek),
    SCMP_SYS(getdents64),
    SCMP_SYS(getdents),
    SCMP_SYS(close),
};

/* System calls allowed only when one argument has one of a few harmless values. */
static const unsigned long fcntl_cmds[] = {
    F_GETFD, F_SETFD, F_GETFL, F_GETLK, F_OFD_GETLK,
    F_GETOWN, F_GETOWN_EX, F_GETSIG, F_GETLEASE, F_GETPIPE_SZ, F_GET_SEALS,
};
/* Only on private descriptions: F_SETFL changes the description's flags, and a duplicate is a
 * descriptor the supervisor would not know. */
static const unsigned long fcntl_cmds_privatized[] = { F_DUPFD, F_DUPFD_CLOEXEC, F_SETFL };
static const unsigned long ioctl_requests[] = { TCGETS, TIOCGWINSZ, FIONREAD, FIOCLEX, FIONCLEX };
static const unsigned long ioctl_requests_privatized[] = {
    FIONBIO, /* sets the description's O_NONBLOCK */
    /* userfaultfd on the copy's own memory (fast refork): no device or file system the copy
     * can hold defines ioctls of the userfaultfd type (0xAA) */
    UFFDIO_API, UFFDIO_REGISTER, UFFDIO_COPY, UFFDIO_ZEROPAGE,
};
static const unsigned long madvise_advice[] = {
    MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED, MADV_FREE,
    MADV_DONTFORK, MADV_DOFORK, MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_DONTDUMP, MADV_DODUMP,
    MADV_WIPEONFORK, MADV_KEEPONFORK, MADV_POPULATE_READ, MADV_POPULATE_WRITE,
};
/* Advice to another process (the program): prefetching its swapped-out pages into the swap
 * cache it shares (§4.1.2 for swap-backed memory) and nothing that evicts or frees. */
static const unsigned long process_madvise_advice[] = { MADV_WILLNEED };
static const unsigned long fadvise_advice[] = {
    POSIX_FADV_NORMAL, POSIX_FADV_RANDOM, POSIX_FADV_SEQUENTIAL, POSIX_FADV_WILLNEED,
    POSIX_FADV_NOREUSE,
};
static const unsigned long prctl_options[] = {
    PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_GET_PDEATHSIG, PR_GET_KEEPCAPS,
    PR_GET_TIMERSLACK, PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS, PR_CAPBSET_READ, PR_SET_VMA,
};
/* Futex operations allowed on any address: waking (at worst a spurious wake-up, which futex
 * users tolerate) and private waits (keyed by this process's own memory). */
static const unsigned long futex_ops[] = {
    FUTEX_WAKE, FUTEX_WAKE_OP, FUTEX_WAKE_BITSET,
    FUTEX_WAKE_PRIVATE, FUTEX_WAKE_OP_PRIVATE, FUTEX_WAKE_BITSET_PRIVATE,
    FUTEX_WAIT_PRIVATE, FUTEX_WAIT_BITSET_PRIVATE,
};
/* The kernel reads these arguments as 32-bit integers: compare only the low half, so that
 * garbage in the high half can neither sneak a value past the filter nor block a good one. */
#define INT_BITS 0xffffffffUL
/* The futex command with its PRIVATE flag, without CLOCK_REALTIME. */
#define FUTEX_OP_BITS 0xffUL
#define VALUES(a) a, sizeof(a) / sizeof(a[0])
static const struct {
    int nr;
    unsigned int arg;
    unsigned long mask;
    const unsigned long *values;
    size_t n;
    bool privatized_only; /* not in the supervisor's copy: see allowed_privatized */
} allowed_values[] = {
    /* no locks, leases, seals, notifications */
    {SCMP_SYS(fcntl), 1, INT_BITS, VALUES(fcntl_cmds), false},
    {SCMP_SYS(fcntl), 1, INT_BITS, VALUES(fcntl_cmds_privatized), true},
    /* queries only; the descriptors are files or /dev/null */
    {SCMP_SYS(ioctl), 1, INT_BITS, VALUES(ioctl_requests), false},
    {SCMP_SYS(ioctl), 1, INT_BITS, VALUES(ioctl_requests_privatized), true},
    /* no REMOVE (punches holes in shared files), HWPOISON, KSM or PAGEOUT */
    {SCMP_SYS(madvise), 2, INT_BITS, VALUES(madvise_advice), false},
    {SCMP_SYS(process_madvise), 3, INT_BITS, VALUES(process_madvise_advice), false},
    /* prefetch hints; no DONTNEED, which evicts the parent's cached data; RANDOM and
     * SEQUENTIAL set the description's mode, so only where it is private */
    {SCMP_SYS(fadvise64), 3, INT_BITS, VALUES(fadvise_advice), true},
    /* the process name and getters only */
    {SCMP_SYS(prctl), 0, INT_BITS, VALUES(prctl_options), false},
    /* Wake, and wait privately. A privatized page that the child has not written yet is still
     * the shared page, so its futex key is the parent's: a shared wait there could take the
     * wake-up of one of the parent's waiters, REQUEUE would move the parent's waiters where
     * nobody wakes them, and the PI operations would make the child own the parent's lock.
     * Shared waits are allowed on one address only (add_futex_wait_rules). */
    {SCMP_SYS(futex), 1, FUTEX_OP_BITS, VALUES(futex_ops), false},
};

static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned int n,
                    const struct scmp_arg_cmp *cmp)
{
    return seccomp_rule_add_array(ctx, action, nr, n, cmp);
}

/* openat2 hides its flags in a struct the filter cannot read; ENOSYS makes libc fall back to
 * openat. */
static int add_openat2_rule(scmp_filter_ctx ctx)
{
    return add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0, NULL);
}

/* openat/open: read-only opens are trapped to sandbox_open_trap.c, which refuses FIFOs,
 * devices and files whose reads consume data, and re-issues the rest as openat with COOKIE in
 * the sixth argument; so are plain O_RDWR opens, which it re-issues read-only (databases open
 * the files they only read O_RDWR; the descriptor the copy gets cannot write). O_PATH opens
 * touch nothing and pass; opens that could create, truncate, append or claim fail. */
static int add_open_rules(scmp_filter_ctx ctx, uint64_t cookie)
{
    const uint64_t mask = WRITE_OPEN_FLAGS | O_PATH;
    struct scmp_arg_cmp openat_path_only = SCMP_CMP(2, SCMP_CMP_MASKED_EQ, mask, O_PATH);
    struct scmp_arg_cmp openat_reissued[] = {
        SCMP_CMP(2, SCMP_CMP_MASKED_EQ, mask, 0),
        SCMP_CMP(5, SCMP_CMP_EQ, cookie),
    };
    struct scmp_arg_cmp openat_trapped[] = {
        SCMP_CMP(2, SCMP_CMP_MASKED_EQ, mask, 0),
        SCMP_CMP(5, SCMP_CMP_NE, cookie),
    };
    struct scmp_arg_cmp openat_rdwr = SCMP_CMP(2, SCMP_CMP_MASKED_EQ, mask, O_RDWR);
    struct scmp_arg_cmp open_path_only = SCMP_CMP(1, SCMP_CMP_MASKED_EQ, mask, O_PATH);
    struct scmp_arg_cmp open_trapped = SCMP_CMP(1, SCMP_CMP_MASKED_EQ, mask, 0);
    struct scmp_arg_cmp open_rdwr = SCMP_CMP(1, SCMP_CMP_MASKED_EQ, mask, O_RDWR);
    int err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, &openat_path_only);
    if (err == 0)
        err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 2, openat_reissued);
    if (err == 0)
        err = add_rule(ctx, SCMP_ACT_TRAP, SCMP_SYS(openat), 2, openat_trapped);
    if (err == 0)
        err = add_rule(ctx, SCMP_ACT_TRAP, SCMP_SYS(openat), 1, &openat_rdwr);
    if (err == 0)
        err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 1, &open_path_only);
    if (err == 0)
        err = add_rule(ctx, SCMP_ACT_TRAP, SCMP_SYS(open), 1, &open_trapped);
    if (err == 0)
        err = add_rule(ctx, SCMP_ACT_TRAP, SCMP_SYS(open), 1, &open_rdwr);
    return err ? err : add_openat2_rule(ctx);
}

/* The supervisor's copy: read-only and O_RDWR opens go to the supervisor, which checks the
 * file as the open trap does, opens it read-only itself and hands the copy the descriptor
 * (SECCOMP_IOCTL_NOTIF_ADDFD), so that it knows every descriptor the copy holds. O_PATH opens
 * would make one it did not: refused, with those that could create, truncate, append, claim. */
static int add_open_rules_outside(scmp_filter_ctx ctx)
{
    const uint64_t mask = WRITE_OPEN_FLAGS | O_PATH;
    const uint64_t modes[] = { 0, O_RDWR };
    int err = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0] && !err; i++) {
        struct scmp_arg_cmp openat_flags = SCMP_CMP(2, SCMP_CMP_MASKED_EQ, mask, modes[i]);
        struct scmp_arg_cmp open_flags = SCMP_CMP(1, SCMP_CMP_MASKED_EQ, mask, modes[i]);
        err = add_rule(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(openat), 1, &openat_flags);
        if (err == 0)
            err = add_rule(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(open), 1, &open_flags);
    }
    return err ? err : add_openat2_rule(ctx);
}

/* mmap: anything but a shared writable mapping ("requests to map file regions with write
 * access are converted to ... copy-on-write", §4.1.1; here they are refused). */
static int add_mmap_rules(scmp_filter_ctx ctx, enum specx_filter_kind kind)
{
    struct scmp_arg_cmp private_map = SCMP_CMP(3, SCMP_CMP_MASKED_EQ, MAP_SHARED, 0);
    struct scmp_arg_cmp read_only = SCMP_CMP(2, SCMP_CMP_MASKED_EQ, PROT_WRITE, 0);
    int err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, &private_map);
    /* Not in the supervisor's copy: a read-only shared mapping of a descriptor the program
     * opened for writing could be made writable by mprotect. */
    if (err || kind == SPECX_FILTER_OUTSIDE)
        return err;
    return add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, &read_only);
}

/* Every signal number but the stop signals SIGSTOP, SIGTSTP, SIGTTIN and SIGTTOU (19-22), as
 * (mask, value) pairs on the low 32 bits: a child that stops makes the kernel send its parent
 * SIGCHLD (CLD_STOPPED), whatever its exit signal. */
static const struct {
    uint32_t mask, value;
} non_stop_signals[] = {
    {0xfffffff0, 0},  /* 0 (existence check) to 15 */
    {0xfffffffe, 16}, /* 16, 17 */
    {0xffffffff, 18},
    {0xffffffff, 23},
    {0xfffffff8, 24}, /* 24 to 31 */
    {0xffffffe0, 32}, /* real-time signals 32 to 63 */
    {0xffffffff, 64},
};

/* A wait on a futex the program shares, at the address specx_filter_load patches in: the
 * horizon's parking word in the control region (§4.1.3), and nowhere else. */
static int add_futex_wait_rules(scmp_filter_ctx ctx)
{
    const uint64_t placeholder =
        (uint64_t)SHARED_WAIT_HI_PLACEHOLDER << 32 | SHARED_WAIT_LO_PLACEHOLDER;
    static const unsigned long waits[] = { FUTEX_WAIT, FUTEX_WAIT_BITSET };
    int err = 0;
    for (size_t i = 0; i < sizeof waits / sizeof waits[0] && !err; i++) {
        struct scmp_arg_cmp at_shared_wait[] = {
            SCMP_CMP(0, SCMP_CMP_EQ, placeholder),
            SCMP_CMP(1, SCMP_CMP_MASKED_EQ, FUTEX_OP_BITS, waits[i]),
        };
        err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(futex), 2, at_shared_wait);
    }
    return err;
}

/* Signals only to itself (§4.1.1: "must not be allowed to ... send signals to normal
 * processes"); abort() and raise() still work. kill(0) and kill(-1) are refused. */
static int add_signal_rules(scmp_filter_ctx ctx)
{
    int err = 0;
    for (size_t i = 0; i < sizeof non_stop_signals / sizeof non_stop_signals[0] && !err; i++) {
        struct scmp_arg_cmp to_self[] = {
            SCMP_CMP(0, SCMP_CMP_EQ, SELF_PID_PLACEHOLDER),
            SCMP_CMP(1, SCMP_CMP_MASKED_EQ, non_stop_signals[i].mask, non_stop_signals[i].value),
        };
        struct scmp_arg_cmp to_own_thread[] = {
            SCMP_CMP(0, SCMP_CMP_EQ, SELF_PID_PLACEHOLDER),
            SCMP_CMP(1, SCMP_CMP_EQ, SELF_PID_PLACEHOLDER),
            SCMP_CMP(2, SCMP_CMP_MASKED_EQ, non_stop_signals[i].mask, non_stop_signals[i].value),
        };
        err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 2, to_self);
        if (err == 0)
            err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tkill), 2, to_self);
        if (err == 0)
            err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 3, to_own_thread);
    }
    /* Keeps the open trap's SIGSYS handler in place (for usefulness, not safety: without it a
     * trapped open just fails or ends the process). */
    struct scmp_arg_cmp not_sigsys = SCMP_CMP(0, SCMP_CMP_NE, SIGSYS);
    return err ? err : add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), 1, &not_sigsys);
}

/* Resource limits may be read, never set; clone3 answers ENOSYS so that libc reports the
 * refusal of clone, not of an unknown call. */
static int add_misc_rules(scmp_filter_ctx ctx)
{
    struct scmp_arg_cmp no_new_limit = SCMP_CMP(2, SCMP_CMP_EQ, 0);
    int err = add_rule(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, &no_new_limit);
    return err ? err : add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0, NULL);
}

static int add_value_rules(scmp_filter_ctx ctx, enum specx_filter_kind kind)
{
    for (size_t i = 0; i < sizeof allowed_values / sizeof allowed_values[0]; i++) {
        if (allowed_values[i].privatized_only && kind == SPECX_FILTER_OUTSIDE)
            continue;
        for (size_t v = 0; v < allowed_values[i].n; v++) {
            struct scmp_arg_cmp cmp = SCMP_CMP(allowed_values[i].arg, SCMP_CMP_MASKED_EQ,
                                               allowed_values[i].mask, allowed_values[i].values[v]);
            int err = add_rule(ctx, SCMP_ACT_ALLOW, allowed_values[i].nr, 1, &cmp);
            if (err)
                return err;
        }
    }
    return 0;
}

static int add_each(scmp_filter_ctx ctx, uint32_t action, const int *nrs, size_t n)
{
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        err = add_rule(ctx, action, nrs[i], 0, NULL);
    return err;
}

#define ADD_EACH(ctx, action, nrs) add_each(ctx, action, nrs, sizeof nrs / sizeof nrs[0])

/* What differs between the two copies: the runtime's own (privatized, opens trapped) and the
 * supervisor's (nothing privatized: offsets and opens served from outside). */
static int add_kind_rules(scmp_filter_ctx ctx, enum specx_filter_kind kind, uint64_t cookie)
{
    if (kind == SPECX_FILTER_INSIDE) {
        int err = ADD_EACH(ctx, SCMP_ACT_ALLOW, allowed_privatized);
        if (err == 0)
            err = add_open_rules(ctx, cookie);
        return err ? err : add_futex_wait_rules(ctx);
    }
    int err = ADD_EACH(ctx, SCMP_ACT_NOTIFY, served_outside);
    /* Every epoll instance it holds is the program's: a wait would take events the program
     * waits for (Go's poller is edge-triggered). "No events" is true of the copy's world. */
    static const int epoll_waits[] = { SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
                                       SCMP_SYS(epoll_pwait2) };
    if (err == 0)
        err = ADD_EACH(ctx, SCMP_ACT_ERRNO(0), epoll_waits);
    return err ? err : add_open_rules_outside(ctx);
}

static int add_all_rules(scmp_filter_ctx ctx, enum specx_filter_kind kind, uint64_t cookie)
{
    int err = ADD_EACH(ctx, SCMP_ACT_ALLOW, allowed);
    if (err == 0)
        err = add_kind_rules(ctx, kind, cookie);
    if (err == 0)
        err = add_value_rules(ctx, kind);
    if (err == 0)
        err = add_mmap_rules(ctx, kind);
    if (err == 0)
        err = add_signal_rules(ctx);
    return err ? err : add_misc_rules(ctx);
}

/* The compiled program. Sized well above what the rules produce (about 600 instructions). */
#define MAX_INSNS 4096
static struct sock_filter program[MAX_INSNS];
static unsigned short program_len;

/* Exports CTX as raw BPF into PROGRAM through a memory file (libseccomp 2.5 exports only to a
 * descriptor). */
static int export_program(scmp_filter_ctx ctx)
{
    int fd = memfd_create("specx-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    int err = seccomp_export_bpf(ctx, fd);
    ssize_t n = err ? 0 : specx_raw_pread(fd, program, sizeof program, 0);
    if (err == 0 && (n <= 0 || n % (ssize_t)sizeof program[0] != 0 || n == sizeof program))
        err = n < 0 ? -errno : -E2BIG;
    close(fd);
    if (err == 0)
        program_len = (unsigned short)(n / (ssize_t)sizeof program[0]);
    return err;
}

int specx_filter_compile(enum specx_filter_kind kind, uint64_t open_cookie)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
    if (!ctx)
        return -ENOMEM;
    /* Only the native ABI: an x32 or int 0x80 call ends the speculative process. */
    int err = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (err == 0)
        err = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (err == 0)
        err = add_all_rules(ctx, kind, open_cookie);
    if (err == 0)
        err = export_program(ctx);
    seccomp_release(ctx);
    return err;
}

int specx_filter_compiled(void)
{
    return program_len > 0;
}

/* The kill rules compare against SELF_PID_PLACEHOLDER and the shared futex wait against the
 * address placeholders; make those of PROG compare against SELF and SHARED_WAIT. */
static void patch_placeholders(struct sock_filter *prog, pid_t self, const uint32_t *shared_wait)
{
    const uint64_t wait = (uint64_t)(uintptr_t)shared_wait;
    for (unsigned short i = 0; i < program_len; i++) {
        if (prog[i].code != (BPF_JMP | BPF_JEQ | BPF_K))
            continue;
        if (prog[i].k == SELF_PID_PLACEHOLDER)
            prog[i].k = (uint32_t)self;
        else if (prog[i].k == SHARED_WAIT_HI_PLACEHOLDER)
            prog[i].k = (uint32_t)(wait >> 32);
        else if (prog[i].k == SHARED_WAIT_LO_PLACEHOLDER)
            prog[i].k = (uint32_t)wait;
    }
}

long specx_filter_export(pid_t self, struct sock_filter *out, size_t max)
{
    if (program_len == 0)
        return -ENOEXEC;
    if (max < program_len)
        return -E2BIG;
    memcpy(out, program, program_len * sizeof program[0]);
    patch_placeholders(out, self, NULL);
    return program_len;
}

int specx_filter_load(pid_t self, const uint32_t *shared_wait)
{
    if (program_len == 0)
        return -ENOEXEC;
    patch_placeholders(program, self, shared_wait);
    struct sock_fprog fprog = {.len = program_len, .filter = program};
    if (specx_raw_syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        specx_raw_syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
        return -errno;
    return 0;
}
