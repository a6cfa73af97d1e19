#include "run/runtime/core/control.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "run/runtime/policy/horizon.h"
#include "kernel/raw.h"

/* Parked processes re-check the time bound this often even if nobody wakes them. */
#define PARK_RECHECK_NS (100ull * 1000000ull)

static void futex_wait(uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts = { (time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull) };
    specx_raw_syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

static void futex_wake(uint32_t *word)
{
    specx_raw_syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

struct specx_control *specx_control_create(void)
{
    void *p = specx_raw_mmap(NULL, sizeof(struct specx_control), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void specx_log_prefetch(struct specx_stream_ctl *stream, uint64_t dev, uint64_t ino,
                        uint64_t off, uint64_t len, uint64_t now_ns, bool dry)
{
    uint32_t seq = stream->issued;
    struct specx_prefetch_record *rec = &stream->log[seq % SPECX_LOG_SIZE];
    *rec = (struct specx_prefetch_record){ seq, dev, ino, off, len, now_ns, 0, dry };
    __atomic_store_n(&stream->issued, seq + 1, __ATOMIC_RELEASE);
}

static bool record_overlaps(const struct specx_prefetch_record *rec, uint64_t dev, uint64_t ino,
                            uint64_t off, uint64_t len)
{
    return rec->dev == dev && rec->ino == ino && rec->off < off + len && off < rec->off + rec->len;
}

/* Moves the horizon's base up to REACHED, never down: another thread may have moved it
 * further meanwhile. */
static void move_passed(struct specx_stream_ctl *stream, uint32_t reached)
{
    uint32_t passed = __atomic_load_n(&stream->passed, __ATOMIC_RELAXED);
    while (reached > passed && !__atomic_compare_exchange_n(&stream->passed, &passed, reached,
                                                            true, __ATOMIC_RELEASE,
                                                            __ATOMIC_RELAXED))
        ;
}

/* specx_log_consume in one stream's log. */
static unsigned consume_in(struct specx_stream_ctl *stream, unsigned long reader, uint64_t dev,
                           uint64_t ino, uint64_t off, uint64_t len)
{
    uint32_t issued = __atomic_load_n(&stream->issued, __ATOMIC_ACQUIRE);
    uint32_t lowest = issued > SPECX_LOG_WINDOW ? issued - SPECX_LOG_WINDOW : 0;
    uint32_t reached = 0;
    unsigned consumed = 0, prefetches = 0;
    for (uint32_t seq = issued; seq-- > lowest;) {
        struct specx_prefetch_record *rec = &stream->log[seq % SPECX_LOG_SIZE];
        if (rec->seq != seq || __atomic_load_n(&rec->consumed, __ATOMIC_RELAXED) ||
            !record_overlaps(rec, dev, ino, off, len))
            continue;
        /* Threads of the program consume at once: each record is counted by one of them. */
        if (__atomic_exchange_n(&rec->consumed, 1, __ATOMIC_RELAXED))
            continue;
        consumed++;
        prefetches += !rec->dry;
        /* The program reached this prefetch: the ones issued before it are behind it too. */
        if (seq + 1 > reached)
            reached = seq + 1;
    }
    if (consumed) {
        __atomic_fetch_add(reader == stream->owner ? &stream->owner_read : &stream->others_read,
                           consumed, __ATOMIC_RELAXED);
        move_passed(stream, reached);
        if (__atomic_load_n(&stream->parked, __ATOMIC_ACQUIRE))
            futex_wake(&stream->passed);
    }
    return prefetches;
}

unsigned specx_log_consume(struct specx_control *ctl, unsigned long reader, uint64_t dev,
                           uint64_t ino, uint64_t off, uint64_t len)
{
    unsigned prefetches = 0;
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        prefetches += consume_in(&ctl->stream[k], reader, dev, ino, off, len);
    return prefetches;
}

/* The first of the records [from, issued) still in the ring: only a copy's newest
 * SPECX_LOG_SIZE records are tallied, the older ones are overwritten. */
static uint32_t first_live_record(uint32_t from, uint32_t issued)
{
    return issued - from > SPECX_LOG_SIZE ? issued - SPECX_LOG_SIZE : from;
}

struct specx_log_view specx_log_view(const struct specx_stream_ctl *stream, uint32_t from,
                                     uint64_t dev, uint64_t ino, uint64_t off, uint64_t len)
{
    uint32_t issued = __atomic_load_n(&stream->issued, __ATOMIC_ACQUIRE);
    uint32_t passed = __atomic_load_n(&stream->passed, __ATOMIC_ACQUIRE);
    struct specx_log_view v = { .from = from };
    for (uint32_t seq = first_live_record(from, issued); seq != issued; seq++) {
        const struct specx_prefetch_record *rec = &stream->log[seq % SPECX_LOG_SIZE];
        if (rec->seq != seq)
            continue;
        if (__atomic_load_n(&rec->consumed, __ATOMIC_RELAXED)) {
            v.on_track.hits++;
            v.predicted = v.predicted || record_overlaps(rec, dev, ino, off, len);
        } else {
            v.diverged.misses++;
            v.on_track.misses += seq < passed;
        }
    }
    v.diverged.hits = v.on_track.hits;
    return v;
}

unsigned specx_log_consume_at_stall(struct specx_control *ctl, unsigned long reader,
                                    uint64_t dev, uint64_t ino, uint64_t off, uint64_t len,
                                    unsigned viewed, uint32_t from,
                                    struct specx_log_view *view)
{
    unsigned prefetches = specx_log_consume(ctl, reader, dev, ino, off, len);
    *view = specx_log_view(&ctl->stream[viewed], from, dev, ino, off, len);
    view->stream = viewed;
    return prefetches;
}

bool specx_log_pending(const struct specx_stream_ctl *stream, uint64_t dev, uint64_t ino,
                         uint64_t off, uint64_t len)
{
    uint32_t issued = __atomic_load_n(&stream->issued, __ATOMIC_ACQUIRE);
    uint32_t passed = __atomic_load_n(&stream->passed, __ATOMIC_ACQUIRE);
    for (uint32_t seq = first_live_record(passed, issued); seq != issued; seq++) {
        const struct specx_prefetch_record *rec = &stream->log[seq % SPECX_LOG_SIZE];
        if (rec->seq == seq && !__atomic_load_n(&rec->consumed, __ATOMIC_RELAXED) &&
            rec->dev == dev && rec->ino == ino && rec->off <= off &&
            off + len <= rec->off + rec->len)
            return true;
    }
    return false;
}

/* Bytes of the prefetches (not predictions) from log position PASSED on. */
static uint64_t outstanding_bytes(const struct specx_stream_ctl *stream, uint32_t passed)
{
    uint64_t bytes = 0;
    for (uint32_t seq = passed; seq != stream->issued; seq++) {
        const struct specx_prefetch_record *rec = &stream->log[seq % SPECX_LOG_SIZE];
        bytes += rec->dry ? 0 : rec->len;
    }
    return bytes;
}

void specx_horizon_wait(struct specx_stream_ctl *stream, uint32_t horizon, uint64_t next,
                        uint64_t max_bytes)
{
    for (;;) {
        uint32_t passed = __atomic_load_n(&stream->passed, __ATOMIC_ACQUIRE);
        uint32_t outstanding = stream->issued - passed;
        uint64_t age = outstanding
            ? specx_now_ns() - stream->log[passed % SPECX_LOG_SIZE].time_ns : 0;
        if (!specx_horizon_should_park(outstanding, age, horizon) &&
            !specx_horizon_over_bytes(max_bytes ? outstanding_bytes(stream, passed) : 0, next,
                                      max_bytes))
            return;
        __atomic_store_n(&stream->parked, 1, __ATOMIC_RELEASE);
        futex_wait(&stream->passed, passed, PARK_RECHECK_NS);
        __atomic_store_n(&stream->parked, 0, __ATOMIC_RELEASE);
    }
}

static void report(uint32_t *word, uint32_t value)
{
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
    futex_wake(word);
}

/* Waits until WORD holds GENERATION, or `ready` says the process failed, for at most
 * TIMEOUT_NS; returns what WORD held last. */
static uint32_t wait_for(struct specx_stream_ctl *stream, uint32_t *word, uint32_t generation,
                         uint64_t timeout_ns)
{
    uint64_t deadline = specx_now_ns() + timeout_ns;
    for (;;) {
        uint32_t seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        uint64_t now = specx_now_ns();
        if (seen == generation || seen == SPECX_READY_FAILED || now >= deadline ||
            __atomic_load_n(&stream->ready, __ATOMIC_ACQUIRE) == SPECX_READY_FAILED)
            return seen;
        futex_wait(word, seen, deadline - now);
    }
}

void specx_control_report_detached(struct specx_stream_ctl *stream, uint32_t value)
{
    report(&stream->detached, value);
}

void specx_control_report_snapshot(struct specx_stream_ctl *stream, uint32_t value)
{
    report(&stream->snapshot, value);
}

void specx_control_report_ready(struct specx_stream_ctl *stream, uint32_t value)
{
    report(&stream->ready, value);
}

/* Waits for `ready` as W says: in slices while the program's own read has not arrived, so
 * that the wait ends when it has (the copy then finishes entering on its own). */
static uint32_t wait_ready(struct specx_stream_ctl *stream, uint32_t generation,
                           const struct specx_start_wait *w)
{
    uint64_t start = specx_now_ns();
    for (;;) {
        uint32_t seen = wait_for(stream, &stream->ready, generation,
                                 w->own_read ? w->slice_ns : w->timeout_ns);
        if (seen == generation || seen == SPECX_READY_FAILED ||
            specx_now_ns() - start >= w->timeout_ns || !w->own_read ||
            specx_range_arrived(w->own_read))
            return seen;
    }
}

/* The new process logs nothing before it is ready, so the horizon's base can move to FROM
 * here, after the clone (never down: a thread of the program may have moved it further). */
struct specx_start specx_control_start(struct specx_stream_ctl *stream, uint32_t from,
                                       const struct specx_start_wait *w)
{
    uint32_t generation = stream->generation;
    move_passed(stream, from);
    wait_for(stream, &stream->detached, generation, w->timeout_ns);
    struct specx_start s = { .detached_ns = specx_now_ns() };
    if (w->snapshot)
        wait_for(stream, &stream->snapshot, generation, w->timeout_ns);
    s.ready = wait_ready(stream, generation, w);
    return s;
}
