/* Whether a process's speculative copies have earned the right to prefetch (Fraser & Chang
 * 2003 §6.1: speculation is judged by what it has already done, and disabled while it does
 * not pay).
 *
 * A copy runs in one of two modes, fixed when it is cloned:
 * - live: every read it would block on becomes a real prefetch (§4.1.2);
 * - dry: the same reads are only written to the prefetch log as predictions, nothing reaches
 *   the disk or the page cache. This is the paper's own suggestion for deciding when to
 *   re-enable a disabled speculative process (end of §6.1): "allow a speculative process to
 *   continue running and issuing prefetch requests, but prevent these requests from reaching
 *   the disk or allocating memory".
 * The program checks each record against its own reads: a record it reads is a hit, one it
 * never reads a miss. Hits and misses decay as the paper's Benefit and Cost estimates do, one
 * step per judged copy. A copy is cloned live only while the estimates show that at least
 * TRUST_ACCURACY of predictions were read; otherwise dry, and a dry copy whose predictions
 * the program keeps reading is replaced by a live one at once (promotion). A program whose
 * reads depend on data the copy cannot have (pointer chasing, SQLite's checked pages) thus
 * never pays for wrong prefetches, and one whose copies predict well loses only the first
 * few stalls of the process. */
#ifndef SPECX_TRUST_H
#define SPECX_TRUST_H

#include <stdbool.h>
#include <stdint.h>

/* A copy's predictions, tallied from the prefetch log. */
struct specx_tally {
    unsigned hits;   /* records the program read */
    unsigned misses; /* records it did not (passed over, or left when the copy ended) */
};

/* A new process image (start, or a forked child): no history. */
void specx_trust_reset(void);

/* Program side: may the next copy start live, on this process's history? */
bool specx_trust_live(void);

/* Program side, before cloning: fixes the mode of the next copy on this process's history
 * (dry unless specx_trust_live); the copy inherits it. Returns whether it is dry. */
bool specx_trust_next_dry(void);

/* Program side: folds an ended copy's tally into this process's estimates, and fixes the mode
 * of the next copy on them as specx_trust_next_dry does (a copy cloned after a judgment needs
 * no other call). Returns whether the next copy is dry. */
bool specx_trust_judge(struct specx_tally t);

/* Program side: would a running dry copy with this tally so far be trusted if it were judged
 * now? Then it is worth replacing by a live one. */
bool specx_trust_earned(struct specx_tally so_far);

/* Speculative side: does this copy only log predictions? */
bool specx_trust_dry(void);

#endif
