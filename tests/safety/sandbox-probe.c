/* sandbox-probe: proves that a process inside specx's sandbox cannot be noticed (Fraser & Chang
 * 2003, §4.1.1). The parent sets up things a program shares with its children (files open for
 * writing, pipes and sockets with unread data, a listening socket with a pending connection,
 * MAP_SHARED file/anonymous/SysV/memfd memory, a FIFO, IPC objects), forks a child that enters
 * the sandbox and attempts every side effect we know of, through libc and through raw
 * syscall(2). While the child is still alive the parent then checks, from the outside, that
 * none of them happened, and that what the sandbox must allow (reads, private memory) works.
 * tests/test_sandbox.py runs it and checks the file tree and its own sockets as well.
 *
 * With --outside COLD1 COLD2 first, it proves the supervisor's copy instead (src/run/supervisor,
 * run it under `specx run --backend=trace`): nothing is shared but System V objects (the
 * supervisor makes no copy of a program with shared mappings), no child is forked; the probe
 * reads COLD1, where the supervisor clones it, then COLD2 into a zeroed buffer. The copy
 * reaches COLD2 while the probe waits for the device, sees zeros where the data was missing,
 * and so knows it is the copy: it makes every attempt and exits. The probe, which read the
 * data, waits, then checks from the outside that nothing happened (the copy cannot report
 * back: the test reads the supervisor's counts of the calls it served).
 *
 * Usage: sandbox-probe [--outside COLD1 COLD2] DIR TCP_PORT UNIX_SOCKET_PATH
 * Prints "ok NAME" or "FAIL NAME: why" per check; exits 1 if any check failed. */
#include "run/runtime/sandbox/sandbox.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define LEAK "CHILD-LEAK\n"
#define FILE_DATA "0123456789abcdefghij"
#define PIPE_DATA "PIPE-DATA"
#define SOCK_DATA "SOCK-DATA"
#define MAP_LEN 4096

/* --- what parent and child share: set up by the parent before the fork ---------------------- */

static const char *dir;
static int tcp_port;
static const char *unix_path;
static pid_t parent;
static int file_rw, file_ro, dir_fd, pipe_r, pipe_w, sock_cli, sock_srv, listener;
static char *map_file, *map_anon, *map_sysv, *map_memfd;
/* The shared anonymous mapping is large and mostly never written: an unprivileged child copies
 * only its resident pages, found in steps of 16 MiB (privatize.c); FAR_OFFSET lies in the third
 * step, UNTOUCHED_OFFSET in the second, never written by anyone. */
#define ANON_LEN (40 << 20)
#define FAR_OFFSET (33 << 20)
#define UNTOUCHED_OFFSET (20 << 20)
static int shm_id, msg_id, sem_id;
static volatile sig_atomic_t usr1_received, usr2_received;
static volatile long parent_secret = 42; /* process_vm_writev target */
static off_t dir_offset;

/* The child's reports travel through this region, which the sandbox keeps shared. */
#define MAX_ATTEMPTS 256
struct report {
    volatile int done, release;
    int enter_status;
    int count;
    struct {
        long ret;
        int err;
    } attempt[MAX_ATTEMPTS];
    char read_back[sizeof FILE_DATA];
    char next_dirent[256];
    char seen_before_write[5], seen_after_write[5];
    char seen_untouched;
    uint32_t wait_word; /* the one shared futex word the child may wait on */
};
static struct report *report;

