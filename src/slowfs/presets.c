/* The presets. Each is a whole device; explicit options override single values.
 *
 * paper2003 is the testbed of Fraser & Chang 2003 §3: the file system striped over four
 * Ultra SCSI disks with a 64 KiB stripe unit, 12 ms average access time, and 40 MB/s "maximum
 * transfer rate supported by the disks and the SCSI interface" (used for both limits).
 * hdd is one current 7200 rpm disk. cloud-disk is a network block volume: many requests in
 * flight at about 1 ms each, the volume capped at 250 MB/s in total. object-store is an
 * S3-like store read through a FUSE adapter: 30 ms to first byte, 100 MB/s per stream, 64
 * streams, no shared cap that this machine could reach. The two remote devices place
 * requests on any free lane: their parallelism does not depend on where data lives. */
#include "slowfs/presets.h"

#include <stdio.h>
#include <string.h>

#define DEVICE(n, place, stripe, lat, bw, bus) \
    { .disks = (n), .placement = (place), .stripe_kb = (stripe), .latency_ms = (lat), .jitter_pct = 0, \
      .bandwidth_mbps = (bw), .bus_mbps = (bus), .metadata_latency_ms = 0, .priority = true, \
      .model_writes = false, .seed = 1 }

const struct preset presets[] = {
    { "paper2003", "4 disks, 12 ms, 64 KiB stripe, 40 MB/s bus (Fraser & Chang 2003)",
      DEVICE(4, MODEL_STRIPED, 64, 12.0, 40.0, 40.0) },
    { "hdd", "1 disk, 8 ms, 160 MB/s", DEVICE(1, MODEL_STRIPED, 64, 8.0, 160.0, 0) },
    { "cloud-disk", "16 parallel requests, 1 ms, 250 MB/s in total",
      DEVICE(16, MODEL_ANY, 64, 1.0, 250.0, 250.0) },
    { "object-store", "64 parallel streams, 30 ms, 100 MB/s each",
      DEVICE(64, MODEL_ANY, 64, 30.0, 100.0, 0) },
    { NULL, NULL, DEVICE(0, MODEL_STRIPED, 0, 0, 0, 0) },
};

const struct preset *preset_find(const char *name)
{
    for (const struct preset *p = presets; p->name; p++)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

const char *placement_name(enum model_placement p)
{
    return p == MODEL_ANY ? "any" : "striped";
}

void preset_list(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const struct preset *p = presets; p->name && used < size; p++) {
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", p->name);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

struct model_params config_model_params(const struct slowfs_config *c)
{
    return (struct model_params){
        .disks = c->disks,
        .placement = c->placement,
        .stripe_bytes = c->stripe_kb * 1024,
        .latency_s = c->latency_ms / 1e3,
        .jitter_frac = c->jitter_pct / 100.0,
        .disk_bps = c->bandwidth_mbps * 1e6,
        .bus_bps = c->bus_mbps * 1e6,
        .metadata_latency_s = c->metadata_latency_ms / 1e3,
        .priority = c->priority,
        .seed = c->seed,
    };
}
