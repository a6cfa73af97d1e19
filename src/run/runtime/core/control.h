/* The control region: memory shared between a normal process and its speculative processes
 * (MAP_SHARED|MAP_ANONYMOUS, created before the first clone and kept shared by the sandbox).
 * It carries, for each copy's stream (runtime.h), the start-up handshake, the prefetch log
 * (what the speculative process prefetched, so the program can tell a prefetched read from a
 * missed one, §4.1.2 and Table 2) and the horizon's futex (§4.1.3); and the memory control's
 * state, one for the process. */
#ifndef SPECX_CONTROL_H
#define SPECX_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/cgroup.h"
#include "kernel/residency.h" /* struct specx_file_range */
#include "run/runtime/core/runtime.h" /* SPECX_STREAMS */
#include "run/runtime/policy/memory_control.h"
#include "run/runtime/policy/trust.h" /* struct specx_tally */

#define SPECX_LOG_SIZE 1024u   /* ring of prefetch records; > SPECX_HORIZON_MAX */
#define SPECX_LOG_WINDOW 384u  /* how far back the program looks for a matching prefetch */

struct specx_prefetch_record {
    uint64_t seq; /* position in the log, to tell a live record from a recycled one */
    uint64_t dev, ino, off, len;
    uint64_t time_ns;
    uint32_t consumed; /* the program reached this range (used, or found it evicted) */
    uint32_t dry;      /* only a prediction, nothing was read (trust.h) */
};

/* Value of `ready` when the speculative process could not enter its sandbox. */
#define SPECX_READY_FAILED UINT32_MAX

/* The memory control's state (running/memory_watch.c), here so that whichever of the program and
 * its copy reaches the end of an interval first can end it. */
struct specx_memory_watch {
    uint32_t lock;       /* who is ending an interval (running/memory_watch.c), 0: no one */
    uint32_t disabled;   /* speculation stopped by the control */
    uint64_t interval_start_ns, interval_end_ns;
    uint64_t harm_since_ns; /* start of the interval that stopped speculation, until the copy's
                               memory is given back */
    /* What the kernel and the statistics slot said when the interval began. */
    uint64_t refaults, limit_hits, shortage, removed, speculative_pages, copy_private_kb;
    struct specx_memctl policy;
    bool have_group;     /* the program's memory cgroup was found */
    uint64_t limit;      /* ... and its limit in bytes (0: none) */
    struct specx_cgroup group; /* the group whose limit bounds the program (memcg.h) */
};

/* What one copy shares with the program (one per stream of reads, runtime.h): its start-up
 * handshake, its prefetch log and its horizon. */
struct specx_stream_ctl {
    uint32_t generation; /* bumped by the program before each clone into this stream */
    uint32_t detached;   /* futex: generation whose speculative process holds none of the
                            program's descriptors any more (privatize.h) */
    uint32_t snapshot;   /* futex: generation whose speculative process has its snapshot of
                            the program's memory (sandbox.h) */
    uint32_t ready;      /* futex: generation whose speculative process is sandboxed and running */
    uint32_t passed;     /* futex: log records below this are no longer outstanding */
    uint32_t parked;     /* the speculative process waits on `passed` */
    uint32_t issued;     /* records written so far (release-stored after the record) */
    uint32_t snapshot_late; /* set by a copy that had to copy shared memory: its snapshot was
                               taken in its sandbox, not at the clone (copy.c) */
    int32_t copy_pid;    /* the live copy (0: none): set by the program at the clone, cleared
                            when it ends the copy (running/memory_watch.c asks who is alive) */
    uint64_t copy_private_kb_now; /* what the copy's private memory grew by since it began,
                                     as its timer last saw it */
    unsigned long owner; /* the program's thread the copy is a clone of (pthread_self) */
    uint32_t owner_read; /* records of the copy that thread read (since the clone) */
    uint32_t others_read; /* ... and that other threads read */
    struct specx_prefetch_record log[SPECX_LOG_SIZE];
};

struct specx_control {
    struct specx_stream_ctl stream[SPECX_STREAMS];
    struct specx_memory_watch memory;
};

/* The limit of the memory group that bounds the program (running/memory_watch.h), in bytes: 0 for
 * none, or without a control region yet. */
static inline uint64_t specx_control_memory_limit(const struct specx_control *ctl)
{
    return ctl ? ctl->memory.limit : 0;
}

/* Whether the memory control's current interval is over at NOW_NS (none without a control
 * region): the program checks after each checked read (one comparison, inline), and only then
 * asks the copy's life cycle to end it (running/memory_watch.h). */
static inline bool specx_control_memory_due(const struct specx_control *ctl, uint64_t now_ns)
{
    return ctl && now_ns >= __atomic_load_n(&ctl->memory.interval_end_ns, __ATOMIC_RELAXED);
}

/* How many copies of the program are alive now (their streams' copy_pid). */
static inline unsigned specx_control_live_copies(const struct specx_control *ctl)
{
    unsigned live = 0;
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        live += __atomic_load_n(&ctl->stream[k].copy_pid, __ATOMIC_RELAXED) != 0;
    return live;
}

