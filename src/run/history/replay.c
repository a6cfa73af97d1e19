/* See replay.h. */
#include "run/history/replay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "kernel/memcg.h"
#include "kernel/raw.h"
#include "kernel/residency.h"
#include "run/runtime/policy/lazy_budget.h"
#include "run/runtime/policy/memory_control.h"

/* How far ahead of the program the replay may run: this many ranges past the last one it
 * read, or what it first read this long after the point in time it has reached. */
#define AHEAD_ENTRIES 256u
#define AHEAD_NS (500ull * 1000000ull)
/* A range brought in counts as unused for the control once the program has gone this many
 * ranges past it without reading it, or, while the program reads none of the history (a
 * wrong one: another command's, other inputs), once it has waited this long. It may still
 * be read later, and then counts as used too. */
#define PASSED_BEHIND 64u
#define ASTRAY_NS (2000ull * 1000000ull)
/* Prefetches are issued in pieces of at most this (one call reads at most read_ahead_kb and
 * drops the rest; docs/design/read-path.md). */
#define CHUNK (128u * 1024u)
/* The control's interval, as the memory control's (memory-control.md). */
#define INTERVAL_NS (500ull * 1000000ull)
/* Bytes issued per tick at most, so that one tick never holds the keeper long. */
#define ISSUE_PER_TICK (8u * 1024u * 1024u)
/* Matched lengths rechecked each tick: the newest records, which may still grow. */
#define RECHECK 64u

/* ASKED: brought in where the kernel hides whether it was in memory: neither counted as
 * brought in nor judged. */
enum state { PENDING, CACHED, PREFETCHED, ASKED, SKIPPED };

struct plan_entry {
    uint8_t state;
    bool read, passed;
    uint64_t brought_ns; /* when it was brought in */
};

struct plan_file {
    bool stale;
};

struct history_plan {
    const struct history *h;
    struct history_counts *c;
    uint32_t n;                /* entries replayed: all, or a near history's start-up */
    struct plan_entry *e;
    struct plan_file *f;
    uint32_t *by_file;         /* entry indices by file, then offset */
    uint32_t *file_first;      /* where each file's run in by_file starts (nfiles + 1) */
    uint32_t *table;           /* open addressing: file index + 1 by dev and ino */
    uint32_t table_size;
    uint32_t next, progress, pass_cursor;
    uint64_t progress_t_ns;    /* the history's time at the program's progress */
    uint64_t last_read_ns;     /* when the program last read a range of the history */
    uint64_t outstanding, budget;
    uint32_t consumed;
    uint64_t *matched_len;     /* per trace record: how much of it was matched */
    struct specx_memctl ctl;
    uint64_t interval_end, used_pages, unused_pages;
    bool misses_only;          /* only the program's waits are seen (history_plan_misses_only) */
    int fd;
    uint32_t fd_file;
};

static uint32_t slot_of(uint64_t dev, uint64_t ino, uint32_t size)
{
    return (uint32_t)(((dev * 0x9e3779b97f4a7c15ull) ^ (ino * 0xff51afd7ed558ccdull)) >> 20) &
           (size - 1);
}

static void index_file(struct history_plan *p, uint32_t f)
{
    const struct history_file *file = &p->h->files[f];
    for (uint32_t s = slot_of(file->dev, file->ino, p->table_size);; s = (s + 1) &
                                                                      (p->table_size - 1))
        if (!p->table[s]) {
            p->table[s] = f + 1;
            return;
        }
}

static int lookup(const struct history_plan *p, uint64_t dev, uint64_t ino)
{
    for (uint32_t s = slot_of(dev, ino, p->table_size);; s = (s + 1) & (p->table_size - 1)) {
        uint32_t v = p->table[s];
        if (!v)
            return -1;
        if (p->h->files[v - 1].dev == dev && p->h->files[v - 1].ino == ino)
            return (int)v - 1;
    }
}

