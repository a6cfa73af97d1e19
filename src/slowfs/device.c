/* The device in real time. A regular request reserves its pieces' slots at once (FIFO per
 * disk) and its thread sleeps until the last finishes. An idle request waits for each disk
 * to be free before occupying it and may be pushed back by regular arrivals, so its thread
 * re-reads its finish until it has passed.
 *
 * Threads sleep on absolute CLOCK_MONOTONIC times (main.c sets a 1 ns timer slack), yet
 * wake late: 50-150 µs on these virtual machines, more under load, which is 5-15 % of a
 * 1 ms cloud-disk read. So the device tracks the median lateness of its wake-ups and asks
 * to wake that much early: readers then see the modelled times, late by a median of zero.
 * The median (not the mean) keeps a burst of scheduling delays from making the device
 * faster than its model. */
#include "slowfs/device.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "slowfs/stats.h"

struct device {
    pthread_mutex_t lock; /* guards model and counters */
    struct model *model;
    struct slowfs_stats counters;
    struct slowfs_config config;
    const char *preset;
    double started;
    double wake_early; /* running median of wake-up lateness: sleeps end this much early */
};

/* The median tracker's step: it moves by this much per wake-up towards the median. */
#define WAKE_STEP 1e-6

double device_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
    struct timespec ts = { .tv_sec = (time_t)t };
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

struct device *device_new(const struct slowfs_config *config, const char *preset)
{
    struct device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return NULL;
    struct model_params params = config_model_params(config);
    dev->model = model_new(&params);
    if (!dev->model) {
        free(dev);
        return NULL;
    }
    pthread_mutex_init(&dev->lock, NULL);
    dev->config = *config;
    dev->preset = preset;
    dev->started = device_now();
    return dev;
}

