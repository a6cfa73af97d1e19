/* The history a run leaves (docs/design/history.md): the ranges this run read, in the order it
 * first read them, with the ranges of the old history it did not read this time but may need
 * again (not brought in for nothing twice in a row, their files unchanged). */
#ifndef SPECX_HISTORY_RECORD_H
#define SPECX_HISTORY_RECORD_H

#include <stdint.h>

#include "common/history_trace.h"
#include "run/history/counts.h"
#include "run/history/replay.h"
#include "run/history/store.h"

/* Replays in a row that may bring a range in without the program reading it before it is
 * left out of the history. */
#define HISTORY_UNUSED_RUNS_MAX 2u

struct history_recording {
    const struct history_store *store;
    uint64_t program, key;
    const struct history *old;        /* the command's own old history, or NULL */
    const struct history_plan *plan;  /* its replay in this run */
    const struct specx_trace_header *trace;
    char *const *argv;
    const char *cwd;
    uint64_t run_ns;
};

/* Writes the new history (or removes the old one where nothing is left to keep); fills the
 * recorded_* and saved counts. */
void history_record(const struct history_recording *rec, struct history_counts *c);

#endif