static int by_file_then_offset(const void *a, const void *b, void *history)
{
    const struct history *h = history;
    const struct history_entry *x = &h->entries[*(const uint32_t *)a];
    const struct history_entry *y = &h->entries[*(const uint32_t *)b];
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

static bool build_index(struct history_plan *p)
{
    const struct history *h = p->h;
    p->table_size = 16;
    while (p->table_size < 2 * h->nfiles)
        p->table_size *= 2;
    p->table = calloc(p->table_size, sizeof *p->table);
    p->by_file = malloc((p->n + 1) * sizeof *p->by_file);
    p->file_first = calloc(h->nfiles + 1, sizeof *p->file_first);
    if (!p->table || !p->by_file || !p->file_first)
        return false;
    for (uint32_t f = 0; f < h->nfiles; f++)
        index_file(p, f);
    for (uint32_t i = 0; i < p->n; i++)
        p->by_file[i] = i;
    qsort_r(p->by_file, p->n, sizeof *p->by_file, by_file_then_offset, (void *)h);
    for (uint32_t i = 0, f = 0; f <= h->nfiles; f++) {
        while (i < p->n && h->entries[p->by_file[i]].file < f)
            i++;
        p->file_first[f] = i;
    }
    return true;
}

/* Of a near history, the ranges its run first read in its start-up. */
static uint32_t start_up_of(const struct history *h)
{
    uint32_t n = 0;
    while (n < h->nentries && h->entries[n].t_ns < HISTORY_START_UP_NS)
        n++;
    return n;
}

static uint64_t group_budget(void)
{
    struct specx_cgroup cg;
    uint64_t limit = specx_memcg_limiting(0, &cg) == 0 ? specx_memcg_limit(&cg) : 0;
    return specx_lazy_budget_of((unsigned long)limit);
}

struct history_plan *history_plan_new(const struct history *old, bool near,
                                      struct history_counts *counts)
{
    struct history_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    *p = (struct history_plan){ .h = old, .c = counts, .fd = -1,
                                .n = near ? start_up_of(old) : old->nentries };
    p->e = calloc(p->n + 1, sizeof *p->e);
    p->f = calloc(old->nfiles + 1, sizeof *p->f);
    p->matched_len = calloc(SPECX_TRACE_MAX_READS, sizeof *p->matched_len);
    if (!p->e || !p->f || !p->matched_len || !build_index(p)) {
        history_plan_free(p);
        return NULL;
    }
    p->budget = group_budget();
    p->last_read_ns = specx_now_ns();
    specx_memctl_init(&p->ctl);
    counts->replayed = p->n > 0;
    counts->entries = p->n;
    counts->files = old->nfiles;
    return p;
}

void history_plan_free(struct history_plan *p)
{
    if (!p)
        return;
    if (p->fd >= 0)
        close(p->fd);
    free(p->e);
    free(p->f);
    free(p->by_file);
    free(p->file_first);
    free(p->table);
    free(p->matched_len);
    free(p);
}

bool history_plan_has_work(const struct history_plan *p)
{
    return p && p->n > 0;
}

/* Done: every range brought in, found in memory, skipped, read, or judged unused; or stopped. */
static bool done(const struct history_plan *p)
{
    return p->c->stopped || (p->next == p->n && p->pass_cursor == p->n);
}

bool history_plan_active(const struct history_plan *p)
{
    return history_plan_has_work(p) && !done(p);
}

/* ---- following the program ---- */

static void read_entry(struct history_plan *p, uint32_t i, bool waited)
{
    struct plan_entry *e = &p->e[i];
    if (e->read)
        return;
    e->read = true;
    p->last_read_ns = specx_now_ns();
    const struct history_entry *he = &p->h->entries[i];
    if (i > p->progress || p->progress_t_ns == 0) {
        p->progress = i > p->progress ? i : p->progress;
        p->progress_t_ns = p->h->entries[p->progress].t_ns;
    }
    if (e->state != PREFETCHED)
        return;
    p->c->used_bytes += he->len;
    p->used_pages += specx_pages_spanned(he->off, he->len);
    if (!e->passed)
        p->outstanding -= he->len < p->outstanding ? he->len : p->outstanding;
    if (waited)
        p->c->late_reads++;
    else
        p->c->served_reads++;
}

/* The program read [off, end) of file (dev, ino): the history's ranges it overlaps. */
static void match(struct history_plan *p, const struct specx_trace_read *r, uint64_t off,
                  uint64_t end)
{
    int f = lookup(p, r->dev, r->ino);
    if (f < 0 || off >= end)
        return;
    uint32_t lo = p->file_first[f], hi = p->file_first[f + 1];
    /* The first range of the file that ends past OFF: ranges of one file do not overlap. */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const struct history_entry *e = &p->h->entries[p->by_file[mid]];
        if (e->off + e->len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t k = lo; k < p->file_first[f + 1]; k++) {
        uint32_t i = p->by_file[k];
        if (p->h->entries[i].off >= end)
            break;
        read_entry(p, i, __atomic_load_n(&r->flags, __ATOMIC_RELAXED) & SPECX_TRACE_MISS);
    }
}

/* Matches what record I has grown by since it was last matched. */
static void match_growth(struct history_plan *p, struct specx_trace_header *t, uint32_t i)
{
    struct specx_trace_read *r = &specx_trace_reads(t)[i];
    uint64_t len = __atomic_load_n(&r->len, __ATOMIC_RELAXED);
    if (len > p->matched_len[i]) {
        match(p, r, r->off + p->matched_len[i], r->off + len);
        p->matched_len[i] = len;
    }
}

/* Ranges brought in that the program has gone well past without reading, or waited for too
 * long while it read nothing of the history. Ranges are brought in in order, so the first
 * that is neither ends the search. */
static void count_passed(struct history_plan *p)
{
    uint64_t now = specx_now_ns();
    bool astray = !p->misses_only && now - p->last_read_ns > ASTRAY_NS;
    for (; p->pass_cursor < p->next; p->pass_cursor++) {
        struct plan_entry *e = &p->e[p->pass_cursor];
        bool behind = p->pass_cursor + PASSED_BEHIND < p->progress;
        bool waited = e->state == PREFETCHED && now - e->brought_ns > ASTRAY_NS;
        if (!behind && !(astray && waited) && e->state == PREFETCHED && !e->read)
            break;
        if (e->state != PREFETCHED || e->read || e->passed)
            continue;
        e->passed = true;
        const struct history_entry *he = &p->h->entries[p->pass_cursor];
        p->unused_pages += specx_pages_spanned(he->off, he->len);
        p->outstanding -= he->len < p->outstanding ? he->len : p->outstanding;
    }
}

/* The §6.1 control, judging the replay as it judges copies: pages read against pages
 * brought in for nothing, per interval; once the overhead crosses its threshold the replay
 * stops for the rest of the run (a history that does not fit this run will not start to). */
static void end_interval_if_due(struct history_plan *p)
{
    uint64_t now = specx_now_ns();
    if (!p->interval_end)
        p->interval_end = now + INTERVAL_NS;
    if (now < p->interval_end || p->c->stopped)
        return;
    p->interval_end = now + INTERVAL_NS;
    if (specx_memctl_end_interval(&p->ctl, p->unused_pages, p->used_pages) ==
        SPECX_MEMCTL_DISABLE)
        p->c->stopped = true;
    p->used_pages = p->unused_pages = 0;
}

void history_plan_follow(struct history_plan *p, struct specx_trace_header *t, bool final)
{
    if (!p)
        return;
    uint32_t claimed = __atomic_load_n(&t->reads, __ATOMIC_RELAXED);
    if (claimed > SPECX_TRACE_MAX_READS)
        claimed = SPECX_TRACE_MAX_READS;
    uint32_t from = p->consumed > RECHECK ? p->consumed - RECHECK : 0;
    for (uint32_t i = final ? 0 : from; i < p->consumed; i++)
        match_growth(p, t, i);
    for (; p->consumed < claimed; p->consumed++) {
        if (!__atomic_load_n(&specx_trace_reads(t)[p->consumed].ready, __ATOMIC_ACQUIRE) && !final)
            break;
        match_growth(p, t, p->consumed);
    }
    count_passed(p);
    end_interval_if_due(p);
}

/* ---- bringing ranges in ---- */

/* File F opened for reading if it is unchanged (history_file_open); a changed file is
 * stale: none of its ranges is brought in. */
static int open_file(struct history_plan *p, uint32_t f)
{
    if (p->fd >= 0 && p->fd_file == f)
        return p->fd;
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    struct plan_file *pf = &p->f[f];
    if (pf->stale)
        return -1;
    const struct history_file *file = &p->h->files[f];
    int fd = history_file_open(file, history_path_of(p->h, file));
    if (fd < 0) {
        pf->stale = true;
        p->c->stale_files++;
        return -1;
    }
    p->fd = fd;
    p->fd_file = f;
    return fd;
}

/* Brings entry I in, unless it is in memory. Where the kernel will not tell (a file the user
 * may not write: residency is hidden from others, docs/design/history.md), it is asked for
 * anyway: for pages already in memory the kernel's readahead only looks them up. What was
 * asked for there cannot be judged: neither what it brought in nor whether that was used. */
static void bring_in(struct history_plan *p, uint32_t i)
{
    const struct history_entry *he = &p->h->entries[i];
    struct plan_entry *e = &p->e[i];
    int fd = open_file(p, he->file);
    if (fd < 0) {
        e->state = SKIPPED;
        return;
    }
    int64_t cached = specx_cached_pages(fd, he->off, he->len);
    if (cached >= 0 && (uint64_t)cached >= specx_pages_spanned(he->off, he->len)) {
        e->state = CACHED;
        p->c->cached_bytes += he->len;
        return;
    }
    for (uint64_t off = he->off; off < he->off + he->len; off += CHUNK) {
        uint64_t n = he->off + he->len - off < CHUNK ? he->off + he->len - off : CHUNK;
        specx_raw_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_WILLNEED);
    }
    if (cached < 0) {
        e->state = ASKED;
        p->c->asked_bytes += he->len;
        return;
    }
    e->state = PREFETCHED;
    e->brought_ns = specx_now_ns();
    p->c->prefetched_bytes += he->len;
    p->outstanding += he->len;
}