void device_free(struct device *dev)
{
    if (!dev)
        return;
    model_free(dev->model);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

static double dev_wake_early(struct device *dev)
{
    pthread_mutex_lock(&dev->lock);
    double early = dev->wake_early;
    pthread_mutex_unlock(&dev->lock);
    return early;
}

/* Sleeps until modelled time t (compensated), then moves the lateness estimate one step
 * towards this wake-up's lateness: a stochastic median that outliers cannot drag far. */
static void sleep_until_modelled(struct device *dev, double t)
{
    double target = t - dev_wake_early(dev);
    if (device_now() >= target)
        return; /* nothing to wait for, and nothing learnt about wake-ups */
    sleep_until(target);
    double late = device_now() - target;
    pthread_mutex_lock(&dev->lock);
    if (late > dev->wake_early)
        dev->wake_early += WAKE_STEP;
    else if (dev->wake_early >= WAKE_STEP)
        dev->wake_early -= WAKE_STEP;
    pthread_mutex_unlock(&dev->lock);
}

/* The piece that finishes last decides the response; its service time is the request's. */
struct outcome {
    double finish;
    double service;
};

static void take_latest(struct outcome *o, double finish, double service)
{
    if (finish >= o->finish) {
        o->finish = finish;
        o->service = service;
    }
}

/* What a request is: a data transfer, or else one request of a metadata operation
 * (enum model_metadata_op). */
#define DATA_REQUEST (-1)

/* Access latency of the next piece; the caller holds the lock (the jitter generator). */
static double piece_latency(struct device *dev, int kind)
{
    return kind == DATA_REQUEST ? model_latency(dev->model)
                                : model_params(dev->model)->metadata_s[kind];
}

static struct outcome serve_regular(struct device *dev, const struct model_piece *pieces,
                                    unsigned n, int kind, double arrival)
{
    struct outcome o = { 0 };
    pthread_mutex_lock(&dev->lock);
    for (unsigned i = 0; i < n; i++) {
        struct model_slot s = model_reserve_regular(dev->model, pieces[i].disk, pieces[i].bytes,
                                                    piece_latency(dev, kind), arrival);
        take_latest(&o, s.finish, s.service);
    }
    pthread_mutex_unlock(&dev->lock);
    sleep_until_modelled(dev, o.finish);
    return o;
}

/* Occupies the piece's disk as soon as it is free of other work (prioritization) and the
 * idle pieces that came before it have started. */
static struct model_slot start_idle_piece(struct device *dev, const struct model_piece *piece,
                                          int kind)
{
    struct model_slot slot;
    pthread_mutex_lock(&dev->lock);
    uint64_t place = model_idle_join(dev->model, piece->disk);
    pthread_mutex_unlock(&dev->lock);
    for (;;) {
        double retry_at;
        pthread_mutex_lock(&dev->lock);
        bool started = model_try_start_idle_in_turn(dev->model, piece->disk, place, piece->bytes,
                                                    piece_latency(dev, kind), device_now(),
                                                    &slot, &retry_at);
        pthread_mutex_unlock(&dev->lock);
        if (started)
            return slot;
        sleep_until(retry_at);
    }
}

static struct outcome serve_idle(struct device *dev, const struct model_piece *pieces,
                                 unsigned n, int kind)
{
    struct model_slot slots[MODEL_MAX_DISKS];
    for (unsigned i = 0; i < n; i++)
        slots[i] = start_idle_piece(dev, &pieces[i], kind);
    /* Regular arrivals may push the pieces back (preemption): wait until all are done. */
    for (;;) {
        struct outcome o = { 0 };
        pthread_mutex_lock(&dev->lock);
        for (unsigned i = 0; i < n; i++)
            take_latest(&o, model_idle_finish(dev->model, &slots[i]), slots[i].service);
        pthread_mutex_unlock(&dev->lock);
        if (device_now() >= o.finish - dev_wake_early(dev))
            return o;
        sleep_until_modelled(dev, o.finish);
    }
}

/* Serves the pieces in the requester's class and returns when the last one is done. */
static struct outcome serve(struct device *dev, const struct model_piece *pieces, unsigned n,
                            int kind, enum model_class class, double arrival)
{
    if (class == MODEL_IDLE)
        return serve_idle(dev, pieces, n, kind);
    return serve_regular(dev, pieces, n, kind, arrival);
}

/* Without --no-priority, the class as given; with it, everyone is regular. */
static enum model_class effective_class(const struct device *dev, enum model_class class)
{
    return model_params(dev->model)->priority ? class : MODEL_REGULAR;
}

/* Serves len (> 0) bytes at offset of a file on the disks that hold them. Reads and modelled
 * writes both come here, so they share the disks' timelines and queue behind each other, as
 * on a real disk. */
static struct outcome serve_range(struct device *dev, uint64_t first_disk, uint64_t offset,
                                  uint64_t len, enum model_class class, double arrival)
{
    const struct model_params *p = model_params(dev->model);
    struct model_piece pieces[MODEL_MAX_DISKS];
    unsigned n = model_split(p, (unsigned)(first_disk % p->disks), offset, len, pieces);
    return serve(dev, pieces, n, DATA_REQUEST, class, arrival);
}

void device_read(struct device *dev, uint64_t first_disk, uint64_t offset, uint64_t len,
                 enum model_class class, double arrival)
{
    if (len == 0)
        return; /* a read at the end of the file: no data, no request */
    class = effective_class(dev, class);
    struct outcome o = serve_range(dev, first_disk, offset, len, class, arrival);
    pthread_mutex_lock(&dev->lock);
    stats_count_read(&dev->counters, class, len, o.finish - arrival, o.service);
    pthread_mutex_unlock(&dev->lock);
}

void device_metadata(struct device *dev, uint64_t key, enum model_metadata_op op,
                     enum model_class class)
{
    const struct model_params *p = model_params(dev->model);
    if (p->metadata_s[op] <= 0)
        return;
    double arrival = device_now();
    unsigned disk = p->placement == MODEL_ANY ? MODEL_ANY_DISK : (unsigned)(key % p->disks);
    struct model_piece piece = { .disk = disk, .bytes = 0 };
    struct outcome o = serve(dev, &piece, 1, (int)op, effective_class(dev, class), arrival);
    pthread_mutex_lock(&dev->lock);
    stats_count_metadata(&dev->counters, op, o.finish - arrival);
    pthread_mutex_unlock(&dev->lock);
}

const struct model_params *device_params(const struct device *dev)
{
    return model_params(dev->model);
}

void device_write(struct device *dev, uint64_t first_disk, uint64_t offset, uint64_t len,
                  enum model_class class, double arrival)
{
    struct outcome o = { .finish = arrival }; /* unmodelled: done on arrival, no service */
    if (dev->config.model_writes && len > 0)
        o = serve_range(dev, first_disk, offset, len, effective_class(dev, class), arrival);
    pthread_mutex_lock(&dev->lock);
    stats_count_write(&dev->counters, len, o.finish - arrival, o.service);
    pthread_mutex_unlock(&dev->lock);
}

/* Renders a consistent snapshot: counters and per-disk figures copied under the lock. */
static char *render(struct device *dev, char *(*format)(const struct stats_snapshot *))
{
    struct model_disk_stats disks[MODEL_MAX_DISKS];
    struct stats_snapshot snap = {
        .preset = dev->preset,
        .config = dev->config,
        .pid = getpid(),
        .ndisks = dev->config.disks,
        .disks = disks,
    };
    pthread_mutex_lock(&dev->lock);
    snap.uptime_s = device_now() - dev->started;
    snap.counters = dev->counters;
    snap.wake_early_s = dev->wake_early;
    for (unsigned i = 0; i < snap.ndisks; i++)
        disks[i] = model_disk_stats(dev->model, i);
    pthread_mutex_unlock(&dev->lock);
    return format(&snap);
}

char *device_stats_json(struct device *dev) { return render(dev, stats_json); }
char *device_stats_table(struct device *dev) { return render(dev, stats_table); }
