#include "run/runtime/policy/trust.h"

/* Share of a copy's predictions the program must read for copies to prefetch for real: the
 * complement of the 10 % bar on unused speculative prefetches. */
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
    double benefit, cost;
    unsigned hits; /* evidence: predictions read so far, not decayed */
} estimate;
static bool copy_dry;

void specx_trust_reset(void)
{
    estimate.benefit = estimate.cost = 0;
    estimate.hits = 0;
}

static double decayed(double old, unsigned fresh)
{
    return (1.0 - TRUST_ALPHA) * old + TRUST_ALPHA * (double)fresh;
}

/* A copy that predicted nothing (it died of the data it could not read) says nothing about
 * the accuracy of the next one: it does not move the estimates (backoff.c backs off from it). */
bool specx_trust_judge(struct specx_tally t)
{
    if (t.hits + t.misses != 0) {
        estimate.benefit = decayed(estimate.benefit, t.hits);
        estimate.cost = decayed(estimate.cost, t.misses);
        estimate.hits += t.hits;
    }
    return specx_trust_next_dry();
}

static bool trusted(double benefit, double cost, unsigned hits)
{
    return hits >= TRUST_MIN_HITS && benefit > 0 && benefit >= TRUST_ACCURACY * (benefit + cost);
}

bool specx_trust_live(void)
{
    return trusted(estimate.benefit, estimate.cost, estimate.hits);
}

bool specx_trust_earned(struct specx_tally so_far)
{
    if (so_far.hits + so_far.misses == 0)
        return specx_trust_live();
    return trusted(decayed(estimate.benefit, so_far.hits), decayed(estimate.cost, so_far.misses),
                   estimate.hits + so_far.hits);
}

bool specx_trust_next_dry(void)
{
    copy_dry = !specx_trust_live();
    return copy_dry;
}

bool specx_trust_dry(void) { return copy_dry; }