static char *path_in_dir(const char *name)
{
    static char buf[8][512];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

/* --- the attempts ---------------------------------------------------------------------------- */

/* Expected outcome: 0 means "must succeed", anything else is the errno it must fail with. */
struct attempt {
    const char *name;
    long (*run)(void);
    int expect;
};

#define ATTEMPT(name, expr)                                                                     \
    static long try_##name(void) { return (long)(expr); }

static char one = 'X';
static struct iovec one_iov = {&one, 1};

/* writes, through libc and raw */
ATTEMPT(write_file, write(file_rw, &one, 1))
ATTEMPT(raw_write_file, syscall(SYS_write, file_rw, &one, 1))
ATTEMPT(raw_pwrite64, syscall(SYS_pwrite64, file_rw, &one, 1, 0))
ATTEMPT(raw_writev, syscall(SYS_writev, file_rw, &one_iov, 1))
ATTEMPT(raw_pwritev, syscall(SYS_pwritev, file_rw, &one_iov, 1, 0, 0))
ATTEMPT(raw_pwritev2, syscall(SYS_pwritev2, file_rw, &one_iov, 1, 0, 0, 0))
ATTEMPT(raw_write_pipe, syscall(SYS_write, pipe_w, LEAK, strlen(LEAK)))
ATTEMPT(raw_write_socket, syscall(SYS_write, sock_cli, LEAK, strlen(LEAK)))
ATTEMPT(raw_write_stdout, syscall(SYS_write, 1, LEAK, strlen(LEAK)))
ATTEMPT(raw_write_stderr, syscall(SYS_write, 2, LEAK, strlen(LEAK)))
ATTEMPT(raw_sendfile, syscall(SYS_sendfile, pipe_w, file_ro, NULL, 4))
ATTEMPT(raw_copy_file_range, syscall(SYS_copy_file_range, file_ro, NULL, file_rw, NULL, 4, 0))
ATTEMPT(raw_splice, syscall(SYS_splice, file_ro, NULL, pipe_w, NULL, 4, 0))
ATTEMPT(raw_tee, syscall(SYS_tee, pipe_r, pipe_w, 4, 0))
ATTEMPT(raw_vmsplice, syscall(SYS_vmsplice, pipe_w, &one_iov, 1, 0))
ATTEMPT(ioctl_tiocsti, ioctl(0, TIOCSTI, "x"))
/* opens that could write or create */
ATTEMPT(open_wronly, open(path_in_dir("file"), O_WRONLY))
ATTEMPT(open_creat, open(path_in_dir("created"), O_RDONLY | O_CREAT, 0644))
ATTEMPT(open_trunc, open(path_in_dir("file"), O_RDONLY | O_TRUNC))
ATTEMPT(open_append, open(path_in_dir("file"), O_WRONLY | O_APPEND))
ATTEMPT(open_tmpfile, open(dir, O_TMPFILE | O_RDWR, 0600))
ATTEMPT(creat, creat(path_in_dir("created"), 0644))
ATTEMPT(raw_openat_wronly, syscall(SYS_openat, AT_FDCWD, path_in_dir("file"), O_WRONLY))
ATTEMPT(raw_open_creat, syscall(SYS_open, path_in_dir("created"), O_WRONLY | O_CREAT, 0644))
ATTEMPT(raw_openat2, syscall(SYS_openat2, AT_FDCWD, path_in_dir("file"), NULL, 0))
ATTEMPT(open_proc_comm_write, open("/proc/self/comm", O_WRONLY))
ATTEMPT(open_drop_caches, open("/proc/sys/vm/drop_caches", O_WRONLY))
ATTEMPT(open_fifo, open(path_in_dir("fifo"), O_RDONLY | O_NONBLOCK))
ATTEMPT(raw_open_fifo, syscall(SYS_openat, AT_FDCWD, path_in_dir("fifo"), O_RDONLY | O_NONBLOCK))
ATTEMPT(open_ptmx, open("/dev/ptmx", O_RDONLY | O_NOCTTY))
ATTEMPT(open_tty, open("/dev/tty", O_RDONLY | O_NOCTTY))
ATTEMPT(open_kmsg, open("/proc/kmsg", O_RDONLY)) /* reading takes messages from syslog */
/* file system changes */
ATTEMPT(unlink, unlink(path_in_dir("file")))
ATTEMPT(raw_unlinkat, syscall(SYS_unlinkat, AT_FDCWD, path_in_dir("file"), 0))
ATTEMPT(rename, rename(path_in_dir("file"), path_in_dir("renamed")))
ATTEMPT(raw_renameat2, syscall(SYS_renameat2, AT_FDCWD, path_in_dir("file"), AT_FDCWD,
                               path_in_dir("renamed"), 0))
ATTEMPT(mkdir, mkdir(path_in_dir("newdir"), 0755))
ATTEMPT(raw_mkdirat, syscall(SYS_mkdirat, AT_FDCWD, path_in_dir("newdir"), 0755))
ATTEMPT(rmdir, rmdir(path_in_dir("emptydir")))
ATTEMPT(symlink, symlink("file", path_in_dir("symlink")))
ATTEMPT(link, link(path_in_dir("file"), path_in_dir("hardlink")))
ATTEMPT(mknod, mknod(path_in_dir("node"), S_IFREG | 0644, 0))
ATTEMPT(mkfifo, mkfifo(path_in_dir("newfifo"), 0644))
ATTEMPT(chmod, chmod(path_in_dir("file"), 0777))
ATTEMPT(fchmod, fchmod(file_rw, 0777))
ATTEMPT(chown, chown(path_in_dir("file"), 1, 1))
ATTEMPT(fchown, fchown(file_rw, 1, 1))
ATTEMPT(truncate, truncate(path_in_dir("file"), 0))
ATTEMPT(ftruncate, ftruncate(file_rw, 0))
ATTEMPT(raw_ftruncate, syscall(SYS_ftruncate, file_rw, 0))
ATTEMPT(fallocate, fallocate(file_rw, 0, 0, 1 << 20))
ATTEMPT(utimes, utimes(path_in_dir("file"), NULL))
ATTEMPT(utimensat, utimensat(AT_FDCWD, path_in_dir("file"), NULL, 0))
ATTEMPT(setxattr, setxattr(path_in_dir("file"), "user.leak", "1", 1, 0))
ATTEMPT(fsetxattr, fsetxattr(file_rw, "user.leak", "1", 1, 0))
ATTEMPT(removexattr, removexattr(path_in_dir("file"), "user.keep"))
ATTEMPT(fsync, fsync(file_rw))
ATTEMPT(fdatasync, fdatasync(file_rw))
ATTEMPT(raw_sync, syscall(SYS_sync))
ATTEMPT(syncfs, syncfs(file_rw))
ATTEMPT(chroot, chroot(dir))
/* locks */
static long take_lock(int cmd)
{
    struct flock lock = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
    return fcntl(file_rw, cmd, &lock);
}
ATTEMPT(flock, flock(file_rw, LOCK_SH | LOCK_NB))
ATTEMPT(fcntl_setlk, take_lock(F_SETLK))
ATTEMPT(fcntl_ofd_setlk, take_lock(F_OFD_SETLK))
ATTEMPT(fcntl_setlease, fcntl(file_ro, F_SETLEASE, F_RDLCK))
ATTEMPT(fcntl_notify, fcntl(dir_fd, F_NOTIFY, DN_MODIFY))
/* signals and other processes */
ATTEMPT(kill_parent, kill(parent, SIGUSR1))
ATTEMPT(raw_kill_parent, syscall(SYS_kill, parent, SIGUSR1))
ATTEMPT(kill_group, kill(0, SIGUSR1))
ATTEMPT(kill_all, kill(-1, 0))
ATTEMPT(raw_tgkill_parent, syscall(SYS_tgkill, parent, parent, SIGUSR1))
ATTEMPT(raw_tkill_parent, syscall(SYS_tkill, parent, SIGUSR1))
static long queue_signal(void)
{
    siginfo_t info = {.si_signo = SIGUSR1, .si_code = SI_QUEUE};
    return syscall(SYS_rt_sigqueueinfo, parent, SIGUSR1, &info);
}
ATTEMPT(rt_sigqueueinfo_parent, queue_signal())
/* A stopped child makes the kernel send SIGCHLD to its parent, whatever its exit signal. */
ATTEMPT(stop_self, kill(getpid(), SIGSTOP))
ATTEMPT(raw_tgkill_tstp_self, syscall(SYS_tgkill, getpid(), getpid(), SIGTSTP))
ATTEMPT(raw_tkill_ttin_self, syscall(SYS_tkill, getpid(), SIGTTIN))
static uint32_t futex_word;
ATTEMPT(raw_futex_requeue, syscall(SYS_futex, &futex_word, FUTEX_CMP_REQUEUE, 1, 1, &one, 0))
ATTEMPT(raw_futex_lock_pi, syscall(SYS_futex, &futex_word, FUTEX_LOCK_PI, 0, NULL, NULL, 0))
ATTEMPT(raw_futex_wake, syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0))
/* A shared wait on memory the parent shares could take a wake-up meant for the parent's own
 * waiters; only the word the runtime names (the report's wait_word here) may be waited on. */
static const struct timespec no_time;
ATTEMPT(raw_futex_shared_wait_on_shared_memory,
        syscall(SYS_futex, (uint32_t *)map_anon, FUTEX_WAIT, *(uint32_t *)map_anon, &no_time, NULL, 0))
