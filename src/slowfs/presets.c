/* The presets. Each is a whole device; explicit options override single values.
 *
 * paper2003 is the testbed of Fraser & Chang 2003 §3: the file system striped over four
 * Ultra SCSI disks with a 64 KiB stripe unit, 12 ms average access time, and 40 MB/s "maximum
 * transfer rate supported by the disks and the SCSI interface" (used for both limits).
 * hdd is one current 7200 rpm disk. cloud-disk is a network block volume: many requests in
 * flight at about 1 ms each, the volume capped at 250 MB/s in total. The local devices serve
 * metadata from the kernel's caches and the file system's own, so it costs nothing, and the
 * kernel keeps what it was told for libfuse's default of 1 s.
 *
 * The two remote devices place requests on any free lane (their parallelism does not depend
 * on where data lives) and charge metadata per request, as docs/design/slowfs.md explains:
 *
 * nfs is an NFS server on a 10 GbE LAN answering from its memory. Every request, data or
 * metadata, is one RPC round trip of 0.2 ms: nct (github.com/beckerg/nct, README) measured
 * 77 µs on average for a 128 KiB NFS READ between two directly connected hosts, one request
 * in flight; a switch hop and a server that does some work for it bring that to the 0.2 ms
 * assumed here. 8 lanes: rpc.nfsd(8) suggests 8 server threads to start with. 1250 MB/s:
 * the line rate of 10 GbE, shared by all lanes. A listing costs one READDIRPLUS per 1000
 * entries: knfsd offers the client replies of up to its maximum block size (FSINFO dtpref,
 * fs/nfsd/nfs3proc.c), which holds thousands of entries with their attributes; 1000 keeps it
 * in line with the object store. Names and attributes are trusted for 60 s: nfs(5) gives
 * acregmin 3 s and acdirmin 30 s, and the client doubles a file's timeout each time it finds
 * the file unchanged, up to acregmax/acdirmax of 60 s, which is where an unchanging tree
 * settles.
 *
 * object-store is an S3-like store read through a FUSE adapter: 30 ms to first byte (AWS,
 * "Best Practices Design Patterns: Optimizing Amazon S3 Performance", timeouts and retries:
 * small requests have median latencies in the tens of milliseconds), 100 MB/s per stream, 64
 * streams, no shared cap that this machine could reach. A lookup is a HEAD (the adapter sends
 * a HEAD and a LIST of the prefix together: one round trip), a listing one LIST per 1000 keys
 * (ListObjectsV2 returns up to 1,000 keys per request), a symbolic link's target a small
 * GET; an open costs nothing, as the lookup already fetched what it needs. Metadata is
 * trusted for 60 s, Mountpoint for Amazon S3's default metadata TTL when it caches (its
 * release 1.7.0). */
#include "slowfs/presets.h"

#include <stdio.h>
#include <string.h>

#define DEVICE(n, place, stripe, lat, bw, bus, ...) \
    { .disks = (n), .placement = (place), .stripe_kb = (stripe), .latency_ms = (lat), .jitter_pct = 0, \
      .bandwidth_mbps = (bw), .bus_mbps = (bus), .priority = true, .model_writes = false, \
      .seed = 1, .readdir_entries = 1000, __VA_ARGS__ }

/* Metadata of a local device: free, and kept by the kernel for libfuse's default time. */
#define LOCAL_METADATA .attr_timeout_s = 1.0

/* Metadata of a remote device: ms per request of each operation, trusted for 60 s. */
#define REMOTE_METADATA(lookup, open, readdir, readlink) \
    .metadata_ms = { [MODEL_LOOKUP] = (lookup), [MODEL_OPEN] = (open), \
                     [MODEL_READDIR] = (readdir), [MODEL_READLINK] = (readlink) }, \
    .attr_timeout_s = 60.0

const struct preset presets[] = {
    { "paper2003", "4 disks, 12 ms, 64 KiB stripe, 40 MB/s bus (Fraser & Chang 2003)",
      DEVICE(4, MODEL_STRIPED, 64, 12.0, 40.0, 40.0, LOCAL_METADATA) },
    { "hdd", "1 disk, 8 ms, 160 MB/s",
      DEVICE(1, MODEL_STRIPED, 64, 8.0, 160.0, 0, LOCAL_METADATA) },
    { "cloud-disk", "16 parallel requests, 1 ms, 250 MB/s in total",
      DEVICE(16, MODEL_ANY, 64, 1.0, 250.0, 250.0, LOCAL_METADATA) },
    { "nfs", "NFS on a 10 GbE LAN: 8 server threads, 0.2 ms per RPC, metadata too",
      DEVICE(8, MODEL_ANY, 64, 0.2, 1250.0, 1250.0, REMOTE_METADATA(0.2, 0.2, 0.2, 0.2)) },
    { "object-store", "64 parallel streams, 30 ms, 100 MB/s each; HEAD and LIST 30 ms",
      DEVICE(64, MODEL_ANY, 64, 30.0, 100.0, 0, REMOTE_METADATA(30.0, 0, 30.0, 30.0)) },
    { NULL, NULL, DEVICE(0, MODEL_STRIPED, 0, 0, 0, 0, LOCAL_METADATA) },
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
    struct model_params p = {
        .disks = c->disks,
        .placement = c->placement,
        .stripe_bytes = c->stripe_kb * 1024,
        .latency_s = c->latency_ms / 1e3,
        .jitter_frac = c->jitter_pct / 100.0,
        .disk_bps = c->bandwidth_mbps * 1e6,
        .bus_bps = c->bus_mbps * 1e6,
        .readdir_page = c->readdir_entries,
        .priority = c->priority,
        .seed = c->seed,
    };
    for (int op = 0; op < MODEL_METADATA_OPS; op++)
        p.metadata_s[op] = c->metadata_ms[op] / 1e3;
    return p;
}
