// sup: launches a target command under a given seccomp/supervision mode.
// usage: sup MODE CMD [ARGS...]
// MODE:
//   base      no filter
//   allow1    1-instruction filter: RET_ALLOW
//   allowN    arch check + nr compares for read/pread64/readv/preadv/preadv2, all ALLOW
//   allowbpf  like allowN but the pread64 branch also loads args[2] (defeats the
//             kernel's per-syscall action cache, so the BPF program really runs)
//   trace     RET_TRACE for read/pread64/readv/preadv/preadv2; parent PTRACE_SEIZEs
//             with PTRACE_O_TRACESECCOMP and PTRACE_CONTs every seccomp stop
//   notif     RET_USER_NOTIF for pread64 (SECCOMP_FILTER_FLAG_NEW_LISTENER); parent gets
//             the listener via pidfd_getfd and answers with SECCOMP_USER_NOTIF_FLAG_CONTINUE
//   notifsync as notif, plus SECCOMP_IOCTL_NOTIF_SET_FLAGS(SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
// Prints the supervisor's own CPU time and the number of events handled to stderr.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#define DIE(...) do { fprintf(stderr, "sup: " __VA_ARGS__); fprintf(stderr, ": %s\n", strerror(errno)); exit(100); } while (0)

static volatile sig_atomic_t got_chld;
static void on_sig(int s) { if (s == SIGCHLD) got_chld = 1; }

static long long now_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define LD_ARCH BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch))
#define LD_NR   BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define JEQ(v, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (v), (t), (f))
#define RET(v)  BPF_STMT(BPF_RET | BPF_K, (v))