ATTEMPT(raw_futex_shared_wait_bitset_on_shared_memory,
        syscall(SYS_futex, (uint32_t *)map_anon, FUTEX_WAIT_BITSET, *(uint32_t *)map_anon, &no_time,
                NULL, FUTEX_BITSET_MATCH_ANY))
ATTEMPT(raw_futex_waitv, syscall(SYS_futex_waitv, NULL, 0, 0, NULL, 0))
static long wait_timed_out(long ret) { return ret < 0 && errno == ETIMEDOUT ? 0 : -1; }
ATTEMPT(raw_futex_private_wait, wait_timed_out(syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE,
                                                       futex_word, &no_time, NULL, 0)))
static long shared_wait_on_named_word(void)
{
    return wait_timed_out(syscall(SYS_futex, &report->wait_word, FUTEX_WAIT, report->wait_word,
                                  &no_time, NULL, 0));
}
ATTEMPT(raise_sigusr1_ignored, (signal(SIGUSR1, SIG_IGN), raise(SIGUSR1)))
ATTEMPT(raw_pidfd_open, syscall(SYS_pidfd_open, parent, 0))
/* A pidfd of the parent may be had (a fast-reforked copy prefetches its swapped pages); nothing
 * but that prefetch may be done through it. */
static long through_parent_pidfd(long nr, long a1, long a2, long a3, long a4)
{
    long fd = syscall(SYS_pidfd_open, parent, 0);
    return fd < 0 ? fd : syscall(nr, fd, a1, a2, a3, a4);
}
static struct iovec parent_secret_page = {(void *)&parent_secret, sizeof parent_secret};
ATTEMPT(pidfd_signal_parent, through_parent_pidfd(SYS_pidfd_send_signal, SIGUSR1, 0, 0, 0))
ATTEMPT(pidfd_getfd_parent, through_parent_pidfd(SYS_pidfd_getfd, 0, 0, 0, 0))
ATTEMPT(pidfd_pageout_parent, through_parent_pidfd(SYS_process_madvise,
                                                   (long)&parent_secret_page, 1, MADV_PAGEOUT, 0))
ATTEMPT(raw_pidfd_send_signal, syscall(SYS_pidfd_send_signal, 0, SIGUSR1, NULL, 0))
ATTEMPT(ptrace_attach, ptrace(PTRACE_ATTACH, parent, NULL, NULL))
ATTEMPT(raw_ptrace_seize, syscall(SYS_ptrace, PTRACE_SEIZE, parent, 0, 0))
static long write_parent_memory(void)
{
    long forged = 666;
    struct iovec local = {&forged, sizeof forged};
    struct iovec remote = {(void *)&parent_secret, sizeof parent_secret};
    return syscall(SYS_process_vm_writev, parent, &local, 1, &remote, 1, 0);
}
ATTEMPT(process_vm_writev, write_parent_memory())
ATTEMPT(raw_process_madvise, syscall(SYS_process_madvise, 0, NULL, 0, MADV_PAGEOUT, 0))
ATTEMPT(sched_setscheduler_parent,
        sched_setscheduler(parent, SCHED_IDLE, &(struct sched_param){0}))
ATTEMPT(setpriority_parent, setpriority(PRIO_PROCESS, (id_t)parent, 19))
ATTEMPT(raw_ioprio_set_parent, syscall(SYS_ioprio_set, 1, parent, 3 << 13))
static long pin_parent(void)
{
    cpu_set_t one_cpu;
    CPU_ZERO(&one_cpu);
    CPU_SET(0, &one_cpu);
    return sched_setaffinity(parent, sizeof one_cpu, &one_cpu);
}
ATTEMPT(sched_setaffinity_parent, pin_parent())
/* process creation and identity */
static char *const sh_argv[] = {"/bin/sh", "-c", "echo " LEAK, NULL};
ATTEMPT(execve, execv("/bin/sh", sh_argv))
ATTEMPT(raw_execve, syscall(SYS_execve, "/bin/sh", sh_argv, NULL))
ATTEMPT(raw_execveat, syscall(SYS_execveat, AT_FDCWD, "/bin/sh", sh_argv, NULL, 0))
ATTEMPT(fork, fork())
ATTEMPT(raw_clone, syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0))
ATTEMPT(raw_vfork, syscall(SYS_vfork))
ATTEMPT(raw_clone3, syscall(SYS_clone3, NULL, 0))
ATTEMPT(setsid, setsid())
ATTEMPT(setpgid, setpgid(0, 0))
ATTEMPT(setuid, setuid(getuid()))
ATTEMPT(setgid, setgid(getgid()))
ATTEMPT(unshare, unshare(CLONE_NEWNS))
ATTEMPT(raw_setns, syscall(SYS_setns, 0, 0))
ATTEMPT(prctl_set_dumpable, prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
ATTEMPT(raw_seccomp, syscall(SYS_seccomp, 0, 0, NULL))
ATTEMPT(raw_personality, syscall(SYS_personality, 0xffffffff))
ATTEMPT(setrlimit, setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0}))
/* system administration, with arguments the kernel would reject with another errno */
ATTEMPT(mount, mount("none", "/nonexistent-specx", "tmpfs", 0, NULL))
ATTEMPT(umount, umount2("/nonexistent-specx", 0))
ATTEMPT(raw_reboot, syscall(SYS_reboot, 0, 0, 0, NULL))
ATTEMPT(raw_swapon, syscall(SYS_swapon, "/nonexistent-specx", 0))
ATTEMPT(raw_init_module, syscall(SYS_init_module, NULL, 0, ""))
ATTEMPT(clock_settime, clock_settime(999, &(struct timespec){0}))
ATTEMPT(sethostname, sethostname("", 0))
/* networking */
ATTEMPT(socket_inet, socket(AF_INET, SOCK_STREAM, 0))
ATTEMPT(socket_unix, socket(AF_UNIX, SOCK_STREAM, 0))
ATTEMPT(socket_netlink, socket(AF_NETLINK, SOCK_RAW, 0))
ATTEMPT(raw_socketpair, syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, (int[2]){0}))
static long connect_to_test(void)
{
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)tcp_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return connect(sock_cli, (struct sockaddr *)&to, sizeof to);
}
static long connect_unix_to_test(void)
{
    struct sockaddr_un to = {.sun_family = AF_UNIX};
    strncpy(to.sun_path, unix_path, sizeof to.sun_path - 1);
    return syscall(SYS_connect, sock_cli, &to, sizeof to);
}
ATTEMPT(connect_tcp, connect_to_test())
ATTEMPT(raw_connect_unix, connect_unix_to_test())
ATTEMPT(send, send(sock_cli, LEAK, strlen(LEAK), 0))
ATTEMPT(raw_sendto, syscall(SYS_sendto, sock_cli, LEAK, strlen(LEAK), 0, NULL, 0))
static long send_message(void)
{
    struct msghdr msg = {.msg_iov = &one_iov, .msg_iovlen = 1};
    return syscall(SYS_sendmsg, sock_cli, &msg, 0);
}
ATTEMPT(raw_sendmsg, send_message())
ATTEMPT(raw_sendmmsg, syscall(SYS_sendmmsg, sock_cli, NULL, 0, 0))
ATTEMPT(shutdown, shutdown(sock_cli, SHUT_RDWR))
ATTEMPT(raw_recvfrom, syscall(SYS_recvfrom, sock_srv, &one, 1, MSG_DONTWAIT, NULL, NULL))
ATTEMPT(accept, accept(listener, NULL, NULL))
ATTEMPT(raw_accept4, syscall(SYS_accept4, listener, NULL, NULL, 0))
ATTEMPT(listen, listen(listener, 1))
/* IPC */
ATTEMPT(shmget, shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600))
ATTEMPT(shmat, (long)shmat(shm_id, NULL, 0))
ATTEMPT(shmctl_rmid, shmctl(shm_id, IPC_RMID, NULL))
static long send_ipc_message(void)
{
    struct {
        long mtype;
        char text[1];
    } m = {1, {'x'}};
    return msgsnd(msg_id, &m, 1, IPC_NOWAIT);
}
ATTEMPT(msgsnd, send_ipc_message())
ATTEMPT(semop, semop(sem_id, &(struct sembuf){0, 1, IPC_NOWAIT}, 1))
ATTEMPT(raw_mq_open, syscall(SYS_mq_open, "specx-leak", O_RDWR | O_CREAT, 0600, NULL))
/* kernel interfaces that act elsewhere */
ATTEMPT(raw_io_uring_setup, syscall(SYS_io_uring_setup, 1, &(struct io_uring_params){0}))
ATTEMPT(raw_io_setup, syscall(SYS_io_setup, 1, &(unsigned long){0}))
/* Allowed by the filter (its own memory); without privilege the kernel itself allows only
 * user-mode faults (vm.unprivileged_userfaultfd = 0). */
