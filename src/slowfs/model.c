/* Pure device model: striping, per-disk reservations, the shared bus, two request classes.
 * See model.h for the device it describes. */
#include "slowfs/model.h"

#include <math.h>
#include <stdlib.h>

/* A transfer booked on the bus. Idle transfers are recorded with their disk and ticket so a
 * regular transfer that takes their place can push the idle piece's finish. */
struct bus_booking {
    double start, end;
    enum model_class class;
    unsigned disk;
    uint64_t ticket;
};

/* Idle pieces waiting for a disk, in the order they came: each takes the next place, and
 * the one whose place follows the last started is the only one that may start. */
struct idle_queue {
    uint64_t joined, started;
};

struct disk_state {
    double regular_until; /* end of the last regular reservation: regular pieces queue FIFO */
    double idle_finish;   /* finish of the idle piece in service (in the past if none) */
    uint64_t idle_ticket; /* which idle piece that is */
    struct idle_queue idle_queue;
    struct model_disk_stats stats;
};

struct model {
    struct model_params p;
    struct disk_state *disk;
    struct idle_queue any_queue; /* the one queue of MODEL_ANY_DISK pieces */
    struct bus_booking *bus; /* sorted by start, only bookings that have not ended */
    size_t nbus, bus_cap;
    uint64_t next_ticket;
    uint64_t rng;
};

