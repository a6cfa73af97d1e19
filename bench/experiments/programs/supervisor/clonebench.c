// clonebench: measure the latency of making a running, single-threaded target fork itself from
// outside with ptrace, while the target is stopped.
// usage: clonebench MIB REPS [hugepage] [cloneptrace]
// Starts ./busy MIB (static; touches MIB MiB of anonymous memory, publishes the address of its
// "syscall; ret" gadget on a pipe, spins incrementing a counter in a shared memfd page).
// Per repetition:
//   t0 PTRACE_INTERRUPT -> waitpid(PTRACE_EVENT_STOP) t1 -> PTRACE_GETREGS (save) ->
//   PTRACE_SETREGS(rax=__NR_clone, rdi=SIGCHLD, rsi=rdx=r10=r8=0, rip=gadget, orig_rax=-1) ->
//   PTRACE_SINGLESTEP -> [PTRACE_EVENT_FORK stop (we set PTRACE_O_TRACEFORK so the new child
//   is auto-attached and held stopped before running any instruction) -> PTRACE_SINGLESTEP] ->
//   SIGTRAP after the syscall instruction -> PTRACE_GETREGS: rax = child pid  t3 ->
//   PTRACE_SETREGS(saved) -> PTRACE_CONT  t4 -> spin until the target's counter changes  t5.
// Variant "cloneptrace": flags CLONE_PTRACE|SIGCHLD and no PTRACE_O_TRACEFORK (the child is
// still auto-attached and held, but the parent has no extra fork event stop).
// After each repetition (untimed) the child is SIGKILLed and waited for.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, "clonebench: " __VA_ARGS__); fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno)); if (tpid > 0) kill(tpid, SIGKILL); exit(1); } while (0)
static pid_t tpid;

