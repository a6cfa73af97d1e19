/* When a process stops making copies for a while, or for good (Fraser & Chang 2003 §6.1:
 * speculation that does not pay is disabled). Pure bookkeeping, kept per process image; the
 * copy's life cycle (copy/copy.c) asks it at each stall and tells it each judged copy.
 *
 * A copy that could not speed anything up is not re-created at once: each creation costs a
 * fork and a sandbox, so after one none of whose predictions the program read (it logged
 * nothing, or only wrong guesses) the next 1, 2, 4 ... 64 stalls pass without a copy (a
 * workload speculation cannot help must not pay for it at every stall). The back-off is kept
 * per file, that of the stall that created the copy: one that was useless at one file says
 * little about another. A PostgreSQL backend reads its catalogs at connection start, where its
 * copies die of the data they could not read (a relation map that fails its checksum), then
 * scans the relations of CREATE INDEX, where they can run ahead: one back-off for both left it
 * no copy at all. A file with no back-off of its own follows the process's, that of the last
 * copy judged anywhere: a program that reads file after file, each once (GNU ld's objects,
 * whose copies die of the header they could not read), would otherwise pay for a new copy at
 * every file.
 *
 * After SPECX_RETIRE_AFTER useless copies in a row the process makes no more (retired): a
 * program whose reads no copy can foresee (the sqlite3 shell checks every page, and its copies
 * die of the garbage they see in place of missing data) must stop paying for copies after a
 * bounded number of stalls, whatever the per-file reprieves (docs/design/read-path.md). */
#ifndef SPECX_POLICY_BACKOFF_H
#define SPECX_POLICY_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

/* Forgets everything: a new process image (start, or a forked child). */
void specx_backoff_reset(void);

/* A stall on file (dev, ino): true if it passes without a copy (backing off, or retired). */
bool specx_backoff_skip(uint64_t dev, uint64_t ino);

/* The copy created at a stall on (dev, ino) was judged: useful if the program read any of its
 * predictions. Returns true when this judgment retires the process's copies. */
bool specx_backoff_judged(uint64_t dev, uint64_t ino, bool useful);

/* A copy judged at a stall: made at a stall on (dev, ino); useful if the program read any of
 * its predictions. */
struct specx_judgment {
    uint64_t dev, ino;
    bool useful;
};

/* What specx_backoff_skip(dev, ino) would answer, once JUDGED (if not NULL) is judged, without
 * judging it or counting the stall: for the decision at a stall (policy/stall.h), taken before
 * anything is done. */
bool specx_backoff_would_skip(uint64_t dev, uint64_t ino, const struct specx_judgment *judged);

/* What a stall on file (dev, ino) does to the back-off once it is decided, in one call: JUDGED
 * (if not NULL) is the copy judged there (specx_backoff_judged), and with PASSES the stall passes
 * without a new copy (specx_backoff_skip, after the judgment). Returns true when the judgment
 * retires the process's copies. */
bool specx_backoff_settle(const struct specx_judgment *judged, uint64_t dev, uint64_t ino,
                          bool passes);

/* Whether the process makes no more copies. */
bool specx_backoff_retired(void);

#endif