ATTEMPT(raw_userfaultfd, syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY))
ATTEMPT(raw_bpf, syscall(SYS_bpf, 0, NULL, 0))
ATTEMPT(raw_perf_event_open, syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0))
ATTEMPT(raw_keyctl, syscall(SYS_keyctl, 0, 0, 0, 0, 0))
ATTEMPT(raw_add_key, syscall(SYS_add_key, "user", "specx", "x", 1, 0))
ATTEMPT(memfd_create, memfd_create("leak", 0))
ATTEMPT(raw_fanotify_init, syscall(SYS_fanotify_init, 0, 0))
ATTEMPT(inotify_init, inotify_init1(0))
/* memory */
ATTEMPT(mmap_shared_write_file,
        (long)mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, file_rw, 0))
ATTEMPT(mmap_shared_write_anon, (long)mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE,
                                           MAP_SHARED | MAP_ANONYMOUS, -1, 0))
static long upgrade_shared_read_mapping(void)
{
    void *m = mmap(NULL, MAP_LEN, PROT_READ, MAP_SHARED, file_rw, 0);
    return m == MAP_FAILED ? -1 : mprotect(m, MAP_LEN, PROT_READ | PROT_WRITE);
}
ATTEMPT(mprotect_shared_mapping_writable, upgrade_shared_read_mapping())
ATTEMPT(madvise_remove, madvise(map_file, MAP_LEN, MADV_REMOVE))
/* posix_fadvise returns its error instead of setting errno. */
static long fadvise(int advice)
{
    int err = posix_fadvise(file_ro, 0, 0, advice);
    errno = err;
    return err ? -1 : 0;
}
ATTEMPT(fadvise_dontneed, fadvise(POSIX_FADV_DONTNEED))
ATTEMPT(rt_sigaction_sigsys, sigaction(SIGSYS, &(struct sigaction){0}, NULL))

/* What the sandbox must still allow. */
static long read_private_copy(void)
{
    /* The parent left file_ro at offset 5: the private description must be there too. */
    ssize_t n = read(file_ro, report->read_back, 5);
    report->read_back[n > 0 ? n : 0] = '\0';
    return n == 5 ? 0 : -1;
}
static long read_dir_entry(void)
{
    char buf[1024];
    long n = syscall(SYS_getdents64, dir_fd, buf, sizeof buf);
    if (n <= 0)
        return -1;
    snprintf(report->next_dirent, sizeof report->next_dirent, "%.255s", buf + 19);
    return 0;
}
static long read_opened_file(void)
{
    char buf[sizeof FILE_DATA];
    int fd = open(path_in_dir("file"), O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    /* The parent has written 'P' over the first byte through its shared mapping. */
    return n == (ssize_t)strlen(FILE_DATA) && memcmp(buf + 1, FILE_DATA + 1, (size_t)n - 1) == 0
               ? 0 : -1;
}
/* grep -r and every other tree walk open directories: O_DIRECTORY shares a bit with
 * O_TMPFILE, which the filter must refuse without refusing this. */
static long open_directory(void)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    long found = -1;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, "file") == 0)
            found = 0;
    if (d)
        closedir(d);
    return found;
}
static long map_private(void)
{
    int fd = openat(AT_FDCWD, path_in_dir("file"), O_RDONLY | O_CLOEXEC);
    char *m = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    m[0] = 'W'; /* copy-on-write: only this process sees it */
    return memcmp(m + 1, FILE_DATA + 1, 4) == 0 ? munmap(m, MAP_LEN) : -1;
}
static long allocate(void)
{
    char *p = malloc(8 << 20);
    if (!p)
        return -1;
    memset(p, 1, 8 << 20);
    free(p);
    return 0;
}
/* Writes to the four kinds of shared memory, which must have become private copies holding the
 * parent's data. */
