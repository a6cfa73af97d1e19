/* See outside_copy.h. */
#include "run/supervisor/outside_copy.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
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

#include "kernel/maps.h"
#include "kernel/proc_path.h"
#include "run/runtime/sandbox/sandbox_filter.h"

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
 * it), traced from its first instruction (CLONE_PTRACE: it waits for its sandbox), sharing the
 * program's descriptor table (CLONE_FILES) until detach_fds gives it one of its own. */
static pid_t clone_from(struct held_thread *t, struct held_thread *copy)
{
    long pid = call(t, SYS_clone, CLONE_PARENT | CLONE_PTRACE | CLONE_FILES, 0, 0);
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

/* The copy's first call, made while the program's thread is still held: a table of its own
 * without the program's descriptions (privatize.h, specx_detach_fds), so that it never holds
 * a pipe, a socket or a flock of the program's once the program goes on, and never closes
 * one at its end. Its inherited descriptors live on in the supervisor's table (copy_fds.h). */
static int detach_fds(struct held_thread *copy)
{
    return (int)call(copy, SYS_close_range, 0, ~0u, CLOSE_RANGE_UNSHARE);
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

/* Writes LEN bytes of DATA at ADDR in process PID. */
static int remote_write(pid_t pid, uint64_t addr, const void *data, size_t len)
{
    struct iovec local = { (void *)data, len }, remote = { (void *)addr, len };
    return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

bool outside_copy_can_privatize(void)
{
    return geteuid() == 0;
}

/* The copy's shared mappings become private copy-on-write mappings of the same pages, as
 * privatize.c makes them in the runtime's copy (§3): each is mapped again MAP_PRIVATE |
 * MAP_FIXED from /proc/self/map_files, which only a privileged process may open. The copy
 * then reads what the program wrote there and writes only its own pages. */
static int privatize_shared(struct held_thread *copy, uint64_t scratch)
{
    char *buf;
    size_t size;
    if (specx_maps_read_of(copy->tid, &buf, &size) < 0)
        return -EIO;
    int err = 0;
    struct specx_mapping m;
    for (char *line = buf; *line && err == 0;) {
        line = specx_maps_parse_line(line, &m);
        if (!m.shared)
            continue;
        char path[SPECX_PROC_MAP_FILES_PATH_MAX];
        specx_proc_map_files_path(path, m.start, m.end);
        err = remote_write(copy->tid, scratch, path, strlen(path) + 1);
        long fd = err ? err : call(copy, SYS_openat, (uint64_t)AT_FDCWD, scratch, O_RDONLY);
        if (fd < 0) {
            err = (int)fd;
            break;
        }
        const uint64_t args[6] = { m.start, m.end - m.start, (uint64_t)m.prot,
                                   MAP_PRIVATE | MAP_FIXED, (uint64_t)fd, m.offset };
        long at = held_syscall(copy, SYS_mmap, args);
        call(copy, SYS_close, (uint64_t)fd, 0, 0);
        if (at != (long)m.start)
            err = -EIO;
    }
    munmap(buf, size);
    return err;
}

/* Installs the filter in the held copy with a user-notification listener (the program written
 * at SCRATCH), takes the listener and closes the copy's descriptor of it (close being served,
 * the supervisor answers it). */
static int install_filter(struct held_thread *copy, struct outside_copy *c, uint64_t scratch)
{
    static struct sock_filter insns[FILTER_MAX];
    long n = specx_filter_export(copy->tid, insns, FILTER_MAX);
    if (n < 0)
        return (int)n;
    struct sock_fprog prog = { .len = (unsigned short)n,
                               .filter = (struct sock_filter *)(scratch + 64) };
    int werr = remote_write(copy->tid, scratch, &prog, sizeof prog);
    if (werr == 0)
        werr = remote_write(copy->tid, scratch + 64, insns, (size_t)n * sizeof insns[0]);
    if (werr)
        return werr;
    long err = call(copy, SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0);
    long fd = err ? err
                  : call(copy, SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                         SECCOMP_FILTER_FLAG_NEW_LISTENER, scratch);
    if (fd < 0)
        return (int)fd;
    c->listener = (int)syscall(SYS_pidfd_getfd, c->pidfd, (int)fd, 0);
    if (c->listener < 0)
        return -errno;
    /* The copy's wake-ups go to the supervisor's CPU and back at once (2.5 us a served call
     * instead of 34 measured, docs/design/supervisor.md); kernels before 6.6 just lack it. */
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
    return 0;
}

/* Seals the held copy: what the runtime's copy does to itself (copy/copy.c), from outside.
 * A scratch mapping of its own holds what the injected calls read (paths, the filter). */
static int seal(struct held_thread *copy, struct outside_copy *c, bool shared)
{
    long err = call(copy, SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0);
    if (err == 0)
        err = call(copy, SYS_setpgid, 0, 0, 0);
    const uint64_t mmap_args[6] = { 0, SCRATCH_BYTES, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0 };
    long scratch = err ? err : held_syscall(copy, SYS_mmap, mmap_args);
    if (scratch < 0 && scratch > -4096)
        return (int)scratch;
    if (shared)
        err = privatize_shared(copy, (uint64_t)scratch);
    if (err == 0)
        err = install_filter(copy, c, (uint64_t)scratch);
    if (err == 0)
        err = call(copy, SYS_munmap, (uint64_t)scratch, SCRATCH_BYTES, 0);
    /* Idle CPU. Not the idle disk class: what it reads itself are page faults, and a program
     * that faults the same page then waits for the copy's read at that class (measured on
     * the stencil, docs/design/supervisor.md); its file reads are the supervisor's prefetches. */
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
    *c = (struct outside_copy){ .pid = 0, .pidfd = -1, .listener = -1 };
}

enum outside_refusal outside_copy_make(struct held_thread *t, struct outside_copy *c)
{
    *c = (struct outside_copy){ .pid = 0, .pidfd = -1, .listener = -1 };
    struct held_thread copy;
    pid_t pid = clone_from(t, &copy);
    int detached = -ECHILD;
    if (pid > 0) {
        c->pid = pid;
        c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        /* The offsets the copy starts from, taken before the program moves on. */
        copy_fds_capture(&c->fds, pid);
        detached = detach_fds(&copy);
    }
    held_release(t);
    c->from_tid = t->tid;
    if (pid <= 0)
        return OUTSIDE_FAILED;
    if (detached < 0) { /* it must not run holding the program's table */
        outside_copy_end(c);
        return OUTSIDE_FAILED;
    }
    enum outside_refusal why = OUTSIDE_MADE;
    bool shared = outside_copy_maps_shared_memory(pid);
    if (shared && !outside_copy_can_privatize())
        why = OUTSIDE_SHARED_MEMORY;
    else if (c->pidfd < 0 || seal(&copy, c, shared) != 0)
        why = OUTSIDE_FAILED;
    else if (outside_copy_maps_shared_memory(pid)) /* what the filter relies on, checked */
        why = OUTSIDE_SHARED_MEMORY;
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

