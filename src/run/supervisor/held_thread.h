/* One thread of another process, held stopped by ptrace and made to run system calls for the
 * supervisor: the way CRIU's parasite gets into a process, reduced to what specx needs (a
 * clone made by the program's own thread, and the few calls that seal that clone). Nothing is
 * left in the thread: its registers are put back as they were and it is let go
 * (docs/design/supervisor.md). x86-64 only. */
#ifndef SPECX_HELD_THREAD_H
#define SPECX_HELD_THREAD_H

#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

struct held_thread {
    pid_t tid;
    struct user_regs_struct regs; /* as it stopped: what it resumes with */
    uint64_t syscall_insn;        /* a `syscall` instruction in its vDSO */
    int pending_signal;           /* one that arrived while it was held, delivered at release */
    siginfo_t pending_info;       /* and its details */
    uint64_t stopped_ns;          /* when it stopped (held_stop) */
    uint64_t held_ns;             /* how long it was held, once released */
};

/* Attaches to TID (PTRACE_SEIZE), stops it and saves its registers. Meant for a thread running
 * user code: one in a blocking call is interrupted as by a stop signal (the call restarts; one
 * that would fail with EINTR is rewound to run again). Signals that arrive first are delivered
 * as they came. Returns 0, or -errno with the thread let go (EPERM: a debugger or another
 * tracer has it; ESRCH: it exited; EAGAIN: job control stopped it, and it stays so, or a
 * signal waits to be taken by it, which it then takes as if nothing had happened). */
int held_stop(struct held_thread *t, pid_t tid);

/* Takes over a new child auto-attached by an injected clone: waits for its first stop and gives
 * it the registers of PARENT as it stopped (the child continues where its parent was). */
int held_adopt(struct held_thread *t, pid_t child, const struct held_thread *parent);

/* Makes the held thread execute system call NR with ARGS; returns what it returned (-errno on
 * failure), or -ESRCH if the thread died. */
long held_syscall(struct held_thread *t, long nr, const uint64_t args[6]);

/* The same in two halves, for a call that waits for the supervisor itself (one the copy's own
 * filter reports to the supervisor's listener): begin, answer the notification, then end. */
int held_syscall_begin(struct held_thread *t, long nr, const uint64_t args[6]);
long held_syscall_end(struct held_thread *t);

/* Restores the registers and lets the thread go (PTRACE_DETACH). */
void held_release(struct held_thread *t);

#endif
