/* Per-process state of the preload runtime libspecx.so. One instance per process image:
 * the constructor fills it, the fork handler resets it, and the speculative process inherits
 * a copy that it marks as speculative. */
#ifndef SPECX_RUNTIME_H
#define SPECX_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel/clock.h"
#include "common/stats_layout.h"

enum specx_role {
    SPECX_ROLE_OFF,    /* before the constructor ran, or standing aside (copy.h): every wrapper
                        * passes straight through */
    SPECX_ROLE_NORMAL, /* the program itself */
    SPECX_ROLE_SPEC,   /* its sandboxed speculative copy (Fraser & Chang 2003, §4.1) */
};

struct specx_control;

/* A speculative process as the program knows it: its pid (0: none) and its start time, which
 * tells it from a later process given the same pid (copy/copy_ref.h). */
struct specx_copy_ref {
    pid_t pid;
    uint64_t start;
};

/* How many copies one process may have at once: one per stream of reads, a thread whose
 * reads the copy of another thread does not predict (copy/copy.c, docs/design/read-path.md).
 * Each is a process of the program's size in pages shared copy-on-write, a clone in the
 * stalled thread's time and a share of the idle CPU; four covers the readers whose threads
 * each read their own files on the machines specx runs on, two to eight cores, and keeps
 * what copies cost a process within four times one copy's. */
#define SPECX_STREAMS 4u

/* A copy as the program manages it (copy/copy.c); stream 0 is the process's first. */
struct specx_stream {
    struct specx_copy_ref copy; /* pid 0 if none */
    pid_t thread;               /* the program's thread it is a clone of */
    uint32_t issued_at_start;   /* its log's position when it started */
    uint64_t dev, ino;          /* the file of the stall that created it */
    uint64_t born_ns;           /* when it let go of the program's descriptors */
    bool dry;                   /* it only predicts (trust.h) */
};

struct specx_state {
    enum specx_role role;
    bool spec_allowed;   /* may this process speculate (not disabled, sandbox ready, ...) */
    bool verbose;
    bool memory_control; /* the §6.1 control may stop speculation (running/memory_watch.h) */
    pid_t pid;           /* the process this state belongs to (a vfork child is not it) */
    struct specx_stream stream[SPECX_STREAMS]; /* its speculative processes (its copies) */
    unsigned own_stream; /* in a copy: its stream, whose log it writes */
    pid_t manager;       /* the thread managing the copies now (copy/copy.c), 0 if none */
    struct specx_copy_ref dying[8]; /* killed copies not reaped yet (pid 0: free) */
    unsigned horizon;    /* prefetches allowed outstanding beyond what the program consumed */
    struct specx_stats_slot *slot;
    struct specx_control *ctl; /* shared with the speculative process; NULL until needed */
    uint64_t copy_activity; /* in the copy: times it reached I/O (running/copy_idle.h) */
};

extern struct specx_state specx;

/* Relaxed atomic add to a counter of this process's statistics slot. */
#define SPECX_COUNT(field, value) \
    __atomic_fetch_add(&specx.slot->field, (uint64_t)(value), __ATOMIC_RELAXED)

/* One line on stderr prefixed "specx: ", only with --verbose (SPECX_VERBOSE=1). The flag is
 * tested where the line is logged: the read path logs at every stall, and without --verbose
 * neither the call nor its arguments cost anything. */
#define specx_log(...)                  \
    do {                                \
        if (specx.verbose)              \
            specx_log_line(__VA_ARGS__); \
    } while (0)
void specx_log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Code of the program's threads that makes the runtime's own system calls runs between
 * specx_calls_begin, which says whether it may (the role is still SPECX_ROLE_NORMAL), and
 * specx_calls_end. specx_calls_drain, after the role was set to SPECX_ROLE_OFF, waits until
 * no other thread is in such code: a seccomp filter the program is about to install must
 * not meet a call of the runtime's (copy.h, specx_copy_stand_aside). */
bool specx_calls_begin(void);
void specx_calls_end(void);
void specx_calls_drain(void);

/* Resets the per-process state (slot, no speculative process, no history): at start and in a
 * forked child. */
void specx_start_process(void);

#endif
