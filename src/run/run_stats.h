/* What specx-run learns from the statistics file when the command has ended. */
#ifndef SPECX_RUN_STATS_H
#define SPECX_RUN_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/stats_layout.h"

struct run_stats {
    struct specx_stats_slot *procs; /* one per program image that ran with the runtime */
    size_t nprocs;
    uint32_t lost;                  /* processes that found the file full */
    struct specx_stats_slot total;  /* counters summed over procs */
};

/* Creates a statistics file in a new private directory (first removing those of dead runs);
 * path receives its name. Returns a descriptor to keep open until run_stats_remove: its lock
 * tells the other runs' sweeps that this run lives. -1 on error. */
int run_stats_create(char *path, size_t size);
/* Reads it (a snapshot: leftover processes may still be counting). */
int run_stats_load(const char *path, struct run_stats *out);
/* Removes the file and its directory, then closes FD, run_stats_create's descriptor. */
void run_stats_remove(const char *path, int fd);
void run_stats_free(struct run_stats *s);

/* Derived figures of Table 2. */
uint64_t run_stats_unused(const struct specx_stats_slot *s);
/* Share of used prefetches that were complete when the program asked, or -1 if none. */
double run_stats_complete_share(const struct specx_stats_slot *s);

/* Table 3: share of reforks completed, mean refork time and mean wait for the new copy's
 * sandbox (seconds), per attempt; -1 when there was none. */
double run_stats_refork_completed_share(const struct specx_stats_slot *s);
double run_stats_refork_mean(const struct specx_stats_slot *s);
double run_stats_refork_wait_mean(const struct specx_stats_slot *s);

#endif