static long write_shared_memory(void)
{
    char *maps[] = {map_file, map_anon, map_sysv, map_memfd, map_anon + FAR_OFFSET};
    for (int i = 0; i < 5; i++) {
        report->seen_before_write[i] = maps[i][0];
        maps[i][0] = 'C';
        report->seen_after_write[i] = maps[i][0];
    }
    report->seen_untouched = map_anon[UNTOUCHED_OFFSET];
    return 0;
}
static void on_usr2(int sig) { usr2_received = 1; }
static long raise_to_self(void)
{
    signal(SIGUSR2, on_usr2);
    return raise(SIGUSR2) == 0 && usr2_received ? 0 : -1;
}
/* A plain O_RDWR open gets a read-only descriptor: it reads the file, and writing through it
 * fails as writing through any descriptor does. */
static long open_rdwr_then_write(void)
{
    int fd = open(path_in_dir("file"), O_RDWR);
    char two[2]; /* the first byte is the parent's (its shared mapping wrote it) */
    if (fd < 0 || read(fd, two, 2) != 2 || two[1] != FILE_DATA[1])
        return -2;
    long written = write(fd, &one, 1);
    int err = errno;
    close(fd);
    errno = err;
    return written;
}
static long open_rdwr_directory(void) { return open(dir, O_RDWR); }
static long keep_fifo_open(void)
{
    /* Kept open on purpose: if the open got through, the parent sees a reader. */
    return open(path_in_dir("fifo"), O_RDONLY | O_NONBLOCK);
}
ATTEMPT(read_inherited_pipe, read(pipe_r, &one, 1))
ATTEMPT(read_stdin, read(0, &one, 1))
ATTEMPT(read_inherited_socket, read(sock_srv, &one, 1))
ATTEMPT(open_dev_zero, open("/dev/zero", O_RDONLY))
ATTEMPT(kill_self, kill(getpid(), 0))
ATTEMPT(prctl_set_name, prctl(PR_SET_NAME, "probe-child", 0, 0, 0))
ATTEMPT(fadvise_willneed, fadvise(POSIX_FADV_WILLNEED))

#define DENY(name) {#name, try_##name, EPERM}
#define FAILS(name, err) {#name, try_##name, err}
static const struct attempt attempts[] = {
    DENY(write_file), DENY(raw_write_file), DENY(raw_pwrite64), DENY(raw_writev),
    DENY(raw_pwritev), DENY(raw_pwritev2), DENY(raw_write_pipe), DENY(raw_write_socket),
    DENY(raw_write_stdout), DENY(raw_write_stderr), DENY(raw_sendfile), DENY(raw_copy_file_range),
    DENY(raw_splice), DENY(raw_tee), DENY(raw_vmsplice), DENY(ioctl_tiocsti),
    DENY(open_wronly), DENY(open_creat), DENY(open_trunc), DENY(open_append),
    DENY(open_tmpfile), DENY(creat), DENY(raw_openat_wronly), DENY(raw_open_creat),
    FAILS(raw_openat2, ENOSYS), DENY(open_proc_comm_write), DENY(open_drop_caches),
    DENY(open_fifo), DENY(raw_open_fifo), DENY(open_ptmx), DENY(open_tty), DENY(open_kmsg),
    DENY(unlink), DENY(raw_unlinkat), DENY(rename), DENY(raw_renameat2), DENY(mkdir),
    DENY(raw_mkdirat), DENY(rmdir), DENY(symlink), DENY(link), DENY(mknod), DENY(mkfifo),
    DENY(chmod), DENY(fchmod), DENY(chown), DENY(fchown), DENY(truncate), DENY(ftruncate),
    DENY(raw_ftruncate), DENY(fallocate), DENY(utimes), DENY(utimensat), DENY(setxattr),
    DENY(fsetxattr), DENY(removexattr), DENY(fsync), DENY(fdatasync), DENY(raw_sync),
    DENY(syncfs), DENY(chroot),
    DENY(flock), DENY(fcntl_setlk), DENY(fcntl_ofd_setlk), DENY(fcntl_setlease),
    DENY(fcntl_notify),
    DENY(kill_parent), DENY(raw_kill_parent), DENY(kill_group), DENY(kill_all),
    DENY(raw_tgkill_parent), DENY(raw_tkill_parent), DENY(rt_sigqueueinfo_parent),
    DENY(stop_self), DENY(raw_tgkill_tstp_self), DENY(raw_tkill_ttin_self),
    DENY(raw_futex_requeue), DENY(raw_futex_lock_pi),
    DENY(raw_futex_shared_wait_on_shared_memory), DENY(raw_futex_shared_wait_bitset_on_shared_memory),
    DENY(raw_futex_waitv),
    DENY(raw_pidfd_send_signal), DENY(pidfd_signal_parent), DENY(pidfd_getfd_parent),
    DENY(pidfd_pageout_parent), DENY(ptrace_attach), DENY(raw_ptrace_seize),
    DENY(process_vm_writev), DENY(raw_process_madvise), DENY(sched_setscheduler_parent),
    DENY(setpriority_parent), DENY(raw_ioprio_set_parent), DENY(sched_setaffinity_parent),
    DENY(execve), DENY(raw_execve), DENY(raw_execveat), DENY(fork), DENY(raw_clone),
    DENY(raw_vfork), FAILS(raw_clone3, ENOSYS), DENY(setsid), DENY(setpgid), DENY(setuid),
    DENY(setgid), DENY(unshare), DENY(raw_setns), DENY(prctl_set_dumpable), DENY(raw_seccomp),
    DENY(raw_personality), DENY(setrlimit),
    DENY(mount), DENY(umount), DENY(raw_reboot), DENY(raw_swapon), DENY(raw_init_module),
    DENY(clock_settime), DENY(sethostname),
    DENY(socket_inet), DENY(socket_unix), DENY(socket_netlink), DENY(raw_socketpair),
    DENY(connect_tcp), DENY(raw_connect_unix), DENY(send), DENY(raw_sendto), DENY(raw_sendmsg),
    DENY(raw_sendmmsg), DENY(shutdown), DENY(raw_recvfrom), DENY(accept), DENY(raw_accept4),
    DENY(listen),
    DENY(shmget), DENY(shmat), DENY(shmctl_rmid), DENY(msgsnd), DENY(semop), DENY(raw_mq_open),
    DENY(raw_io_uring_setup), DENY(raw_io_setup), DENY(raw_bpf),
    DENY(raw_perf_event_open), DENY(raw_keyctl), DENY(raw_add_key), DENY(memfd_create),
    DENY(raw_fanotify_init), DENY(inotify_init),
    DENY(mmap_shared_write_file), DENY(mmap_shared_write_anon),
    FAILS(mprotect_shared_mapping_writable, EACCES), DENY(madvise_remove),
    DENY(fadvise_dontneed), DENY(rt_sigaction_sigsys),
    {"read_private_offset", read_private_copy, 0},
    {"read_private_dir_offset", read_dir_entry, 0},
    {"open_and_read_file", read_opened_file, 0},
    {"open_directory", open_directory, 0},
    {"mmap_private_file", map_private, 0},
    {"malloc", allocate, 0},
    {"pidfd_open_parent", try_raw_pidfd_open, 0},
    {"userfaultfd_own_memory", try_raw_userfaultfd, 0},
    {"write_shared_memory", write_shared_memory, 0},
    {"raise_self", raise_to_self, 0},
    {"keep_fifo_open", keep_fifo_open, EPERM},
    {"open_rdwr_then_write", open_rdwr_then_write, EPERM},
    {"open_rdwr_directory", open_rdwr_directory, EISDIR},
    {"read_inherited_pipe_gets_eof", try_read_inherited_pipe, 0},
    {"read_stdin_gets_eof", try_read_stdin, 0},
    {"read_inherited_socket_gets_eof", try_read_inherited_socket, 0},
    {"open_dev_zero", try_open_dev_zero, 0},
    {"kill_self", try_kill_self, 0},
    {"futex_wake", try_raw_futex_wake, 0},
    {"futex_private_wait", try_raw_futex_private_wait, 0},
    {"futex_shared_wait_on_named_word", shared_wait_on_named_word, 0},
    {"raise_ignored_signal", try_raise_sigusr1_ignored, 0},
    {"prctl_set_name", try_prctl_set_name, 0},
    {"fadvise_willneed", try_fadvise_willneed, 0},
};
#define NATTEMPTS (int)(sizeof attempts / sizeof attempts[0])
_Static_assert(sizeof attempts / sizeof attempts[0] <= MAX_ATTEMPTS, "raise MAX_ATTEMPTS");

