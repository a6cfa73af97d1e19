/* The device's statistics and their two renderings: JSON for programs (the bench harness
 * diffs snapshots, so every counter is cumulative) and a table for people. */
#ifndef SLOWFS_STATS_H
#define SLOWFS_STATS_H

#include <stdint.h>
#include <sys/types.h>

#include "slowfs/model.h"
#include "slowfs/presets.h"

/* Data reads of one class. A request's response time (arrival to last byte) is split into
 * service (the modelled service time of the piece that finished last) and queue wait (the
 * rest), so (queue_wait_s + service_s) / requests is the mean response time. */
struct class_stats {
    uint64_t requests;
    uint64_t bytes;
    double queue_wait_s;
    double service_s;
};

struct slowfs_stats {
    struct class_stats classes[2]; /* indexed by enum model_class */
    uint64_t metadata_requests;    /* metadata requests that cost time (model.h) */
    uint64_t metadata_ops[MODEL_METADATA_OPS]; /* the same, per operation */
    double metadata_s;             /* their response time */
    uint64_t write_requests;       /* every write, modelled or not */
    uint64_t write_bytes;
    /* Modelled writes only (0 otherwise), measured as a read class's are: the queue wait
     * (response less service) and the service time. */
    double write_queue_wait_s;
    double write_service_s;
};

/* Everything a rendering shows. */
struct stats_snapshot {
    const char *preset;
    struct slowfs_config config;
    pid_t pid;
    double uptime_s;
    double wake_early_s; /* how early threads ask to wake, to offset timer lateness */
    struct slowfs_stats counters;
    unsigned ndisks;
    const struct model_disk_stats *disks;
};

/* Adds one finished data read to the counters. */
void stats_count_read(struct slowfs_stats *s, enum model_class class, uint64_t bytes,
                      double response_s, double service_s);

/* Adds one finished metadata request of operation op. */
void stats_count_metadata(struct slowfs_stats *s, enum model_metadata_op op, double response_s);

/* Adds one finished write; an unmodelled one has no response or service time (0). */
void stats_count_write(struct slowfs_stats *s, uint64_t bytes, double response_s,
                       double service_s);

/* Renderings as malloc'd strings (NULL if out of memory). */
char *stats_json(const struct stats_snapshot *snap);
char *stats_table(const struct stats_snapshot *snap);

#endif
