/* One job of specx share: its process, its memory and freezer groups, its output. */
#ifndef SHARE_JOB_H
#define SHARE_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel/cgroup.h"
#include "share/figures.h"
#include "share/files.h"
#include "share/options.h"

/* The groups every job's groups are made in: one memory group holding --memory, and the
 * freezer's (the same group where both controllers share one hierarchy, v2). Below the memory
 * group, beside the jobs', FETCH holds the helpers that read files back in, so that the page
 * cache they bring in counts inside --memory (it is charged to whoever reads it in). */
struct share_groups {
    struct specx_cgroup mem, frz, fetch;
    bool frz_separate; /* v1: the freezer is a hierarchy of its own */
    bool mem_made, frz_made, fetch_made;
    /* The groups held for this run while it lives (specx_cgroup_hold), -1 where not made. */
    int mem_hold, frz_hold;
};

/* Anonymous memory a prefetch asked for: LEN bytes at ADDR in process PID (memory.c). */
struct share_asked {
    pid_t pid;
    uintptr_t addr;
    size_t len;
};

/* A line-buffered stream of a job's output relayed to ours with a "[N] " prefix. */
struct share_stream {
    int fd;       /* read end of the job's pipe, -1 once at EOF (or with --output) */
    int to;       /* our descriptor it goes to */
    char buf[8192];
    size_t len;
};

struct share_job {
    unsigned number;          /* from 1 */
    char **argv;
    pid_t pid;
    int pidfd;
    struct specx_cgroup mem, frz;
    bool mem_made, frz_made;
    bool tasks_below;         /* its processes are in the groups below mem, not in mem
                               * (a Slurm job: slurmstepd in the job's group) */
    int swappiness;           /* v1: its memory group's own, inherited; -1 elsewhere */
    struct share_stream out, err;
    bool exited;
    int status;               /* wait status once exited */
    uint64_t cpu_at_exit_ns;  /* its process's CPU time, its waited-for children's in it */
    uint64_t started_ns, ended_ns;
    unsigned turns;
    unsigned level;           /* mlfq level */
    uint64_t prefetched_bytes, prefetched_file_bytes; /* the second: of files, in the first */
    struct share_files files; /* its file pages in the page cache when its last turn ended */
    struct share_asked *asked; /* what prefetches asked for since its last turn ended */
    size_t nasked, asked_cap;
    uint64_t unused_bytes;    /* of what was asked for, pages its turn then never touched */
    uint64_t major_faults, peak_bytes; /* of its memory group, read as it ends */
    uint64_t majflt_at_turn;  /* its major faults when its current turn began */
    uint64_t majflt_first_second; /* major faults in each turn's first second, summed */
};

/* Makes the run's parent groups (specx-share-PID) below our own: the memory group with LIMIT
 * (0: none). -1 with a one-line reason in err. */
int share_groups_make(struct share_groups *g, uint64_t limit, char *err, size_t errsize);
void share_groups_remove(struct share_groups *g);

/* Removes the groups of earlier runs whose specx share was killed outright (SIGKILL: no
 * cleanup ran): their processes are killed, frozen ones thawed so that they can die. */
void share_groups_sweep_stale(void);

/* Starts job J: its groups, frozen first unless RUN, then the process, in its groups before it
 * runs a single instruction of the command. Output goes to OUTPUT_DIR/N.out and .err, or
 * through pipes to share_stream_relay. -1 with a one-line reason in err. */
int share_job_start(struct share_job *j, const struct share_groups *g, bool run,
                    const char *output_dir, char *err, size_t errsize);

/* Freezes (FROZEN true) or thaws the job's group, waiting up to TIMEOUT_MS for the freeze to
 * complete (a task in an uninterruptible sleep freezes only once its wait ends). */
int share_job_freeze(const struct share_job *j, bool frozen, int timeout_ms);

/* The job's major page faults so far (its memory group's memory.stat). */
uint64_t share_job_major_faults(const struct share_job *j);
uint64_t share_job_peak_bytes(const struct share_job *j);

/* The CPU time the job has used so far, in ns (its groups' count, and on v1, where that counts
 * only the processes alive in the group, its own process's once it has ended). */
uint64_t share_job_cpu_ns(const struct share_job *j);

/* Kills every process in the job's groups (thawing them so they can die), waits for the
 * groups to empty, notes the group's figures, and removes them. Safe to call more than once. */
void share_job_end(struct share_job *j);

/* Relays what the stream has to say now, whole lines only, each prefixed "[N] "; at EOF the
 * rest (a newline added if it lacks one). Returns false once the stream is at EOF. */
bool share_stream_relay(struct share_stream *s, unsigned number);

/* What the report tells of job J (figures.h), once it has ended. */
struct share_job_figures share_job_figures(const struct share_job *j);

/* The exit code the job's wait status stands for: its exit status, or 128+N for signal N. */
int share_job_exit_code(const struct share_job *j);

#endif