/* In a copy: its own stream's part of the region, whose log it writes. */
static inline struct specx_stream_ctl *specx_control_own_stream(void)
{
    return &specx.ctl->stream[specx.own_stream];
}

/* Maps a fresh zeroed region (NULL on failure). */
struct specx_control *specx_control_create(void);

/* Speculative side: appends a prefetch record to its stream's log (dry: a prediction only,
 * trust.h). */
void specx_log_prefetch(struct specx_stream_ctl *stream, uint64_t dev, uint64_t ino, uint64_t off,
                        uint64_t len, uint64_t now_ns, bool dry);

/* Program side, a read of thread READER (pthread_self): marks the records of every stream's
 * log overlapping [off, off+len) of (dev, ino) as consumed, counts them as read by the copy's
 * own thread or another, moves each horizon past them and wakes a parked speculative process.
 * Returns how many prefetches (not dry records) were newly consumed. */
unsigned specx_log_consume(struct specx_control *ctl, unsigned long reader, uint64_t dev,
                           uint64_t ino, uint64_t off, uint64_t len);

/* Speculative side: blocks while the horizon forbids another prefetch of NEXT bytes: more
 * than HORIZON outstanding, the oldest too old, or more than MAX_BYTES outstanding (0: no
 * byte bound). */
void specx_horizon_wait(struct specx_stream_ctl *stream, uint32_t horizon, uint64_t next,
                        uint64_t max_bytes);

/* What the prefetch log says, at a stall, of the copy whose records start at `from`: all a
 * decision about that copy asks of the log (policy/stall.h), from one look at it. */
struct specx_log_view {
    unsigned stream;             /* the copy's stream (runtime.h) */
    uint32_t from;
    bool predicted;              /* a record of it that the program read covers the stalled
                                    read: it predicted it */
    struct specx_tally on_track; /* its records' tally, those the program has not reached yet
                                    left out (a copy on track still runs ahead of it) */
    struct specx_tally diverged; /* the same, those counted as misses (a copy off course: they
                                    will not be read) */
};

/* Program side: the view of the copy whose records start at FROM in STREAM, at a stalled read
 * [off, off+len) of (dev, ino) that was matched against the log already. */
struct specx_log_view specx_log_view(const struct specx_stream_ctl *stream, uint32_t from,
                                     uint64_t dev, uint64_t ino, uint64_t off, uint64_t len);

/* Program side, at a stall: specx_log_consume, then the view of the copy of stream VIEWED
 * from FROM, in one call (the read path matches every read; at a stall the copy's life cycle
 * needs the view). */
unsigned specx_log_consume_at_stall(struct specx_control *ctl, unsigned long reader,
                                    uint64_t dev, uint64_t ino, uint64_t off, uint64_t len,
                                    unsigned viewed, uint32_t from,
                                    struct specx_log_view *view);

/* Speculative side: is [off, off+len) of (dev, ino) inside a prediction this copy logged
 * that the program has not reached yet? A live copy that reads again what it prefetched finds
 * it in flight and issues nothing; a dry copy must log nothing either, or a copy stuck
 * re-reading one block (it got no data, so its next offset is stale) would count as many
 * predictions read when the program reads that block once. */
bool specx_log_pending(const struct specx_stream_ctl *stream, uint64_t dev, uint64_t ino,
                         uint64_t off, uint64_t len);

/* Start-up handshake, speculative side: the new process reports (futex wake) that it let go
 * of the program's descriptors, then that it has its snapshot, then that it is ready (or
 * SPECX_READY_FAILED), each with its generation. */
void specx_control_report_detached(struct specx_stream_ctl *stream, uint32_t value);
void specx_control_report_snapshot(struct specx_stream_ctl *stream, uint32_t value);
void specx_control_report_ready(struct specx_stream_ctl *stream, uint32_t value);

/* How the program waits for a new speculative process (specx_control_start). */
struct specx_start_wait {
    uint64_t timeout_ns; /* the longest wait for each report */
    bool snapshot;       /* wait for its snapshot too, before `ready` */
    /* The program's own read (NULL: none): the wait for `ready` ends once it has arrived,
     * looked at every slice_ns. */
    const struct specx_file_range *own_read;
    uint64_t slice_ns;
};

/* How the start went. */
struct specx_start {
    uint32_t ready;       /* the value of `ready` seen last: the generation once the process is
                             sandboxed, SPECX_READY_FAILED if it could not be */
    uint64_t detached_ns; /* when the wait for it to let go of the program's descriptors ended */
};

/* Program side, right after cloning the speculative process of stream->generation, whose records
 * start at FROM: nothing it inherits in the log is outstanding (its horizon starts at FROM),
 * and the program waits as W says for the handshake. A wait ends too when `ready` says the
 * process failed. */
struct specx_start specx_control_start(struct specx_stream_ctl *stream, uint32_t from,
                                       const struct specx_start_wait *w);

#endif
