/* See outside.h. */
#include "run/history/outside.h"

#include <stdio.h>
#include <sys/stat.h>

#include "kernel/clock.h"

/* What is noted of a read seen from outside: its length is not seen, so one readahead window
 * (what the kernel reads at a miss, and a prefetch brings in at once). */
#define SAMPLED_LEN (128u * 1024u)

static bool seen_before(const struct history_outside *o, const struct specx_blocked_read *r)
{
    for (int i = 0; i < o->nlast; i++)
        if (o->last[i].tid == r->tid && o->last[i].fd == r->fd && o->last[i].ino == r->ino &&
            o->last[i].off == r->off)
            return true;
    return false;
}

/* Whether the file was noted already; marks it noted (when the table is full, a file may be
 * noted twice, which the recording merges). */
static bool file_noted(struct history_outside *o, const struct stat *st)
{
    uint64_t h = ((uint64_t)st->st_dev * 0x9e3779b97f4a7c15ull) ^
                 ((uint64_t)st->st_ino * 0xff51afd7ed558ccdull);
    for (unsigned i = 0; i < 8; i++) {
        uint64_t *slot = o->noted[(h + i) % OUTSIDE_FILES];
        if (slot[0] == (uint64_t)st->st_dev && slot[1] == (uint64_t)st->st_ino)
            return true;
        if (!(slot[0] | slot[1])) {
            slot[0] = st->st_dev;
            slot[1] = st->st_ino;
            return false;
        }
    }
    return false;
}

static void note(struct history_outside *o, struct specx_trace_header *t,
                 const struct specx_blocked_read *r)
{
    char link[64];
    struct stat st;
    snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)o->pid, r->fd);
    if (stat(link, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_ino != r->ino ||
        r->off >= (uint64_t)st.st_size)
        return;
    if (!file_noted(o, &st))
        specx_trace_add_file(t, link, &st);
    uint64_t left = (uint64_t)st.st_size - r->off;
    const struct specx_trace_read rec = { .dev = st.st_dev, .ino = st.st_ino, .off = r->off,
                                          .len = left < SAMPLED_LEN ? left : SAMPLED_LEN,
                                          .flags = SPECX_TRACE_MISS,
                                          .t_ns = specx_now_ns() - t->start_ns };
    specx_trace_add_read(t, &rec);
}

void history_outside_sample(struct history_outside *o, struct specx_trace_header *t)
{
    struct specx_blocked_read now[OUTSIDE_THREADS];
    int n = specx_blocked_reads(o->pid, now, OUTSIDE_THREADS);
    for (int i = 0; i < n; i++)
        if (!seen_before(o, &now[i]))
            note(o, t, &now[i]);
    o->nlast = n > 0 ? n : 0;
    for (int i = 0; i < o->nlast; i++)
        o->last[i] = now[i];
}
