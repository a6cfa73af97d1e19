/* See outside_copy.h. */
#include "outside_copy.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "maps.h"
#include "sandbox/sandbox_filter.h"

#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/* Room for the filter (about 600 instructions) and its header in the copy's memory. */
#define SCRATCH_BYTES (64u * 1024u)
#define FILTER_MAX ((SCRATCH_BYTES - 64u) / sizeof(struct sock_filter))

int outside_copy_prepare(void)
{
    return specx_filter_compiled() ? 0 : specx_filter_compile(SPECX_FILTER_OUTSIDE, 0);
}

static long call(struct held_thread *t, long nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
    const uint64_t args[6] = { a0, a1, a2, 0, 0, 0 };
    return held_syscall(t, nr, args);
}

/* The program's thread makes the clone: a process of one thread (no CLONE_VM, CLONE_THREAD),
 * a sibling of the program (CLONE_PARENT: specx run reaps it; the program's wait never sees
 * it), traced from its first instruction (CLONE_PTRACE: it waits for its sandbox). */
static pid_t clone_from(struct held_thread *t, struct held_thread *copy)
{
    long pid = call(t, SYS_clone, CLONE_PARENT | CLONE_PTRACE, 0, 0);
    if (pid <= 0)
        return pid < 0 ? (pid_t)pid : -ECHILD;
    int err = held_adopt(copy, (pid_t)pid, t);
    if (err) {
        kill((pid_t)pid, SIGKILL);
        waitpid((pid_t)pid, NULL, __WALL);
        return err;
    }
    return (pid_t)pid;
}

/* See outside_copy.h: the copy is looked at again, its maps being fixed at the clone. */
bool outside_copy_maps_shared_memory(pid_t pid)
{
    char *buf;
    size_t size;
    if (specx_maps_read_of(pid, &buf, &size) < 0)
        return true;
    bool shared = false;
    struct specx_mapping m;
    for (char *line = buf; *line && !shared;) {
        line = specx_maps_parse_line(line, &m);
        shared = m.shared;
    }
    munmap(buf, size);
    return shared;
}

/* Installs the filter in the held copy with a user-notification listener, takes the listener
 * and closes the copy's descriptor of it (close being served, the supervisor answers it). */
static int install_filter(struct held_thread *copy, struct outside_copy *c)
{
    const uint64_t mmap_args[6] = { 0, SCRATCH_BYTES, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0 };
    long scratch = held_syscall(copy, SYS_mmap, mmap_args);
    if (scratch < 0 && scratch > -4096)
        return (int)scratch;
    static struct sock_filter insns[FILTER_MAX];
    long n = specx_filter_export(copy->tid, insns, FILTER_MAX);
    if (n < 0)
        return (int)n;
    struct sock_fprog prog = { .len = (unsigned short)n,
                               .filter = (struct sock_filter *)(scratch + 64) };
    struct iovec local[2] = { { &prog, sizeof prog }, { insns, (size_t)n * sizeof insns[0] } };
    struct iovec remote[2] = { { (void *)scratch, sizeof prog },
                               { (void *)(scratch + 64), (size_t)n * sizeof insns[0] } };
    if (process_vm_writev(copy->tid, local, 2, remote, 2, 0) < 0)
        return -errno;
    long err = call(copy, SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0);
    long fd = err ? err
                  : call(copy, SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                         SECCOMP_FILTER_FLAG_NEW_LISTENER, (uint64_t)scratch);
    if (fd < 0)
        return (int)fd;
    c->listener = (int)syscall(SYS_pidfd_getfd, c->pidfd, (int)fd, 0);
    if (c->listener < 0)
        return -errno;
    /* The copy's wake-ups go to the supervisor's CPU and back at once (2.5 us a served call
     * instead of 34 measured, docs/DESIGN.md §9.1); kernels before 6.6 just lack it. */
    ioctl(c->listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0);
    const uint64_t close_args[6] = { (uint64_t)fd };
    if ((err = held_syscall_begin(copy, SYS_close, close_args)) < 0)
        return (int)err;
    struct seccomp_notif req = { 0 };
    struct seccomp_notif_resp resp = { 0 };
    if (ioctl(c->listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ioctl(c->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
    held_syscall_end(copy);
    return (int)call(copy, SYS_munmap, (uint64_t)scratch, SCRATCH_BYTES, 0);
}

/* Seals the held copy: what the runtime's copy does to itself (copy/copy.c), from outside. */
static int seal(struct held_thread *copy, struct outside_copy *c)
{
    long err = call(copy, SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0);
    if (err == 0)
        err = call(copy, SYS_setpgid, 0, 0, 0);
    if (err == 0)
        err = install_filter(copy, c);
    struct sched_param idle = { 0 };
    if (err == 0)
        err = sched_setscheduler(copy->tid, SCHED_IDLE, &idle) < 0 ? -errno : 0;
    return (int)err;
}

static void forget(struct outside_copy *c)
{
    if (c->listener >= 0)
        close(c->listener);
    if (c->pidfd >= 0)
        close(c->pidfd);
    *c = (struct outside_copy){ .held_ns = c->held_ns, .pid = 0, .pidfd = -1, .listener = -1 };
}

enum outside_refusal outside_copy_make(struct held_thread *t, struct outside_copy *c)
{
    *c = (struct outside_copy){ .pid = 0, .pidfd = -1, .listener = -1 };
    struct held_thread copy;
    pid_t pid = clone_from(t, &copy);
    if (pid > 0) {
        c->pid = pid;
        c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        /* The offsets the copy starts from, taken before the program moves on. */
        copy_fds_capture(&c->fds, pid, c->pidfd);
    }
    held_release(t);
    c->from_tid = t->tid;
    c->held_ns = t->held_ns;
    if (pid <= 0)
        return OUTSIDE_FAILED;
    enum outside_refusal why = OUTSIDE_MADE;
    if (outside_copy_maps_shared_memory(pid))
        why = OUTSIDE_SHARED_MEMORY;
    else if (c->pidfd < 0 || seal(&copy, c) != 0)
        why = OUTSIDE_FAILED;
    if (why != OUTSIDE_MADE) {
        outside_copy_end(c);
        return why;
    }
    held_release(&copy);
    return OUTSIDE_MADE;
}

void outside_copy_end(struct outside_copy *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, __WALL) < 0 && errno == EINTR)
            ;
    }
    copy_fds_clear(&c->fds);
    forget(c);
}

