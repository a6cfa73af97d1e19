/* What specx idle tells at the end: per resource, how the command was kept to idle capacity
 * and what it got and gave back; a table for people (--report), JSON for tools (--json). */
#ifndef IDLE_REPORT_H
#define IDLE_REPORT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "idle/dirty_bound.h"
#include "idle/groups.h"
#include "idle/memory_yield.h"
#include "idle/net_queue.h"
#include "idle/net_receive.h"
#include "idle/options.h"

struct idle_isolation;

/* The command's network: its sockets' class and the queues it waits in, or why not. */
struct idle_network {
    int prog_fd;                  /* the socket classifier, -1 if none (or no longer) */
    bool classified;              /* its sockets were classified */
    struct idle_net_queue queue;
    struct idle_net_receive receive;
    char why[256];
};

struct idle_run {
    const struct idle_options *opt;
    const struct idle_groups *groups;
    const struct idle_memory *memory;
    const struct idle_dirty *dirty;
    const struct idle_isolation *isolation; /* NULL without --isolate */
    const struct idle_network *network;
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
