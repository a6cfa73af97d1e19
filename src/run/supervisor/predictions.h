/* The supervisor's prefetch log: what its copy read ahead (or, dry, would have), in the
 * copy's order, and how far the program has come along it. The runtime's log lives in memory
 * the program shares and is consumed by the program's own reads (§4.1.3); the supervisor does
 * not see those, so it infers the program's progress from outside: the bytes the program has
 * read since the clone (/proc/PID/io rchar) against the bytes the copy had read when it made
 * each record (the copy issues the program's reads in the program's order, §4.1.2), and each
 * stall of the program it samples. Pure bookkeeping, unit-tested. */
#ifndef SPECX_PREDICTIONS_H
#define SPECX_PREDICTIONS_H

#include <stdbool.h>
#include <stdint.h>

#define PREDICTIONS_MAX 4096u

struct prediction {
    uint64_t ino, off, len;
    uint64_t copy_read;  /* bytes the copy had read when it made this one */
    uint64_t made_ns;
};

struct prediction_log {
    struct prediction rec[PREDICTIONS_MAX];
    unsigned n;      /* records made */
    unsigned passed; /* the first n the program is known to have reached */
};

void predictions_reset(struct prediction_log *l);

/* Adds a record; false if the log is full (the copy then waits as at its horizon). */
bool predictions_add(struct prediction_log *l, struct prediction p);

/* The program has read PROGRAM_READ bytes since the clone: records the copy made having read
 * no more than that are reached. */
void predictions_pass_read(struct prediction_log *l, uint64_t program_read);

/* The program stalled reading file INO at OFF: true if a record covers it (the program waits
 * for a prefetch in flight, or one a dry copy only predicted), which it has then reached. */
bool predictions_stalled_at(struct prediction_log *l, uint64_t ino, uint64_t off);

/* Records not reached yet, and the age at NOW of the oldest of them (0 if none). */
unsigned predictions_outstanding(const struct prediction_log *l);
uint64_t predictions_oldest_age(const struct prediction_log *l, uint64_t now);

#endif
