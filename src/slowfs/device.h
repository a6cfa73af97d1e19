/* The emulated device in real time: the model (model.h) behind a lock, a clock, and threads
 * that sleep until their modelled finish. Every FUSE worker thread calls in here. */
#ifndef SLOWFS_DEVICE_H
#define SLOWFS_DEVICE_H

#include <stdint.h>

#include "slowfs/model.h"
#include "slowfs/presets.h"

struct device;

/* Returns NULL if out of memory. preset is the name shown in the statistics. */
struct device *device_new(const struct slowfs_config *config, const char *preset);
void device_free(struct device *dev);

/* Seconds on CLOCK_MONOTONIC: the clock arrival times are taken on. */
double device_now(void);

/* Serves a data read of len bytes at offset of a file whose first stripe unit is on disk
 * first_disk (any number; reduced modulo the disks), issued at arrival by a requester of the
 * given class; returns at the modelled finish. */
void device_read(struct device *dev, uint64_t first_disk, uint64_t offset, uint64_t len,
                 enum model_class class, double arrival);

/* Serves one request of metadata operation op on the disk chosen by key (any free lane on a
 * device placed "any") and returns at its modelled finish; free, and not counted, when the
 * device gives op no cost. */
void device_metadata(struct device *dev, uint64_t key, enum model_metadata_op op,
                     enum model_class class);

/* The device's parameters in model units (fixed for its lifetime). */
const struct model_params *device_params(const struct device *dev);

/* Counts a data write (arguments as for device_read()). With --model-writes it also occupies
 * the disks exactly as a read of the same range would and returns at its modelled finish;
 * without, it costs no time. */
void device_write(struct device *dev, uint64_t first_disk, uint64_t offset, uint64_t len,
                  enum model_class class, double arrival);

/* The statistics, rendered (malloc'd; NULL if out of memory). */
char *device_stats_json(struct device *dev);
char *device_stats_table(struct device *dev);

#endif
