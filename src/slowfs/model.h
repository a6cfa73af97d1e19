/* The slow storage device slowfs emulates, as pure arithmetic on virtual time.
 *
 * A striped array of independent disks (the paper's file system: four disks, 64 KiB stripe
 * unit, Fraser & Chang 2003 §3) behind a shared bus. Each disk serves one request at a time;
 * a request costs access latency (seek + rotation) plus size / bandwidth, and its data crosses
 * the bus, which has its own bandwidth. Requests come in two classes: regular, and idle (from
 * threads in I/O priority class IDLE, e.g. speculative prefetches).
 *
 * Nothing here reads a clock or sleeps: every function takes "now" (seconds on any monotonic
 * scale) and answers with times, so the device layer (device.c) decides when threads wake and
 * the unit tests check the arithmetic without waiting. The caller serializes calls. */
#ifndef SLOWFS_MODEL_H
#define SLOWFS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>

/* Most disks a device can have: a request never splits into more pieces than this. */
#define MODEL_MAX_DISKS 1024

/* Where a request is served. STRIPED: data lives on disks, so a piece goes to the disk that
 * holds it (a disk array). ANY: every "disk" can serve every request, so a request goes
 * whole to the lane that is free first (a cloud volume's or an object store's parallel
 * request slots). */
enum model_placement { MODEL_STRIPED = 0, MODEL_ANY = 1 };

/* The metadata operations the device charges for, as a network file system or an object store
 * sends them. LOOKUP: a name resolved or its attributes fetched again (NFS LOOKUP or GETATTR,
 * an object store's HEAD). OPEN: an open of a file (NFS close-to-open consistency revalidates
 * the file's attributes with a GETATTR at every open). READDIR: one request per page of
 * entries of a listing (NFS READDIRPLUS, an object store's LIST). READLINK: a symbolic link's
 * target. */
enum model_metadata_op {
    MODEL_LOOKUP = 0, MODEL_OPEN, MODEL_READDIR, MODEL_READLINK, MODEL_METADATA_OPS
};

/* The disk of a piece placed by MODEL_ANY: chosen when it is served. */
#define MODEL_ANY_DISK UINT_MAX

/* Device parameters; times in seconds, bandwidths in bytes per second. */
struct model_params {
    unsigned disks;
    enum model_placement placement;
    uint64_t stripe_bytes;
    double latency_s;          /* average access time: seek + rotation */
    double jitter_frac;        /* latency varies uniformly within ±jitter_frac × latency */
    double disk_bps;           /* media transfer rate of one disk */
    double bus_bps;            /* shared bus; 0 = unlimited */
    double metadata_s[MODEL_METADATA_OPS]; /* cost of one request of each; 0 = free */
    uint64_t readdir_page;     /* entries a listing gets per READDIR request (>= 1) */
    bool priority;             /* false: idle requests are treated as regular ones */
    uint64_t seed;             /* seeds the jitter generator, so runs can be repeated */
};

enum model_class { MODEL_REGULAR = 0, MODEL_IDLE = 1 };

/* One disk's share of a request: a striped file system reads a request's stripe units that
 * live on the same disk as one contiguous transfer there. */
struct model_piece {
    unsigned disk;
    uint64_t bytes;
};

/* Splits the byte range [offset, offset + len) of a file whose stripe unit 0 lives on disk
 * first_disk into at most params->disks pieces, one per disk touched, in the order their first
 * stripe unit appears. With MODEL_ANY placement the request stays whole, as one piece on
 * MODEL_ANY_DISK. Returns the number of pieces written to out (0 when len is 0). */
unsigned model_split(const struct model_params *params, unsigned first_disk, uint64_t offset,
                     uint64_t len, struct model_piece *out);

/* Counters the model keeps per disk (cumulative). */
struct model_disk_stats {
    uint64_t requests;
    uint64_t bytes;
    double busy_s;
};

struct model;

/* Creates a model with the given parameters (copied). Returns NULL if out of memory. */
struct model *model_new(const struct model_params *params);
void model_free(struct model *m);
const struct model_params *model_params(const struct model *m);
struct model_disk_stats model_disk_stats(const struct model *m, unsigned disk);

/* A piece's place on its disk's timeline. */
struct model_slot {
    unsigned disk;
    double start;    /* when the disk starts working on it */
    double service;  /* its own service time (latency + transfer, bus waits included) */
    double finish;   /* when its data has arrived; may move later for idle pieces */
    uint64_t ticket; /* identifies an idle piece's occupancy of the disk */
};

/* Reserves the disk for a regular piece arriving at now (FIFO among regular pieces; on
 * MODEL_ANY_DISK the disk that is free first) and returns its slot; latency_s is its access latency (model_latency() or the metadata
 * latency). A regular piece never waits for idle work: an idle piece in service on that disk
 * is preempted and resumes afterwards, paying its access latency again (Eggert 2002 §2.2.2,
 * "preemptability"). */
struct model_slot model_reserve_regular(struct model *m, unsigned disk, uint64_t bytes,
                                        double latency_s, double now);

/* An idle piece may start only on a disk with no regular piece waiting or in service and no
 * other idle piece in service (prioritization); on MODEL_ANY_DISK, on any such disk. If the
 * disk is free at now, occupies it,
 * fills *slot and returns true; otherwise returns false and sets *retry_at to the earliest
 * time it can be free (ask again then: regular arrivals may push it further). */
bool model_try_start_idle(struct model *m, unsigned disk, uint64_t bytes, double latency_s,
                          double now, struct model_slot *slot, double *retry_at);

/* Idle pieces start in the order they came, as a disk's scheduler serves one queue (a
 * process's idle-class requests under BFQ): a piece joins the queue of its disk (of all lanes
 * for MODEL_ANY_DISK) once, and gets its place. */
uint64_t model_idle_join(struct model *m, unsigned disk);

/* How long a piece whose turn has not come waits before asking again while a disk is free:
 * the piece ahead of it is about to start. */
#define MODEL_IDLE_TURN_POLL_S 50e-6

/* model_try_start_idle() for the piece at PLACE in its queue: false, with *retry_at, until
 * every piece ahead of it has started. */
bool model_try_start_idle_in_turn(struct model *m, unsigned disk, uint64_t place,
                                  uint64_t bytes, double latency_s, double now,
                                  struct model_slot *slot, double *retry_at);

/* The current finish time of an idle piece started with model_try_start_idle(): preemption
 * by regular pieces moves it later, so a waiting thread re-reads it until it has passed. */
double model_idle_finish(const struct model *m, const struct model_slot *slot);

/* Access latency for the next data piece: the configured latency with jitter applied. */
double model_latency(struct model *m);

/* The name of a metadata operation, as the statistics show it ("lookup", ...). */
const char *model_metadata_name(enum model_metadata_op op);

/* Whether any metadata operation costs time on this device. */
bool model_metadata_modelled(const struct model_params *params);

/* READDIR requests a listing makes when it hands out its entries [from, from + count)
 * (counted from the directory's start): one for each page of params->readdir_page entries
 * that begins in that range, so a listing of n entries costs ceil(n / page) requests however
 * the kernel splits its calls. */
uint64_t model_readdir_requests(const struct model_params *params, uint64_t from,
                                uint64_t count);

#endif
