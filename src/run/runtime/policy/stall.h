/* What a stall of the program means for the copy it has: left to go on, or judged and
 * replaced by a new one cloned at the stall (Fraser & Chang 2003 §4.1: the copy is
 * re-created, "synchronized", when the program stalls on data it failed to prefetch). Pure:
 * the copy's life cycle (copy/copy.c) gathers what it knows of the copy and asks here. */
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
};

/* Whether the running copy is left to go on. Otherwise an ended copy is judged, a running one
 * judged and replaced. Left alone: a copy still entering (re-creating it at each stall would
 * only start that over); a dry copy on track that has not earned trust (on probation); and,
 * unless a dry copy has earned its promotion to a live one, a copy at a wait for readahead (no
 * sign of divergence: it predicts beyond the window in flight) or at another thread's stall
 * (threads of a pool take turns at one queue, and the copy runs on through all of it). */
bool specx_stall_keeps_copy(const struct specx_stall_view *v);

#endif
