/* A program that seals itself with seccomp, then reads a file (tests/test_run_seccomp.py):
 *   seccomp-reader MODE FILE [LOG]
 * MODE strict: prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT), as the oldest sandboxes do;
 * kill / errno: a libseccomp filter whose default action kills the process, or fails the call
 * with EPERM, allowing only what the reading needs; trap-raw: a filter installed by the
 * program's own syscall instruction (libc never sees it) that allows everything but traps
 * setpgid, which the program never calls: its SIGSYS handler writes a line to LOG, so a copy
 * of it that called setpgid would show; inherit: a filter that kills the process at cachestat
 * (a call the program never makes, newer than many services' lists), then an exec of itself
 * in mode plain, which only reads: the filter is inherited, as from a service manager;
 * kill-tsync: a second thread reads while the first installs a killing filter for both
 * (SECCOMP_FILTER_FLAG_TSYNC) once the reading is under way. Prints
 * how many bytes it read (and, under errno, what a call off the list returned), then exits
 * with 0; plainly and under specx run alike. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <pthread.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int log_fd = -1;

static void on_sigsys(int sig)
{
    (void)sig;
    static const char line[] = "sigsys\n";
    if (log_fd >= 0)
        write(log_fd, line, sizeof line - 1);
}

/* Allows exactly NRS, everything else gets DEFAULT. Exits on failure. */
static void libseccomp_filter(uint32_t deflt, const int *nrs, size_t n)
{
    scmp_filter_ctx ctx = seccomp_init(deflt);
    for (size_t i = 0; ctx && i < n; i++)
        if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nrs[i], 0) < 0)
            ctx = NULL;
    if (!ctx || seccomp_load(ctx) < 0) {
        perror("seccomp-reader: libseccomp");
        _exit(2);
    }
}

/* seccomp(SECCOMP_SET_MODE_FILTER) by the program's own instruction. */
static long raw_seccomp(unsigned long op, unsigned long flags, void *args)
{
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"((long)SYS_seccomp), "D"(op), "S"(flags), "d"(args)
                     : "rcx", "r11", "memory");
    return ret;
}

/* Fills INSNS (4 of them) and PROG with a filter that gives system call NR the action ACTION
 * and allows everything else. */
static void one_call_filter(struct sock_filter *insns, struct sock_fprog *prog, int nr,
                            unsigned action)
{
    const struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    memcpy(insns, filter, sizeof filter);
    *prog = (struct sock_fprog){ 4, insns };
}

static void trap_setpgid(void)
{
    struct sock_filter insns[4];
    struct sock_fprog prog;
    one_call_filter(insns, &prog, SYS_setpgid, SECCOMP_RET_TRAP);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigsys;
    if (sigaction(SIGSYS, &sa, NULL) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        raw_seccomp(SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        perror("seccomp-reader: raw filter");
        _exit(2);
    }
}

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

static void exec_under_filter(char **argv)
{
    struct sock_filter insns[4];
    struct sock_fprog prog;
    one_call_filter(insns, &prog, __NR_cachestat, SECCOMP_RET_KILL_PROCESS);
    char *args[] = { argv[0], "plain", argv[2], NULL };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0 || execv("/proc/self/exe", args)) {
        perror("seccomp-reader: inherit");
        _exit(2);
    }
}

static int read_fd;
static unsigned long read_total;
static int read_done;

static void *read_through(void *unused)
{
    (void)unused;
    static char buf[65536];
    long n;
    while ((n = read(read_fd, buf, sizeof buf)) > 0)
        __atomic_add_fetch(&read_total, (unsigned long)n, __ATOMIC_RELAXED);
    __atomic_store_n(&read_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* The reading thread is under way (1 MiB in, or done with a smaller file) when the filter goes
 * in for both threads. */
static void filter_both_threads(const int *nrs, size_t n)
{
    pthread_t reader;
    if (pthread_create(&reader, NULL, read_through, NULL) != 0)
        _exit(2);
    while (__atomic_load_n(&read_total, __ATOMIC_RELAXED) < (1ul << 20) &&
           !__atomic_load_n(&read_done, __ATOMIC_ACQUIRE))
        sched_yield();
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
    for (size_t i = 0; ctx && i < n; i++)
        if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nrs[i], 0) < 0)
            ctx = NULL;
    if (!ctx || seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) < 0 || seccomp_load(ctx) < 0) {
        perror("seccomp-reader: libseccomp");
        _exit(2);
    }
    pthread_join(reader, NULL);
}

static void say(const char *text)
{
    write(STDOUT_FILENO, text, strlen(text));
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: seccomp-reader strict|kill|errno|trap-raw|inherit|kill-tsync FILE [LOG]\n");
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "inherit") == 0)
        exec_under_filter(argv);
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0 || (argc > 3 && (log_fd = open(argv[3], O_WRONLY | O_APPEND)) < 0)) {
        perror("seccomp-reader: open");
        return 2;
    }
    static const int reading[] = { SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(exit),
                                   SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn) };
    const size_t nreading = sizeof reading / sizeof reading[0];
    if (strcmp(mode, "strict") == 0)
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT);
    else if (strcmp(mode, "kill") == 0)
        libseccomp_filter(SCMP_ACT_KILL_PROCESS, reading, nreading);
    else if (strcmp(mode, "errno") == 0)
        libseccomp_filter(SCMP_ACT_ERRNO(EPERM), reading, nreading);
    else if (strcmp(mode, "trap-raw") == 0)
        trap_setpgid();
    else if (strcmp(mode, "kill-tsync") == 0) {
        /* and what a thread's end and a join need */
        static const int threads[] = { SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(exit),
                                       SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn),
                                       SCMP_SYS(futex), SCMP_SYS(madvise), SCMP_SYS(munmap),
                                       SCMP_SYS(rt_sigprocmask) };
        read_fd = fd;
        filter_both_threads(threads, sizeof threads / sizeof threads[0]);
    }
    else if (strcmp(mode, "plain") != 0)
        return 2;
    static char buf[65536];
    unsigned long total = read_total;
    long n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        total += (unsigned long)n;
    char msg[96];
    snprintf(msg, sizeof msg, "read %lu\n", total);
    say(msg);
    if (strcmp(mode, "errno") == 0) {
        /* A call off the list fails as the filter says: plainly and under specx alike. */
        long got = syscall(SYS_getppid);
        snprintf(msg, sizeof msg, "getppid %ld errno %d\n", got, got < 0 ? errno : 0);
        say(msg);
    }
    syscall(SYS_exit, 0); /* strict mode allows exit, not exit_group */
}
