/* The command line of specx idle: the background command, what it may change, and by when it
 * must be done. */
#ifndef IDLE_OPTIONS_H
#define IDLE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum idle_commit { COMMIT_AUTO, COMMIT_NEVER, COMMIT_ASK };

#define IDLE_MAX_ISOLATE 16

struct idle_options {
    const char *isolate[IDLE_MAX_ISOLATE]; /* --isolate DIR, as given */
    size_t nisolate;
    enum idle_commit commit;
    time_t deadline;        /* 0: none; else when the command is promoted (wall clock) */
    bool net;               /* false with --no-net: no network class of ours */
    const char *net_dev;    /* --net-dev: NULL for the interfaces of the default routes */
    uint64_t net_rate_bps;  /* --net-rate: 0 for no queue of ours */
    uint64_t net_rate_down_bps; /* --net-rate-down: the link's rate in; 0: --net-rate's */
    uint64_t dirty_max_bytes; /* --dirty-max: 0 for no bound */
    bool report;
    const char *json;       /* NULL, "-" for stdout, or a path */
    bool recover;           /* --recover: only finish or drop what killed runs left */
    bool help, version;
    char **argv;            /* the command, NULL-terminated (points into main's argv) */
};

/* Parses argv (getopt_long, stops at "--" or the command's first word); NOW is the wall clock
 * --deadline and --within count from. On bad input returns -1 with a one-line reason (without
 * the program name) in err; otherwise 0. */
int idle_options_parse(int argc, char **argv, time_t now, struct idle_options *out, char *err,
                       size_t errsize);

void idle_options_usage(FILE *out);

/* A point in time, local: "HH:MM[:SS]" today, "YYYY-MM-DD HH:MM[:SS]" (or with a 'T'), or
 * "@SECONDS" since the epoch. False on anything else (pure; unit-tested). */
bool idle_parse_time(const char *s, time_t now, time_t *out);

#endif