static int install(const char *mode) {
    struct sock_filter f[32]; int n = 0; unsigned flags = 0;
    if (!strcmp(mode, "allow1")) {
        f[n++] = (struct sock_filter)RET(SECCOMP_RET_ALLOW);
    } else if (!strcmp(mode, "allowN") || !strcmp(mode, "trace")) {
        unsigned act = !strcmp(mode, "trace") ? SECCOMP_RET_TRACE : SECCOMP_RET_ALLOW;
        struct sock_filter g[] = {
            LD_ARCH, JEQ(AUDIT_ARCH_X86_64, 1, 0), RET(SECCOMP_RET_KILL_PROCESS),
            LD_NR,
            JEQ(__NR_read, 5, 0), JEQ(__NR_pread64, 4, 0), JEQ(__NR_readv, 3, 0),
            JEQ(__NR_preadv, 2, 0), JEQ(__NR_preadv2, 1, 0),
            RET(SECCOMP_RET_ALLOW), RET(act),
        };
        memcpy(f, g, sizeof g); n = sizeof g / sizeof g[0];
    } else if (!strcmp(mode, "allowbpf")) {
        struct sock_filter g[] = {
            LD_ARCH, JEQ(AUDIT_ARCH_X86_64, 1, 0), RET(SECCOMP_RET_KILL_PROCESS),
            LD_NR,
            JEQ(__NR_read, 5, 0), JEQ(__NR_pread64, 6, 0), JEQ(__NR_readv, 3, 0),
            JEQ(__NR_preadv, 2, 0), JEQ(__NR_preadv2, 1, 0),
            RET(SECCOMP_RET_ALLOW), RET(SECCOMP_RET_ALLOW),
            /* pread64: look at args[2] (count, low 32 bits) */
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
            JEQ(4096, 0, 0), RET(SECCOMP_RET_ALLOW),
        };
        memcpy(f, g, sizeof g); n = sizeof g / sizeof g[0];
    } else if (!strncmp(mode, "notif", 5)) {
        struct sock_filter g[] = {
            LD_ARCH, JEQ(AUDIT_ARCH_X86_64, 1, 0), RET(SECCOMP_RET_KILL_PROCESS),
            LD_NR, JEQ(__NR_pread64, 1, 0),
            RET(SECCOMP_RET_ALLOW), RET(SECCOMP_RET_USER_NOTIF),
        };
        memcpy(f, g, sizeof g); n = sizeof g / sizeof g[0];
        flags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
    } else {
        fprintf(stderr, "bad mode %s\n", mode); exit(100);
    }
    struct sock_fprog prog = { .len = n, .filter = f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) DIE("NNP");
    int r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
    if (r < 0) DIE("seccomp");
    return r;  /* listener fd for notif modes (O_CLOEXEC) */
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: sup MODE CMD ARGS...\n"); return 100; }
    const char *mode = argv[1];
    int is_trace = !strcmp(mode, "trace"), is_notif = !strncmp(mode, "notif", 5);
    int go[2], back[2];
    if (pipe2(go, O_CLOEXEC) || pipe2(back, O_CLOEXEC)) DIE("pipe");
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(go[1]); close(back[0]);  /* so a dying supervisor can't leave us blocked on the pipe */
        if (is_trace && read(go[0], &c, 1) != 1) _exit(101);   /* wait until seized */
        if (strcmp(mode, "base")) {
            int lfd = install(mode);
            if (is_notif) {
                if (write(back[1], &lfd, sizeof lfd) != sizeof lfd) _exit(102);
                if (read(go[0], &c, 1) != 1) _exit(103);          /* parent has a copy now */
                close(lfd);  /* (O_CLOEXEC anyway) */
            }
        }
        execv(argv[2], argv + 2);
        perror("execv"); _exit(127);
    }
    close(go[0]); close(back[1]);
    fprintf(stderr, "sup: mode=%s target pid=%d supervisor pid=%d\n", mode, pid, getpid());
    long long events = 0;
    long long t0 = now_ns();
    int status = 0;
    if (is_trace) {
        if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESECCOMP | (getenv("SUP_EXITKILL") ? PTRACE_O_EXITKILL : 0))) DIE("PTRACE_SEIZE");
        if (write(go[1], "x", 1) != 1) DIE("write");
        for (;;) {
            pid_t w = waitpid(pid, &status, __WALL);
            if (w < 0) DIE("waitpid");
            if (WIFEXITED(status) || WIFSIGNALED(status)) break;
            if (WIFSTOPPED(status)) {
                int sig = WSTOPSIG(status), ev = status >> 16;
                if (sig == SIGTRAP && ev == PTRACE_EVENT_SECCOMP) { events++; ptrace(PTRACE_CONT, pid, 0, 0); }
                else if (ev == PTRACE_EVENT_STOP) ptrace(PTRACE_CONT, pid, 0, 0);
                else ptrace(PTRACE_CONT, pid, 0, sig);  /* signal-delivery-stop: pass it on */
            }
        }
    } else if (is_notif) {
        int tfd;
        if (read(back[0], &tfd, sizeof tfd) != sizeof tfd) DIE("read listener fd number");
        int pidfd = syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) DIE("pidfd_open");
        int lfd = syscall(SYS_pidfd_getfd, pidfd, tfd, 0);
        if (lfd < 0) DIE("pidfd_getfd");
        if (!strcmp(mode, "notifsync")) {
            unsigned long fl = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;  /* passed by value */
            if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, fl)) DIE("SECCOMP_IOCTL_NOTIF_SET_FLAGS");
        }
        struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_sig;  /* no SA_RESTART */
        sigaction(SIGCHLD, &sa, NULL); sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = { { 0, 50000 }, { 0, 50000 } }; setitimer(ITIMER_REAL, &it, NULL);
        if (write(go[1], "x", 1) != 1) DIE("write");
        struct seccomp_notif req; struct seccomp_notif_resp resp;
        /* Tight loop: block in NOTIF_RECV. Target exit is noticed via SIGCHLD
           (handler without SA_RESTART -> RECV fails with EINTR); a 50 ms interval
           timer closes the check-then-block race. */
        for (;;) {
            if (got_chld && waitpid(pid, &status, WNOHANG) == pid) break;
            memset(&req, 0, sizeof req);
            if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
                if (errno == EINTR || errno == ENOENT) continue;
                DIE("NOTIF_RECV");
            }
            memset(&resp, 0, sizeof resp);
            resp.id = req.id; resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
            if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) && errno != ENOENT) DIE("NOTIF_SEND");
            events++;
        }
    } else {
        if (waitpid(pid, &status, 0) < 0) DIE("waitpid");
    }
    long long t1 = now_ns();
    struct rusage ru; getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    fprintf(stderr, "SUP mode=%s events=%lld wall_ms=%.1f sup_cpu_ms=%.1f (user %.1f sys %.1f) target_status=0x%x\n",
            mode, events, (t1 - t0) / 1e6, cpu * 1e3,
            (ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6) * 1e3,
            (ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6) * 1e3, status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}