/* Whether entry I is close enough ahead of the program to be brought in now. */
static bool due(const struct history_plan *p, uint32_t i, uint64_t elapsed)
{
    uint64_t reached = p->progress_t_ns > elapsed ? p->progress_t_ns : elapsed;
    return i <= p->progress + AHEAD_ENTRIES || p->h->entries[i].t_ns <= reached + AHEAD_NS;
}

void history_plan_advance(struct history_plan *p, struct specx_trace_header *t)
{
    if (!p)
        return;
    uint64_t elapsed = specx_now_ns() - t->start_ns, issued = 0;
    for (; !p->c->stopped && p->next < p->n && issued < ISSUE_PER_TICK; p->next++) {
        uint32_t i = p->next;
        const struct history_entry *he = &p->h->entries[i];
        if (p->e[i].read || p->f[he->file].stale) {
            p->e[i].state = p->e[i].state == PENDING ? SKIPPED : p->e[i].state;
            continue;
        }
        if (!due(p, i, elapsed) || (p->outstanding && p->outstanding + he->len > p->budget))
            break;
        bring_in(p, i);
        if (p->e[i].state == PREFETCHED)
            issued += he->len;
    }
    /* Once the replay is done (or everything it lists was in memory) the program's reads go
     * back to the runtime's cheapest path: what they would tell is settled. */
    if (done(p) || (p->next == p->n && p->c->prefetched_bytes == 0))
        __atomic_store_n(&t->watching, 0, __ATOMIC_RELAXED);
}

void history_plan_finish(struct history_plan *p, struct specx_trace_header *t)
{
    if (!p)
        return;
    __atomic_store_n(&t->watching, 0, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < p->n; i++)
        if (p->e[i].state == PREFETCHED && !p->e[i].read)
            p->c->unused_bytes += p->h->entries[i].len;
}

bool history_plan_read(const struct history_plan *p, uint32_t i)
{
    return p && i < p->n && p->e[i].read;
}

void history_plan_misses_only(struct history_plan *p)
{
    if (p)
        p->misses_only = true;
}

bool history_plan_unread(const struct history_plan *p, uint32_t i)
{
    return p && !p->misses_only && i < p->n && p->e[i].state == PREFETCHED && !p->e[i].read;
}

bool history_plan_stale(const struct history_plan *p, uint32_t f)
{
    return p && f < p->h->nfiles && p->f[f].stale;
}
