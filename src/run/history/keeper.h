/* What specx run does with a command's history while the command runs (docs/design/
 * history.md): before it starts, the history of its key is loaded (or, where there is none,
 * the start-up reads of the same program's latest history) and a trace is made for the
 * runtime to note the reads in (common/history_trace.h). While it runs, a keeper outside the
 * program — a thread of specx run when specx run waits for the command, else a process of its
 * own, no child of the command — brings the history's ranges in, in the order they were first
 * read, ahead of the program's progress, in the idle I/O class, within the memory budget of
 * the program's group, skipping what is in memory, and stops where the program reads too
 * little of it (the §6.1 control of memory-control.md). When it has ended, the keeper writes
 * the history anew from what this run read and what of the old one it used. */
#ifndef SPECX_HISTORY_KEEPER_H
#define SPECX_HISTORY_KEEPER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "run/history/counts.h"
#include "run/history/store.h"

enum history_mode { HISTORY_OFF, HISTORY_RECORD, HISTORY_REPLAY, HISTORY_AUTO };

struct history_plan;
struct history_outside;

struct history_keeper {
    enum history_mode mode;
    struct history_store store;
    uint64_t program, key;       /* command_key.h: this run's */
    struct history old;          /* the history replayed (none: nentries 0) */
    struct history_plan *plan;
    int trace_fd;                /* the memory file of the trace */
    int lock_fd;                 /* history_lock, held until the history is written */
    struct specx_trace_header *trace;
    int pidfd;                   /* the command, once started */
    pthread_t thread;
    bool threaded;
    /* The runtime is not in the command (the supervisor serves it): its reads are sampled
     * from outside (outside.h). Set before the keeper starts. */
    bool outside;
    struct history_outside *sampler;
    char cwd[PATH_MAX];          /* the command's working directory */
    char *const *argv;
    struct history_counts counts;
};

/* MODE from its name; false if it is none. */
bool history_mode_parse(const char *name, enum history_mode *mode);

/* Prepares history for ARGV: loads what will be replayed (a refused history, or a store that
 * cannot be trusted, is said in one line, and the run goes on without it) and makes the
 * trace. False if the run keeps no history. */
bool history_keeper_prepare(struct history_keeper *k, enum history_mode mode,
                            char *const argv[]);
/* The environment variable's value that names the trace held by process HOLDER. */
void history_keeper_export(const struct history_keeper *k, pid_t holder);
/* Keeps history for the command PID from a thread of this process; _finish waits for it once
 * the command has ended and fills in the counts. */
bool history_keeper_start_thread(struct history_keeper *k, pid_t pid);
void history_keeper_finish_thread(struct history_keeper *k);
/* Keeps history for this process, about to become the command, from a process of its own
 * (neither its child nor in its descriptors: the trace's memory file is closed here).
 * False if none could be started: the command then runs without history. */
bool history_keeper_detach(struct history_keeper *k);

#endif