static long long now_ns(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static int cmpd(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
static double median(double *v, int n) { qsort(v, n, sizeof *v, cmpd); return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; }

static int wait_stop(pid_t p) {
    int st;
    if (waitpid(p, &st, __WALL) != p) DIE("waitpid");
    if (!WIFSTOPPED(st)) DIE("target not stopped: status 0x%x", st);
    return st;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: clonebench MIB REPS [hugepage] [cloneptrace]\n"); return 1; }
    int reps = atoi(argv[2]), huge = 0, cptr = 0;
    for (int i = 3; i < argc; i++) { if (!strcmp(argv[i], "hugepage")) huge = 1; if (!strcmp(argv[i], "cloneptrace")) cptr = 1; }
    int mfd = memfd_create("ctr", 0);
    if (mfd < 0 || ftruncate(mfd, 4096)) DIE("memfd");
    volatile unsigned long *ctr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    int pp[2]; if (pipe(pp)) DIE("pipe");
    char fdarg[16]; snprintf(fdarg, sizeof fdarg, "%d", mfd);
    tpid = fork();
    if (tpid == 0) {
        dup2(pp[1], 1); close(pp[0]);
        execl("./busy", "busy", argv[1], fdarg, huge ? "hugepage" : NULL, (char *)NULL);
        _exit(127);
    }
    close(pp[1]);
    FILE *f = fdopen(pp[0], "r");
    unsigned long gadget; size_t sz;
    if (fscanf(f, "%lx %zu", &gadget, &sz) != 2) DIE("reading gadget address");
    usleep(20000);
    char path[64], line[256];
    long rss = -1, thp = -1;
    snprintf(path, sizeof path, "/proc/%d/status", tpid);
    FILE *s = fopen(path, "r");
    while (s && fgets(line, sizeof line, s)) sscanf(line, "VmRSS: %ld", &rss);
    if (s) fclose(s);
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", tpid);
    s = fopen(path, "r");
    while (s && fgets(line, sizeof line, s)) sscanf(line, "AnonHugePages: %ld", &thp);
    if (s) fclose(s);
    printf("target pid %d: %zu MiB touched, VmRSS %ld kB, AnonHugePages %ld kB, gadget %#lx, variant %s\n",
           tpid, sz >> 20, rss, thp, gadget, cptr ? "CLONE_PTRACE|SIGCHLD" : "SIGCHLD + PTRACE_O_TRACEFORK");

    long opts = PTRACE_O_EXITKILL | (cptr ? 0 : PTRACE_O_TRACEFORK);
    if (ptrace(PTRACE_SEIZE, tpid, 0, opts)) DIE("PTRACE_SEIZE");
    double *dstop = calloc(reps, 8), *dclone = calloc(reps, 8), *dcont = calloc(reps, 8), *dtot = calloc(reps, 8), *drun = calloc(reps, 8);
    for (int r = 0; r < reps; r++) {
        usleep(50000);
        struct user_regs_struct saved, inj;
        long long t0 = now_ns();
        if (ptrace(PTRACE_INTERRUPT, tpid, 0, 0)) DIE("PTRACE_INTERRUPT");
        int st = wait_stop(tpid);
        long long t1 = now_ns();
        unsigned long cstop = *ctr;
        if ((st >> 16) != PTRACE_EVENT_STOP) DIE("expected PTRACE_EVENT_STOP, got 0x%x", st);
        if (ptrace(PTRACE_GETREGS, tpid, 0, &saved)) DIE("GETREGS");
        inj = saved;
        inj.rax = __NR_clone; inj.orig_rax = -1;
        inj.rdi = SIGCHLD | (cptr ? CLONE_PTRACE : 0); inj.rsi = 0; inj.rdx = 0; inj.r10 = 0; inj.r8 = 0;
        inj.rip = gadget;
        if (ptrace(PTRACE_SETREGS, tpid, 0, &inj)) DIE("SETREGS");
        if (ptrace(PTRACE_SINGLESTEP, tpid, 0, 0)) DIE("SINGLESTEP");
        st = wait_stop(tpid);
        unsigned long evpid = 0;
        if (!cptr) {
            if ((st >> 8) != (SIGTRAP | (PTRACE_EVENT_FORK << 8))) DIE("expected PTRACE_EVENT_FORK, got 0x%x", st);
            ptrace(PTRACE_GETEVENTMSG, tpid, 0, &evpid);
            if (ptrace(PTRACE_SINGLESTEP, tpid, 0, 0)) DIE("SINGLESTEP2");
            st = wait_stop(tpid);
        }
        if (WSTOPSIG(st) != SIGTRAP || (st >> 16)) DIE("expected single-step SIGTRAP, got 0x%x", st);
        struct user_regs_struct after;
        if (ptrace(PTRACE_GETREGS, tpid, 0, &after)) DIE("GETREGS2");
        long long t3 = now_ns();
        if (ptrace(PTRACE_SETREGS, tpid, 0, &saved)) DIE("SETREGS restore");
        if (ptrace(PTRACE_CONT, tpid, 0, 0)) DIE("CONT");
        long long t4 = now_ns();
        while (*ctr == cstop) ;
        long long t5 = now_ns();
        long cpid = (long)after.rax;
        if (cpid <= 0) DIE("clone returned %ld", cpid);
        if (!cptr && (unsigned long)cpid != evpid) DIE("rax %ld != event pid %lu", cpid, evpid);
        /* inspect the child (untimed): state and RSS */
        char cst = '?'; long crss = -1;
        snprintf(path, sizeof path, "/proc/%ld/stat", cpid);
        s = fopen(path, "r");
        if (s && fgets(line, sizeof line, s)) { char *p = strrchr(line, ')'); if (p) cst = p[2]; }
        if (s) fclose(s);
        snprintf(path, sizeof path, "/proc/%ld/status", cpid);
        s = fopen(path, "r");
        while (s && fgets(line, sizeof line, s)) sscanf(line, "VmRSS: %ld", &crss);
        if (s) fclose(s);
        kill(cpid, SIGKILL);
        for (;;) {  /* we are its tracer: consume its stop/exit notifications */
            int cs; if (waitpid(cpid, &cs, __WALL) != cpid) DIE("waitpid child");
            if (WIFEXITED(cs) || WIFSIGNALED(cs)) break;
        }
        dstop[r] = (t1 - t0) / 1e3; dclone[r] = (t3 - t1) / 1e3; dcont[r] = (t4 - t3) / 1e3;
        dtot[r] = (t4 - t0) / 1e3; drun[r] = (t5 - t0) / 1e3;
        printf("rep %2d: child %ld (state %c, VmRSS %ld kB) interrupt->stopped %.1f us, regs+clone+singlestep %.1f us, restore+CONT %.1f us, total to CONT returned %.1f us, to target counter moving %.1f us\n",
               r, cpid, cst, crss, dstop[r], dclone[r], dcont[r], dtot[r], drun[r]);
    }
    printf("MEDIAN over %d reps (%zu MiB%s, %s): interrupt->stopped %.1f us | clone part %.1f us | restore+CONT %.1f us | TOTAL interrupt->CONT returned %.1f us | interrupt->target observed running %.1f us\n",
           reps, sz >> 20, huge ? " MADV_HUGEPAGE" : "", cptr ? "CLONE_PTRACE" : "TRACEFORK",
           median(dstop, reps), median(dclone, reps), median(dcont, reps), median(dtot, reps), median(drun, reps));
    kill(tpid, SIGKILL);
    waitpid(tpid, NULL, __WALL);
    return 0;
}
