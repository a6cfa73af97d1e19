/* What a stall of the program means for speculation, decided in one place (Fraser & Chang
 * 2003 §4.1: the copy is created at the first stall and re-created, "synchronized", when the
 * program stalls on data it failed to prefetch; §6.1: speculation that does not pay is held
 * back). Pure: the copy's life cycle (copy/copy.c) gathers what it knows at the stall, asks
 * here once, then does what the answer says. */
#ifndef SPECX_POLICY_STALL_H
#define SPECX_POLICY_STALL_H

#include <stdbool.h>

/* The copy as the program finds it at a stall. */
struct specx_stall_view {
    bool running;      /* a copy runs: it has not ended by itself */
    bool entering;     /* it has not finished entering its sandbox yet (and is not stuck) */
    bool on_track;     /* it predicted this very read */
    bool dry;          /* it only predicts (trust.h) */
    bool earned;       /* a dry one: its predictions so far have earned the process's trust */
    bool arrived;      /* the program waited for readahead: its data is in memory, no miss */
    bool other_thread; /* the stall is another thread's than the one the copy is a clone of */
    bool other_stream; /* ... on a read the copy did not predict, where the copy has shown it
                          follows its own thread alone: the stall is of another stream of
                          reads and says nothing of the copy (docs/design/read-path.md) */
};

/* Everything the decision rests on. */
struct specx_stall_facts {
    bool allowed;        /* the program itself, speculation on and set up (else nothing else
                            is looked at) */
    bool memory_stopped; /* the memory control stopped speculation (policy/memory_control.h) */
    bool had_copy;       /* a copy was made and not judged yet: COPY is how the stall finds it
                            (it may have ended by itself) */
    struct specx_stall_view copy;
    bool backing_off;    /* the stall passes without a new copy (backoff.h), counting the
                            judgment of the copy it had, if that is judged here */
};

enum specx_stall_action {
    SPECX_STALL_IGNORE,   /* speculation does not run here: nothing is done */
    SPECX_STALL_STOP,     /* the copy ends unjudged and none is made (the memory control) */
    SPECX_STALL_KEEP,     /* the copy goes on */
    SPECX_STALL_BACK_OFF, /* the copy is judged and ends; none is made at this stall */
    SPECX_STALL_NEW_STREAM, /* the copy goes on; the stalled thread gets a copy of its own
                               in a stream beside it */
    SPECX_STALL_COPY,     /* the copy is judged and ends; a new one is cloned at the stall.
                             Cloning may still be refused by the kernel's view of the program
                             (kernel/copy_hazards.h: a seccomp filter makes the runtime stand
                             aside), or preempted by the program's own read arriving first */
};

enum specx_stall_action specx_stall_decide(const struct specx_stall_facts *f);

#endif
