#include "trust.h"

#include "control.h"
#include "runtime.h"

/* Share of a copy's predictions the program must read for copies to prefetch for real: the
 * complement of issue 3's 10 % bar on unused speculative prefetches. */
#define TRUST_ACCURACY 0.9
/* Weight of the newest copy in the estimates (the paper's alpha, §6.1): history halves at
 * each judged copy, so a program whose phases differ (PostgreSQL's catalog reads, where
 * copies die, then its index builds, where they run ahead) is trusted again within a few
 * copies. */
#define TRUST_ALPHA 0.5
/* Predictions the program must have read in this process before copies prefetch for real:
 * one could be chance (a pointer-chasing copy that re-reads the block it stalled on). */
#define TRUST_MIN_HITS 2u

static struct {
    pid_t owner; /* a forked child starts with no history */
    double benefit, cost;
    unsigned hits; /* evidence: predictions read so far, not decayed */
} estimate;
static bool copy_dry;

static void own_estimate(void)
{
    if (estimate.owner != specx.pid) {
        estimate.benefit = estimate.cost = 0;
        estimate.hits = 0;
        estimate.owner = specx.pid;
    }
}

/* The first of the records [from, issued) still in the ring: only a copy's newest
 * SPECX_LOG_SIZE records are tallied, the older ones are overwritten. */
static uint32_t first_live_record(uint32_t from, uint32_t issued)
{
    return issued - from > SPECX_LOG_SIZE ? issued - SPECX_LOG_SIZE : from;
}

struct specx_tally specx_trust_tally(const struct specx_control *ctl, uint32_t from,
                                     bool only_passed)
{
    uint32_t issued = __atomic_load_n(&ctl->issued, __ATOMIC_ACQUIRE);
    uint32_t passed = __atomic_load_n(&ctl->passed, __ATOMIC_ACQUIRE);
    struct specx_tally t = { 0, 0 };
    for (uint32_t seq = first_live_record(from, issued); seq != issued; seq++) {
        const struct specx_prefetch_record *rec = &ctl->log[seq % SPECX_LOG_SIZE];
        if (rec->seq != seq)
            continue;
        if (__atomic_load_n(&rec->consumed, __ATOMIC_RELAXED))
            t.hits++;
        else if (!only_passed || seq < passed)
            t.misses++;
    }
    return t;
}

bool specx_trust_predicted(const struct specx_control *ctl, uint32_t from, uint64_t dev,
                           uint64_t ino, uint64_t off, uint64_t len)
{
    uint32_t issued = __atomic_load_n(&ctl->issued, __ATOMIC_ACQUIRE);
    for (uint32_t seq = first_live_record(from, issued); seq != issued; seq++) {
        const struct specx_prefetch_record *rec = &ctl->log[seq % SPECX_LOG_SIZE];
        if (rec->seq == seq && rec->consumed && rec->dev == dev && rec->ino == ino &&
            rec->off < off + len && off < rec->off + rec->len)
            return true;
    }
    return false;
}

bool specx_trust_pending(const struct specx_control *ctl, uint64_t dev, uint64_t ino,
                         uint64_t off, uint64_t len)
{
    uint32_t issued = __atomic_load_n(&ctl->issued, __ATOMIC_ACQUIRE);
    uint32_t passed = __atomic_load_n(&ctl->passed, __ATOMIC_ACQUIRE);
    for (uint32_t seq = first_live_record(passed, issued); seq != issued; seq++) {
        const struct specx_prefetch_record *rec = &ctl->log[seq % SPECX_LOG_SIZE];
        if (rec->seq == seq && !__atomic_load_n(&rec->consumed, __ATOMIC_RELAXED) &&
            rec->dev == dev && rec->ino == ino && rec->off <= off &&
            off + len <= rec->off + rec->len)
            return true;
    }
    return false;
}

static double decayed(double old, unsigned fresh)
{
    return (1.0 - TRUST_ALPHA) * old + TRUST_ALPHA * (double)fresh;
}

/* A copy that predicted nothing (it died of the data it could not read) says nothing about
 * the accuracy of the next one: it does not move the estimates (spec.c backs off from it). */
void specx_trust_judge(struct specx_tally t)
{
    own_estimate();
    if (t.hits + t.misses == 0)
        return;
    estimate.benefit = decayed(estimate.benefit, t.hits);
    estimate.cost = decayed(estimate.cost, t.misses);
    estimate.hits += t.hits;
}

static bool trusted(double benefit, double cost, unsigned hits)
{
    return hits >= TRUST_MIN_HITS && benefit > 0 && benefit >= TRUST_ACCURACY * (benefit + cost);
}

bool specx_trust_live(void)
{
    own_estimate();
    return trusted(estimate.benefit, estimate.cost, estimate.hits);
}

bool specx_trust_earned(struct specx_tally so_far)
{
    own_estimate();
    if (so_far.hits + so_far.misses == 0)
        return specx_trust_live();
    return trusted(decayed(estimate.benefit, so_far.hits), decayed(estimate.cost, so_far.misses),
                   estimate.hits + so_far.hits);
}

void specx_trust_set_dry(bool dry) { copy_dry = dry; }

bool specx_trust_dry(void) { return copy_dry; }
