/* What specx idle tells at the end: per resource, how the command was kept to idle capacity
 * and what it got and gave back; a table for people (--report), JSON for tools (--json). */
#ifndef IDLE_REPORT_H
#define IDLE_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "idle/figures.h"
#include "idle/options.h"

struct idle_run {
    const struct idle_options *opt;
    const char *cpu_setting;   /* what the CPU group does (groups.h), or NULL */
    struct idle_memory_figures memory;
    struct idle_dirty_figures dirty;
    struct idle_network_figures network;
    const struct idle_isolation_figures *isolation; /* NULL without --isolate */
    struct rusage usage;       /* of the command and the descendants it waited for */
    double elapsed_s;
    int exit_code;             /* what specx idle exits with */
    int command_status;        /* the command's wait status */
    bool interrupted;
    time_t promoted_at;        /* 0: the deadline did not come (or there was none) */
    unsigned promoted_threads;
};

void idle_report_table(FILE *out, const struct idle_run *run);
/* Returns 0, or -1 with errno if FILE cannot be written. */
int idle_report_json(const char *file, const struct idle_run *run);

#endif
