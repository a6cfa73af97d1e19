/* Back-off and retirement of a process's copies: see backoff.h. */
#include "run/runtime/policy/backoff.h"

#include <string.h>

#include "common/stats_layout.h" /* SPECX_RETIRE_AFTER, which the report quotes */

#define MAX_BACKOFF 64u
#define BACKOFF_FILES 8

struct backoff {
    uint64_t dev, ino;
    unsigned stalls; /* the current back-off ... */
    unsigned skip;   /* ... and how many stalls of it are left */
};

static struct backoff files[BACKOFF_FILES];
static unsigned next_file;
static struct backoff process_backoff;
static unsigned useless_in_a_row;

void specx_backoff_reset(void)
{
    memset(files, 0, sizeof files);
    next_file = 0;
    process_backoff = (struct backoff){ 0 };
    useless_in_a_row = 0;
}

/* The back-off of file (dev, ino); if it has none, with create a fresh one (replacing the
 * oldest entry), else the process's. */
static struct backoff *backoff_of(uint64_t dev, uint64_t ino, bool create)
{
    for (unsigned i = 0; i < BACKOFF_FILES; i++)
        if (files[i].dev == dev && files[i].ino == ino)
            return &files[i];
    if (!create)
        return &process_backoff;
    struct backoff *b = &files[next_file++ % BACKOFF_FILES];
    *b = (struct backoff){ .dev = dev, .ino = ino };
    return b;
}

static void back_off(struct backoff *b, bool useful)
{
    b->stalls = useful ? 0 : (b->stalls ? 2 * b->stalls : 1);
    if (b->stalls > MAX_BACKOFF)
        b->stalls = MAX_BACKOFF;
    b->skip = b->stalls;
}

bool specx_backoff_retired(void)
{
    return useless_in_a_row >= SPECX_RETIRE_AFTER;
}

bool specx_backoff_skip(uint64_t dev, uint64_t ino)
{
    struct backoff *b = backoff_of(dev, ino, false);
    if (b->skip == 0 && !specx_backoff_retired())
        return false;
    b->skip -= b->skip > 0;
    return true;
}

bool specx_backoff_judged(uint64_t dev, uint64_t ino, bool useful)
{
    back_off(backoff_of(dev, ino, true), useful);
    back_off(&process_backoff, useful);
    useless_in_a_row = useful ? 0 : useless_in_a_row + 1;
    return useless_in_a_row == SPECX_RETIRE_AFTER;
}