/* --- the child ------------------------------------------------------------------------------- */

/* The child is cloned as the runtime clones its copy (copy/copy.c): sharing the parent's
 * descriptor table, which it leaves at once for one of its own filled from the parent's. */
static pid_t clone_like_the_runtime(void)
{
    pid_t parent = getpid(), thread = (pid_t)syscall(SYS_gettid);
    long pid = syscall(SYS_clone, (unsigned long)(CLONE_FILES | SIGCHLD), NULL, NULL, NULL, 0UL);
    if (pid == 0) {
        int err = specx_detach_fds();
        report->enter_status = err ? err : specx_privatize_fds(parent, thread);
    }
    return (pid_t)pid;
}

static _Noreturn void run_child(void)
{
    struct specx_region keep = {report, sizeof *report};
    bool copied;
    if (report->enter_status == 0)
        report->enter_status = specx_sandbox_snapshot(&keep, 1, &copied);
    if (report->enter_status == 0)
        report->enter_status = specx_sandbox_seal(&report->wait_word);
    if (report->enter_status == 0) {
        for (int i = 0; i < NATTEMPTS; i++) {
            errno = 0;
            report->attempt[i].ret = attempts[i].run();
            report->attempt[i].err = errno;
        }
        report->count = NATTEMPTS;
    }
    /* Stay alive until the parent has looked: locks and open FIFOs end with the process. */
    report->done = 1;
    while (!report->release)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    _exit(0);
}

/* A call through the x32 or i386 ABI must end the process: the filter knows only x86-64. */
static _Noreturn void run_foreign_abi_child(int i386)
{
    bool copied;
    if (specx_sandbox_snapshot(NULL, 0, &copied) != 0 || specx_sandbox_seal(NULL) != 0)
        _exit(2);
    if (i386) {
        long ret = 4; /* i386 write(1, LEAK, len) */
        __asm__ volatile("int $0x80"
                         : "+a"(ret)
                         : "b"(1), "c"(LEAK), "d"(strlen(LEAK))
                         : "memory");
    } else {
        syscall(0x40000000 | SYS_write, 1, LEAK, strlen(LEAK));
    }
    _exit(3);
}

/* --- the parent: setup ----------------------------------------------------------------------- */

static int failures;

