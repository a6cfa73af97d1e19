/* Named device configurations (`--preset`), in the units people type on the command line. */
#ifndef SLOWFS_PRESETS_H
#define SLOWFS_PRESETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slowfs/model.h"

/* A device in command-line units: KiB, milliseconds, MB/s (10^6 bytes per second). */
struct slowfs_config {
    unsigned disks;
    enum model_placement placement; /* striped (a disk array) or any (parallel lanes) */
    uint64_t stripe_kb;
    double latency_ms;
    double jitter_pct;
    double bandwidth_mbps;      /* per disk */
    double bus_mbps;            /* shared by all disks; 0 = unlimited */
    double metadata_ms[MODEL_METADATA_OPS]; /* one request of each metadata operation
                                               (enum model_metadata_op); 0 = free */
    uint64_t readdir_entries;   /* entries a listing gets per READDIR request */
    double attr_timeout_s;      /* how long the kernel trusts names and attributes it was
                                   given before it asks again */
    bool priority;              /* serve IDLE-class requests only when a disk is free */
    bool model_writes;          /* writes occupy the disks as reads do; off in every preset,
                                   so programs measured for their reads are not also slowed
                                   by what they write */
    uint64_t seed;              /* jitter generator seed */
};

struct preset {
    const char *name;
    const char *summary;
    struct slowfs_config config;
};

#define PRESET_DEFAULT "paper2003"

/* The table, terminated by an entry whose name is NULL. */
extern const struct preset presets[];

/* The preset called name, or NULL. */
const struct preset *preset_find(const char *name);

/* "striped" or "any", as --placement takes it. */
const char *placement_name(enum model_placement p);

/* Writes "a, b, c" (every preset's name) into buf, for error messages and --help. */
void preset_list(char *buf, size_t size);

/* The device in model units (bytes, seconds, bytes per second). */
struct model_params config_model_params(const struct slowfs_config *c);

#endif
