/* The replay of a history while the command runs (keeper.h, docs/design/history.md): the
 * plan follows the program's reads in the trace, matching each to the history's ranges (its
 * progress), and brings in the ranges ahead of it. */
#ifndef SPECX_HISTORY_REPLAY_H
#define SPECX_HISTORY_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/history_trace.h"
#include "run/history/counts.h"
#include "run/history/store.h"

/* Start-up reads: what a near history (the same program, other arguments) lends a run. */
#define HISTORY_START_UP_NS (1000ull * 1000000ull)

/* A plan for OLD (nentries 0: nothing to replay, the trace is only followed); NEAR: only its
 * start-up reads. COUNTS receives what it does. NULL if memory runs out. */
struct history_plan *history_plan_new(const struct history *old, bool near,
                                      struct history_counts *counts);
void history_plan_free(struct history_plan *p);
bool history_plan_has_work(const struct history_plan *p);
/* Whether the replay still has ranges to bring in or to judge (while it has, the keeper
 * looks at the trace every few milliseconds; after, only at the command's end). */
bool history_plan_active(const struct history_plan *p);

/* Matches the program's reads noted since the last call; FINAL: the command has ended (take
 * every record that is complete). Ends the control's intervals as they fall due. */
void history_plan_follow(struct history_plan *p, struct specx_trace_header *t, bool final);
/* Brings in the next ranges, as far ahead of the program as pacing and budget allow. */
void history_plan_advance(struct history_plan *p, struct specx_trace_header *t);
/* The command has ended: what was brought in and not read is counted unused. */
void history_plan_finish(struct history_plan *p, struct specx_trace_header *t);

/* Only the program's waits are seen (outside.h), not the reads the replay served: a range
 * unread is no sign of a wrong history, so it is neither judged unused while the program
 * reads none of the history nor aged out of the next one. */
void history_plan_misses_only(struct history_plan *p);

/* For the new history: whether the program read entry I of the old one in this run; whether
 * the replay brought it in and it went unread; whether file F of it has changed since. */
bool history_plan_read(const struct history_plan *p, uint32_t i);
bool history_plan_unread(const struct history_plan *p, uint32_t i);
bool history_plan_stale(const struct history_plan *p, uint32_t f);

#endif
