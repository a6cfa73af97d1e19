/* See held_thread.h. */
#include "run/supervisor/held_thread.h"

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kernel/blocked_reads.h"
#include "kernel/clock.h"
#include "kernel/kfile.h"

#if !defined(__x86_64__)
#error "held_thread.c sets x86-64 registers; port held_syscall"
#endif

#define SYSCALL_INSN_LEN 2 /* 0f 05 */

/* Where a `syscall` instruction is in the vDSO. Every process of this kernel maps the same
 * vDSO image, only at its own address; so the offset found in ours holds in the target's. */
static long vdso_syscall_offset(void)
{
    static long offset = -1;
    if (offset >= 0)
        return offset;
    const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return -ENOENT;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    size_t size = 0;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > size)
            size = ph[i].p_offset + ph[i].p_filesz;
    for (size_t i = 0; i + 1 < size; i++)
        if (base[i] == 0x0f && base[i + 1] == 0x05)
            return offset = (long)i;
    return -ENOENT;
}

/* TID's vDSO address, from its auxiliary vector. */
static uint64_t vdso_base(pid_t tid)
{
    char path[64];
    Elf64_auxv_t aux[64];
    snprintf(path, sizeof path, "/proc/%d/auxv", tid);
    long n = specx_kfile_read(path, (char *)aux, sizeof aux);
    for (long i = 0; n > 0 && i < n / (long)sizeof aux[0]; i++)
        if (aux[i].a_type == AT_SYSINFO_EHDR)
            return aux[i].a_un.a_val;
    return 0;
}

/* A call the stop interrupted into EINTR (epoll_wait, semop, sigtimedwait... which a stop
 * signal makes fail too, signal(7)) runs again when the thread resumes, as if no stop had
 * come. A thread with a signal pending, which may be what interrupted it, is never held
 * (held_stop). Restartable calls (-ERESTART*) are restarted by the kernel itself. */
static void rewind_interrupted_call(struct held_thread *t)
{
    if ((long)t->regs.orig_rax < 0 || (long)t->regs.rax != -EINTR)
        return;
    t->regs.rax = t->regs.orig_rax;
    t->regs.rip -= SYSCALL_INSN_LEN;
}

/* Whether TID is the leader of its thread group (its process's own id). */
static bool is_leader(pid_t tid)
{
    return syscall(SYS_tgkill, tid, tid, 0) == 0;
}

/* Waits for the next stop of TID and returns it as a wait status; -ESRCH if TID ended
 * instead. The supervisor's thread shares a process with the real parent of the program,
 * which must be the one to reap the program: a process leader's end is only looked at; a
 * thread's end (nobody else would reap a traced thread) is reaped. */
static int wait_stop(pid_t tid, int *status)
{
    siginfo_t si;
    for (;;) {
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)tid, &si, WSTOPPED | WEXITED | WNOWAIT | __WALL) == 0)
            break;
        if (errno != EINTR)
            return -errno;
    }
    if (si.si_code == CLD_TRAPPED || si.si_code == CLD_STOPPED) {
        waitid(P_PID, (id_t)tid, &si, WSTOPPED | WNOHANG | __WALL); /* takes that stop */
        *status = si.si_status << 8 | 0x7f;
        return 0;
    }
    if (!is_leader(tid))
        waitid(P_PID, (id_t)tid, &si, WEXITED | WNOHANG | __WALL);
    return -ESRCH;
}

/* Waits for the stop PTRACE_INTERRUPT asked for; signals that come first are delivered. */
static int wait_interrupt_stop(pid_t tid)
{
    for (;;) {
        int st, err = wait_stop(tid, &st);
        if (err)
            return err;
        if (st >> 16 == PTRACE_EVENT_STOP)
            return WSTOPSIG(st) == SIGTRAP ? 0 : -EAGAIN; /* else a group-stop */
        ptrace(PTRACE_CONT, tid, 0, WSTOPSIG(st));
    }
}

static int fill_held(struct held_thread *t, pid_t tid, uint64_t vdso)
{
    long off = vdso_syscall_offset();
    if (off < 0 || vdso == 0)
        return -ENOENT;
    t->tid = tid;
    t->syscall_insn = vdso + (uint64_t)off;
    t->pending_signal = 0;
    t->stopped_ns = specx_now_ns();
    return ptrace(PTRACE_GETREGS, tid, 0, &t->regs) < 0 ? -errno : 0;
}

int held_stop(struct held_thread *t, pid_t tid)
{
    if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0)
        return -errno;
    int err = ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 ? -errno : wait_interrupt_stop(tid);
    /* A signal waiting to be taken (a fault's SIGSEGV raised just as the stop came, say) would
     * be taken at the first injected step, and could only be given back without its details
     * (si_addr, si_code): the thread is let go at once to take it, and no copy is made. */
    if (err == 0 && specx_thread_signal_pending(tid))
        err = -EAGAIN;
    if (err == 0)
        err = fill_held(t, tid, vdso_base(tid));
    if (err && err != -ESRCH)
        ptrace(PTRACE_DETACH, tid, 0, 0);
    if (err == 0)
        rewind_interrupted_call(t);
    return err;
}

int held_adopt(struct held_thread *t, pid_t child, const struct held_thread *parent)
{
    int st, err = wait_stop(child, &st);
    if (err)
        return err;
    *t = *parent;
    t->tid = child;
    t->pending_signal = 0;
    return ptrace(PTRACE_SETREGS, child, 0, &t->regs) < 0 ? -errno : 0;
}

/* A signal that arrived while the thread ran one of our calls: kept, with its details, for its
 * release. */
static void keep_signal(struct held_thread *t, int sig)
{
    if (t->pending_signal == 0) {
        t->pending_signal = sig;
        ptrace(PTRACE_GETSIGINFO, t->tid, 0, &t->pending_info);
    } else if (t->pending_signal != sig) { /* a second kind: sent again, as from specx */
        syscall(SYS_tgkill, t->tid, t->tid, sig);
    }
}

int held_syscall_begin(struct held_thread *t, long nr, const uint64_t args[6])
{
    struct user_regs_struct r = t->regs;
    r.rax = (uint64_t)nr;
    r.orig_rax = (uint64_t)-1; /* no restart of whatever call it was in */
    r.rip = t->syscall_insn;
    r.rdi = args[0], r.rsi = args[1], r.rdx = args[2];
    r.r10 = args[3], r.r8 = args[4], r.r9 = args[5];
    if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0 || ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0)
        return -errno;
    return 0;
}

long held_syscall_end(struct held_thread *t)
{
    for (;;) {
        int st;
        struct user_regs_struct r;
        if (wait_stop(t->tid, &st) < 0)
            return -ESRCH;
        if (WSTOPSIG(st) != SIGTRAP && st >> 16 == 0)
            keep_signal(t, WSTOPSIG(st));
        if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
            return -errno;
        if (r.rip == t->syscall_insn + SYSCALL_INSN_LEN)
            return (long)r.rax;
        if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0) /* a signal stop came first */
            return -ESRCH;
    }
}

long held_syscall(struct held_thread *t, long nr, const uint64_t args[6])
{
    int err = held_syscall_begin(t, nr, args);
    return err ? err : held_syscall_end(t);
}

void held_release(struct held_thread *t)
{
    ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs);
    if (t->pending_signal) /* delivered as it came, not as one specx sent */
        ptrace(PTRACE_SETSIGINFO, t->tid, 0, &t->pending_info);
    ptrace(PTRACE_DETACH, t->tid, 0, t->pending_signal);
    t->held_ns = specx_now_ns() - t->stopped_ns;
}