static void check(int ok, const char *name, const char *fmt, ...)
{
    if (ok) {
        printf("ok %s\n", name);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s: ", name);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "sandbox-probe: %s: %s\n", what, strerror(errno));
    exit(2);
}

static char *map_shared_fd(int fd)
{
    char *m = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        die("mmap");
    return m;
}

static void set_up_files(void)
{
    int fd = open(path_in_dir("file"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, FILE_DATA, strlen(FILE_DATA)) < 0 || ftruncate(fd, MAP_LEN) < 0)
        die("file");
    close(fd);
    file_rw = open(path_in_dir("file"), O_RDWR);
    file_ro = open(path_in_dir("file"), O_RDONLY);
    if (file_rw < 0 || file_ro < 0 || lseek(file_ro, 5, SEEK_SET) != 5)
        die("open file");
    /* The parent reads the first directory entry; the child must continue from the same
     * position without moving the parent's. */
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
    char buf[64];
    if (dir_fd < 0 || syscall(SYS_getdents64, dir_fd, buf, 40) <= 0)
        die("directory");
    dir_offset = lseek(dir_fd, 0, SEEK_CUR);
}

static void set_up_pipes_and_sockets(void)
{
    int p[2], s[2];
    if (pipe(p) < 0 || write(p[1], PIPE_DATA, strlen(PIPE_DATA)) < 0)
        die("pipe");
    pipe_r = p[0];
    pipe_w = p[1];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) < 0 || write(s[0], SOCK_DATA, strlen(SOCK_DATA)) < 0)
        die("socketpair");
    sock_cli = s[0];
    sock_srv = s[1];
    /* A listening socket with one connection waiting in its backlog. */
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        listen(listener, 4) < 0 || getsockname(listener, (struct sockaddr *)&addr, &len) < 0)
        die("listener");
    int client = socket(AF_INET, SOCK_STREAM, 0);
    if (client < 0 || connect(client, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("connect");
}

static void set_up_ipc(void)
{
    shm_id = shmget(IPC_PRIVATE, MAP_LEN, IPC_CREAT | 0600);
    msg_id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    sem_id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
    if (shm_id < 0 || msg_id < 0 || sem_id < 0)
        die("System V IPC");
}

static void set_up_shared_memory(void)
{
    set_up_ipc();
    map_file = map_shared_fd(file_rw);
    map_anon = mmap(NULL, ANON_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    map_sysv = shmat(shm_id, NULL, 0);
    int memfd = memfd_create("probe", MFD_CLOEXEC);
    if (map_anon == MAP_FAILED || map_sysv == MAP_FAILED || memfd < 0 ||
        ftruncate(memfd, MAP_LEN) < 0)
        die("shared memory");
    map_memfd = map_shared_fd(memfd);
    map_file[0] = map_anon[0] = map_sysv[0] = map_memfd[0] = map_anon[FAR_OFFSET] = 'P';
    report = mmap(NULL, sizeof *report, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (report == MAP_FAILED)
        die("report region");
}

static void remove_ipc(void)
{
    shmctl(shm_id, IPC_RMID, NULL);
    msgctl(msg_id, IPC_RMID, NULL);
    semctl(sem_id, 0, IPC_RMID);
}

static void on_usr1(int sig) { usr1_received++; }

static volatile sig_atomic_t child_stopped;
static void on_sigchld(int sig, siginfo_t *info, void *context)
{
    if (info->si_code == CLD_STOPPED || info->si_code == CLD_CONTINUED)
        child_stopped++;
}

/* --- the parent: checks from the outside ----------------------------------------------------- */

static void check_attempts(void)
{
    for (int i = 0; i < report->count; i++) {
        long ret = report->attempt[i].ret;
        int err = report->attempt[i].err;
        if (attempts[i].expect == 0)
            check(ret >= 0, attempts[i].name, "failed with %s", strerror(err));
        else
            check(ret == -1 && err == attempts[i].expect, attempts[i].name,
                  "returned %ld, errno %s (expected %s)", ret, strerror(err),
                  strerror(attempts[i].expect));
    }
}

/* What `file` starts with when nobody wrote it: 'P' where the parent wrote it through its
 * shared mapping (the runtime's probe), FILE_DATA's own first byte in --outside mode. */
static char file_first = 'P';

static void check_file_untouched(void)
{
    struct stat st;
    check(stat(path_in_dir("file"), &st) == 0 && st.st_atime < time(NULL) - 86400,
          "file_access_time_unchanged", "the child's reads updated the access time");
    char buf[MAP_LEN + 1];
    int fd = open(path_in_dir("file"), O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
    close(fd);
    check(n == MAP_LEN && buf[0] == file_first && memcmp(buf + 1, FILE_DATA + 1, strlen(FILE_DATA) - 1) == 0,
          "file_content_unchanged", "the file has %zd bytes starting %.5s", n, buf);
}

static void check_memory_untouched(void)
{
    check(map_file[0] == 'P' && map_anon[0] == 'P' && map_sysv[0] == 'P' && map_memfd[0] == 'P' &&
              map_anon[FAR_OFFSET] == 'P' && map_anon[UNTOUCHED_OFFSET] == 0,
          "shared_memory_unchanged", "parent sees %c%c%c%c%c", map_file[0], map_anon[0],
          map_sysv[0], map_memfd[0], map_anon[FAR_OFFSET]);
    check(memcmp(report->seen_before_write, "PPPPP", 5) == 0 &&
              memcmp(report->seen_after_write, "CCCCC", 5) == 0 && report->seen_untouched == 0,
          "private_copies_hold_parent_data", "child saw %.5s then %.5s",
          report->seen_before_write, report->seen_after_write);
    check(parent_secret == 42, "parent_memory_unchanged", "secret is %ld", parent_secret);
}

static void check_offsets(void)
{
    check(lseek(file_ro, 0, SEEK_CUR) == 5, "parent_file_offset_unchanged", "offset moved");
    check(strcmp(report->read_back, "56789") == 0, "child_read_from_parent_offset",
          "child read '%s'", report->read_back);
    check(lseek(dir_fd, 0, SEEK_CUR) == dir_offset, "parent_dir_offset_unchanged",
          "offset moved");
    char buf[1024];
    long n = syscall(SYS_getdents64, dir_fd, buf, sizeof buf);
    check(n > 0 && strcmp(buf + 19, report->next_dirent) == 0, "child_dir_read_from_parent_offset",
          "child read '%s', parent '%s'", report->next_dirent, n > 0 ? buf + 19 : "");
}

static int read_exactly(int fd, const char *expect)
{
    char buf[64];
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    ssize_t n = read(fd, buf, sizeof buf);
    fcntl(fd, F_SETFL, flags);
    return n == (ssize_t)strlen(expect) && memcmp(buf, expect, (size_t)n) == 0;
}

static void check_channels(void)
{
    check(read_exactly(pipe_r, PIPE_DATA), "pipe_data_intact", "pipe data was consumed or added");
    check(read_exactly(sock_srv, SOCK_DATA), "socket_data_intact",
          "socket data was consumed or added");
    int pending = accept4(listener, NULL, NULL, SOCK_NONBLOCK);
    check(pending >= 0, "pending_connection_intact", "accept: %s", strerror(errno));
    int fifo_writer = open(path_in_dir("fifo"), O_WRONLY | O_NONBLOCK);
    check(fifo_writer < 0 && errno == ENXIO, "fifo_has_no_reader", "the child opened the FIFO");
    check(usr1_received == 0, "parent_not_signalled", "%d signals", (int)usr1_received);
    check(child_stopped == 0, "child_never_stopped", "SIGCHLD for a stop");
}

static void check_locks(void)
{
    struct flock probe = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    int fd = open(path_in_dir("file"), O_RDWR);
    check(fd >= 0 && fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type == F_UNLCK,
          "no_record_lock", "the child holds a lock");
    check(flock(fd, LOCK_EX | LOCK_NB) == 0, "no_flock", "flock: %s", strerror(errno));
    close(fd);
}

static void check_ipc_and_scheduling(void)
{
    struct shmid_ds shm;
    struct msqid_ds msq;
    check(shmctl(shm_id, IPC_STAT, &shm) == 0, "shm_segment_exists", "%s", strerror(errno));
    check(msgctl(msg_id, IPC_STAT, &msq) == 0 && msq.msg_qnum == 0, "message_queue_empty",
          "a message was sent");
    check(semctl(sem_id, 0, GETVAL) == 0, "semaphore_unchanged", "semaphore moved");
    check(sched_getscheduler(0) == SCHED_OTHER, "parent_policy_unchanged", "policy changed");
    errno = 0;
    check(getpriority(PRIO_PROCESS, 0) == 0 && errno == 0, "parent_nice_unchanged",
          "nice changed");
    cpu_set_t cpus;
    check(sched_getaffinity(0, sizeof cpus, &cpus) == 0 &&
              (CPU_COUNT(&cpus) > 1 || sysconf(_SC_NPROCESSORS_ONLN) == 1),
          "parent_affinity_unchanged", "affinity changed");
    check(syscall(SYS_ioprio_get, 1, 0) != (3 << 13), "parent_ioprio_unchanged",
          "I/O priority changed");
}

static void check_foreign_abi(int i386)
{
    pid_t pid = fork();
    if (pid == 0)
        run_foreign_abi_child(i386);
    int status;
    waitpid(pid, &status, 0);
    check(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
          i386 ? "i386_abi_kills" : "x32_abi_kills", "status %#x", status);
}

/* --- --outside: the supervisor's copy ------------------------------------------------------- */

/* Private stand-ins for what the shared regions hold in the other mode: the attempts that use
 * them then write the copy's own memory. */
static void set_up_private_stand_ins(void)
{
    char *p = mmap(NULL, ANON_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    report = mmap(NULL, sizeof *report, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                  0);
    if (p == MAP_FAILED || report == MAP_FAILED)
        die("private memory");
    map_file = map_anon = map_sysv = map_memfd = p;
}

/* Reads all of PATH (random data) into BUF, zeroed first; returns whether a whole page of
 * what was read is still zeros: data the reader was only told it had (the copy's reads of
 * data not in memory become prefetches and leave the buffer as it was). */
static int read_cold_finds_a_hole(const char *path, char *buf, size_t size)
{
    memset(buf, 0, size);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        die(path);
    ssize_t n, got = 0;
    while (got < (ssize_t)size && (n = read(fd, buf + got, size - (size_t)got)) > 0)
        got += n;
    close(fd);
    static const char zeros[4096];
    for (ssize_t page = 0; page + 4096 <= got; page += 4096)
        if (memcmp(buf + page, zeros, sizeof zeros) == 0)
            return 1;
    return 0;
}

static _Noreturn void attempt_everything_and_exit(void)
{
    for (int i = 0; i < NATTEMPTS; i++)
        attempts[i].run();
    _exit(0);
}

static int run_outside(const char *cold1, const char *cold2)
{
    static char buf[16 << 20];
    set_up_ipc();
    set_up_private_stand_ins();
    file_first = FILE_DATA[0];
    read_cold_finds_a_hole(cold1, buf, sizeof buf); /* where the supervisor makes its copy */
    if (read_cold_finds_a_hole(cold2, buf, sizeof buf))
        attempt_everything_and_exit(); /* only the copy finds one */
    /* The copy makes its attempts while the probe waits; then the probe looks. */
    nanosleep(&(struct timespec){1, 0}, NULL);
    check_file_untouched();
    check(parent_secret == 42, "parent_memory_unchanged", "secret is %ld", parent_secret);
    check(lseek(file_ro, 0, SEEK_CUR) == 5, "parent_file_offset_unchanged", "offset moved");
    check(lseek(dir_fd, 0, SEEK_CUR) == dir_offset, "parent_dir_offset_unchanged",
          "offset moved");
    check_channels();
    check_locks();
    check_ipc_and_scheduling();
    check(usr1_received == 0, "parent_not_signalled_at_exit", "%d signals", (int)usr1_received);
    char input[256];
    ssize_t n = read(0, input, sizeof input - 1);
    printf("stdin: %.*s\n", (int)(n > 0 ? n : 0), input);
    remove_ipc();
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *cold1 = NULL, *cold2 = NULL;
    if (argc == 7 && strcmp(argv[1], "--outside") == 0) {
        cold1 = argv[2];
        cold2 = argv[3];
        argv += 3;
        argc -= 3;
    }
    if (argc != 4) {
        fprintf(stderr, "usage: sandbox-probe [--outside COLD1 COLD2] DIR TCP_PORT "
                        "UNIX_SOCKET_PATH\n");
        return 2;
    }
    dir = argv[1];
    tcp_port = atoi(argv[2]);
    unix_path = argv[3];
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* A process group of our own, so that kill(0) from the child can only reach us. */
    setpgid(0, 0);
    signal(SIGUSR1, on_usr1);
    sigaction(SIGCHLD, &(struct sigaction){.sa_sigaction = on_sigchld, .sa_flags = SA_SIGINFO},
              NULL);
    parent = getpid();
    set_up_files();
    set_up_pipes_and_sockets();
    if (cold1) {
        struct timespec times[2] = {{time(NULL) - 2 * 86400, 0}, {0, UTIME_OMIT}};
        if (utimensat(AT_FDCWD, path_in_dir("file"), times, 0) < 0)
            die("utimensat");
        return run_outside(cold1, cold2);
    }
    set_up_shared_memory();
    if (specx_sandbox_prepare() != 0)
        die("specx_sandbox_prepare");
    /* An access time two days old: a read that is not O_NOATIME would update it (relatime). */
    struct timespec times[2] = {{time(NULL) - 2 * 86400, 0}, {0, UTIME_OMIT}};
    if (utimensat(AT_FDCWD, path_in_dir("file"), times, 0) < 0)
        die("utimensat");

    pid_t child = clone_like_the_runtime();
    if (child < 0)
        die("clone");
    if (child == 0)
        run_child();
    while (!report->done)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    check(report->enter_status == 0, "sandbox_entered", "%s", strerror(-report->enter_status));
    check(report->count == NATTEMPTS, "all_attempts_made", "%d of %d", report->count, NATTEMPTS);
    check_attempts();
    check_file_untouched();
    check_memory_untouched();
    check_offsets();
    check_channels();
    check_locks();
    check_ipc_and_scheduling();
    report->release = 1;
    int status;
    waitpid(child, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child_exited_normally", "status %#x",
          status);
    check(usr1_received == 0, "parent_not_signalled_at_exit", "%d signals", (int)usr1_received);
    check_foreign_abi(0);
    check_foreign_abi(1);
    /* Whatever the child did to stdin, it is all still ours: the test compares it. */
    char input[256];
    ssize_t n = read(0, input, sizeof input - 1);
    printf("stdin: %.*s\n", (int)(n > 0 ? n : 0), input);
    remove_ipc();
    return failures ? 1 : 0;
}