static double max2(double a, double b) { return a > b ? a : b; }
static double min2(double a, double b) { return a < b ? a : b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

unsigned model_split(const struct model_params *p, unsigned first_disk, uint64_t offset,
                     uint64_t len, struct model_piece *out)
{
    if (len > 0 && p->placement == MODEL_ANY) {
        out[0] = (struct model_piece){ .disk = MODEL_ANY_DISK, .bytes = len };
        return 1;
    }
    unsigned n = 0;
    uint64_t end = offset + len;
    while (offset < end) {
        uint64_t unit = offset / p->stripe_bytes;
        uint64_t chunk = min_u64(end, (unit + 1) * p->stripe_bytes) - offset;
        unsigned disk = (unsigned)((first_disk + unit) % p->disks);
        unsigned i = 0;
        while (i < n && out[i].disk != disk)
            i++;
        if (i == n)
            out[n++] = (struct model_piece){ .disk = disk, .bytes = 0 };
        out[i].bytes += chunk;
        offset += chunk;
    }
    return n;
}

struct model *model_new(const struct model_params *params)
{
    struct model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->p = *params;
    m->disk = calloc(params->disks, sizeof *m->disk);
    if (!m->disk) {
        free(m);
        return NULL;
    }
    m->rng = params->seed;
    m->next_ticket = 1;
    return m;
}

void model_free(struct model *m)
{
    if (!m)
        return;
    free(m->disk);
    free(m->bus);
    free(m);
}

const struct model_params *model_params(const struct model *m) { return &m->p; }

struct model_disk_stats model_disk_stats(const struct model *m, unsigned disk)
{
    return m->disk[disk].stats;
}

/* splitmix64: small, fast and seedable, so a run's jitter sequence can be reproduced. */
static uint64_t next_random(struct model *m)
{
    uint64_t z = (m->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double model_latency(struct model *m)
{
    double unit = (double)(next_random(m) >> 11) / (double)(1ull << 53); /* [0, 1) */
    return m->p.latency_s * (1.0 + m->p.jitter_frac * (2.0 * unit - 1.0));
}

/* Forgets bookings that ended before now; they can no longer constrain anything. */
static void bus_prune(struct model *m, double now)
{
    size_t keep = 0;
    for (size_t i = 0; i < m->nbus; i++)
        if (m->bus[i].end > now)
            m->bus[keep++] = m->bus[i];
    m->nbus = keep;
}

/* Earliest start >= ready of a gap of length len among the bookings a transfer of class
 * `class` must respect: a regular transfer sees only regular bookings (idle ones yield). */
static double bus_find_gap(const struct model *m, enum model_class class, double ready,
                           double len)
{
    double t = ready;
    for (size_t i = 0; i < m->nbus; i++) {
        const struct bus_booking *b = &m->bus[i];
        if (class == MODEL_REGULAR && b->class == MODEL_IDLE)
            continue;
        if (b->end <= t)
            continue;
        if (b->start >= t + len)
            break;
        t = b->end;
    }
    return t;
}

/* Out of memory, a booking is dropped: the bus then looks freer than it is, nothing worse. */
static void bus_insert(struct model *m, struct bus_booking b)
{
    if (m->nbus == m->bus_cap) {
        size_t cap = m->bus_cap ? 2 * m->bus_cap : 64;
        struct bus_booking *nb = realloc(m->bus, cap * sizeof *nb);
        if (!nb)
            return;
        m->bus = nb;
        m->bus_cap = cap;
    }
    size_t i = m->nbus;
    while (i > 0 && m->bus[i - 1].start > b.start) {
        m->bus[i] = m->bus[i - 1];
        i--;
    }
    m->bus[i] = b;
    m->nbus++;
}

static bool idle_in_service(const struct disk_state *d, double t) { return d->idle_finish > t; }

static bool free_for_idle(const struct disk_state *d, double now)
{
    return d->regular_until <= now && !idle_in_service(d, now);
}

/* The disk a regular piece placed anywhere should take: the one whose regular queue empties
 * first, and among free ones one without idle work to preempt. */
static unsigned earliest_free_disk(const struct model *m, double now)
{
    unsigned best = 0;
    double best_start = INFINITY;
    bool best_busy = true;
    for (unsigned i = 0; i < m->p.disks; i++) {
        double start = max2(now, m->disk[i].regular_until);
        bool busy = idle_in_service(&m->disk[i], start);
        if (start < best_start || (start == best_start && best_busy && !busy)) {
            best = i;
            best_start = start;
            best_busy = busy;
        }
    }
    return best;
}

/* For an idle piece: a disk free now (returns true), or else the earliest time one may be. */
static bool find_idle_disk(const struct model *m, unsigned *disk, double now, double *retry_at)
{
    const struct disk_state *d;
    if (*disk != MODEL_ANY_DISK) {
        d = &m->disk[*disk];
        *retry_at = max2(d->regular_until, d->idle_finish);
        return free_for_idle(d, now);
    }
    *retry_at = INFINITY;
    for (unsigned i = 0; i < m->p.disks; i++) {
        d = &m->disk[i];
        if (free_for_idle(d, now)) {
            *disk = i;
            return true;
        }
        *retry_at = min2(*retry_at, max2(d->regular_until, d->idle_finish));
    }
    return false;
}

/* Pushes the idle piece of disk `disk` (if it is still the one with `ticket` and still in
 * service after `from`) later by `delay`: regular work took its place. */
static void preempt_idle(struct model *m, unsigned disk, uint64_t ticket, double from,
                         double delay)
{
    struct disk_state *d = &m->disk[disk];
    if (d->idle_ticket == ticket && idle_in_service(d, from))
        d->idle_finish += delay;
}

/* Regular bus transfers displace idle ones: each idle booking they overlap delays its piece
 * by the overlap, so the bus never carries more than its bandwidth for long. The idle piece
 * on the regular piece's own disk is skipped: the disk preemption already delays it fully. */
static void bus_preempt_idle(struct model *m, unsigned disk, double start, double end)
{
    for (size_t i = 0; i < m->nbus; i++) {
        const struct bus_booking *b = &m->bus[i];
        if (b->class != MODEL_IDLE || b->disk == disk || b->end <= start || b->start >= end)
            continue;
        preempt_idle(m, b->disk, b->ticket, start, min2(end, b->end) - max2(start, b->start));
    }
}

/* Times the transfer of a piece whose disk reaches the data at `ready`: the disk streams it
 * at disk_bps while the bus carries it at bus_bps in the first gap the class may use; the
 * piece finishes when both are done. Returns the finish time. */
static double transfer(struct model *m, enum model_class class, unsigned disk, uint64_t ticket,
                       uint64_t bytes, double ready)
{
    double finish = ready + (double)bytes / m->p.disk_bps;
    if (m->p.bus_bps <= 0 || bytes == 0)
        return finish;
    double len = (double)bytes / m->p.bus_bps;
    double start = bus_find_gap(m, class, ready, len);
    if (class == MODEL_REGULAR)
        bus_preempt_idle(m, disk, start, start + len);
    bus_insert(m, (struct bus_booking){ .start = start, .end = start + len, .class = class,
                                        .disk = disk, .ticket = ticket });
    return max2(finish, start + len);
}

static void count(struct disk_state *d, uint64_t bytes, double busy)
{
    d->stats.requests++;
    d->stats.bytes += bytes;
    d->stats.busy_s += busy;
}

struct model_slot model_reserve_regular(struct model *m, unsigned disk, uint64_t bytes,
                                        double latency_s, double now)
{
    if (disk == MODEL_ANY_DISK)
        disk = earliest_free_disk(m, now);
    struct disk_state *d = &m->disk[disk];
    bus_prune(m, now);
    struct model_slot s = { .disk = disk, .start = max2(now, d->regular_until) };
    s.finish = transfer(m, MODEL_REGULAR, disk, 0, bytes, s.start + latency_s);
    s.service = s.finish - s.start;
    d->regular_until = s.finish;
    count(d, bytes, s.service);
    if (idle_in_service(d, s.start)) {
        /* The first regular piece of a burst interrupts the idle one, which must seek back:
         * it pays its access latency again; later pieces of the burst only add their time. */
        double restart = s.start <= now ? m->p.latency_s : 0.0;
        d->idle_finish += s.service + restart;
        d->stats.busy_s += restart;
    }
    return s;
}

bool model_try_start_idle(struct model *m, unsigned disk, uint64_t bytes, double latency_s,
                          double now, struct model_slot *slot, double *retry_at)
{
    if (!find_idle_disk(m, &disk, now, retry_at))
        return false;
    struct disk_state *d = &m->disk[disk];
    bus_prune(m, now);
    uint64_t ticket = m->next_ticket++;
    struct model_slot s = { .disk = disk, .start = now, .ticket = ticket };
    s.finish = transfer(m, MODEL_IDLE, disk, ticket, bytes, now + latency_s);
    s.service = s.finish - s.start;
    d->idle_ticket = ticket;
    d->idle_finish = s.finish;
    count(d, bytes, s.service);
    *slot = s;
    return true;
}

static struct idle_queue *idle_queue_of(struct model *m, unsigned disk)
{
    return disk == MODEL_ANY_DISK ? &m->any_queue : &m->disk[disk].idle_queue;
}

uint64_t model_idle_join(struct model *m, unsigned disk)
{
    return ++idle_queue_of(m, disk)->joined;
}

bool model_try_start_idle_in_turn(struct model *m, unsigned disk, uint64_t place,
                                  uint64_t bytes, double latency_s, double now,
                                  struct model_slot *slot, double *retry_at)
{
    struct idle_queue *q = idle_queue_of(m, disk);
    if (place != q->started + 1) {
        unsigned any = disk;
        find_idle_disk(m, &any, now, retry_at);
        *retry_at = max2(*retry_at, now + MODEL_IDLE_TURN_POLL_S);
        return false;
    }
    if (!model_try_start_idle(m, disk, bytes, latency_s, now, slot, retry_at))
        return false;
    q->started++;
    return true;
}

double model_idle_finish(const struct model *m, const struct model_slot *slot)
{
    const struct disk_state *d = &m->disk[slot->disk];
    /* Another ticket means a later idle piece started, which needs this one to be done. */
    return d->idle_ticket == slot->ticket ? d->idle_finish : slot->finish;
}

static const char *const metadata_names[MODEL_METADATA_OPS] = {
    [MODEL_LOOKUP] = "lookup", [MODEL_OPEN] = "open", [MODEL_READDIR] = "readdir",
    [MODEL_READLINK] = "readlink",
};

const char *model_metadata_name(enum model_metadata_op op) { return metadata_names[op]; }

bool model_metadata_modelled(const struct model_params *p)
{
    for (int op = 0; op < MODEL_METADATA_OPS; op++)
        if (p->metadata_s[op] > 0)
            return true;
    return false;
}

/* Pages that begin before entry `end`: ceil(end / page). */
static uint64_t pages_begun(uint64_t end, uint64_t page) { return end / page + (end % page != 0); }

uint64_t model_readdir_requests(const struct model_params *p, uint64_t from, uint64_t count)
{
    uint64_t page = p->readdir_page ? p->readdir_page : 1;
    return pages_begun(from + count, page) - pages_begun(from, page);
}
