/* The command line of specx slowfs: what to do, and the device to emulate. */
#ifndef SLOWFS_OPTIONS_H
#define SLOWFS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "slowfs/presets.h"

enum slowfs_action {
    ACTION_MOUNT, ACTION_STATS, ACTION_UNMOUNT, ACTION_POWER_CUT, ACTION_HELP, ACTION_VERSION
};

struct slowfs_options {
    enum slowfs_action action;
    const char *preset;          /* name of the preset the device starts from */
    struct slowfs_config device; /* the preset with explicit options applied */
    bool daemonize;              /* -d: return once mounted, serve in the background */
    bool json;                   /* --stats: JSON instead of a table */
    bool count_flushes;          /* answer FLUSH and count it per file (file_counts.h) */
    bool volatile_cache;         /* volatile.h: a write cache that a power cut empties */
    uint64_t power_cut_after;    /* cut after this many changing requests; 0: on demand */
    const char *backing;         /* ACTION_MOUNT */
    const char *mountpoint;      /* every action but help and version */
};

/* Parses argv (getopt_long; argv may be permuted). On bad input returns -1 and writes a
 * one-line reason (without the program name) into err; otherwise returns 0. */
int options_parse(int argc, char **argv, struct slowfs_options *out, char *err, size_t errsize);

/* Usage text for --help. */
void options_usage(FILE *out);

#endif
