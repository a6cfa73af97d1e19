/* specx run's reports: a human table in the spirit of Fraser & Chang 2003, Table 2
 * (--report, on stderr) and the same figures as JSON (--json FILE), per process and in total. */
#ifndef SPECX_RUN_REPORT_H
#define SPECX_RUN_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "run/elf_kind.h"
#include "run/figures.h"
#include "run/history/keeper.h"
#include "run/run_stats.h"

struct run_result {
    char *const *argv;     /* the command */
    int exit_status;       /* when it exited, else -1 */
    int signal;            /* the signal that killed it, else 0 */
    uint64_t elapsed_ns;
    bool speculation;      /* false with --no-spec */
    unsigned horizon;
    bool fast_refork;      /* --refork=fast (= --cow=one-way) */
    bool memory_control;   /* false with --no-memory-control */
    enum elf_kind kind;    /* what the command's executable is (elf_kind.h) */
    struct run_stats stats;
    struct outside_view outside; /* a command the runtime cannot enter, sampled */
    bool supervised;             /* the supervisor speculated (--backend, or auto) */
    struct supervisor_counts supervisor;
    struct history_counts history; /* what history did (keeper.h) */
};

void run_report_table(FILE *out, const struct run_result *r);
void run_report_json(FILE *out, const struct run_result *r);

#endif
