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

static struct {
    struct backoff files[BACKOFF_FILES];
    unsigned next_file;
    struct backoff process;
    unsigned useless_in_a_row;
} state;

void specx_backoff_reset(void)
{
    memset(&state, 0, sizeof state);
}

/* The back-off of file (dev, ino); if it has none, with create a fresh one (replacing the
 * oldest entry), else the process's. */
static struct backoff *backoff_of(uint64_t dev, uint64_t ino, bool create)
{
    for (unsigned i = 0; i < BACKOFF_FILES; i++)
        if (state.files[i].dev == dev && state.files[i].ino == ino)
            return &state.files[i];
    if (!create)
        return &state.process;
    struct backoff *b = &state.files[state.next_file++ % BACKOFF_FILES];
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
    return state.useless_in_a_row >= SPECX_RETIRE_AFTER;
}

static bool skips(const struct backoff *b)
{
    return b->skip != 0 || specx_backoff_retired();
}

bool specx_backoff_skip(uint64_t dev, uint64_t ino)
{
    struct backoff *b = backoff_of(dev, ino, false);
    if (!skips(b))
        return false;
    b->skip -= b->skip > 0;
    return true;
}

bool specx_backoff_judged(uint64_t dev, uint64_t ino, bool useful)
{
    back_off(backoff_of(dev, ino, true), useful);
    back_off(&state.process, useful);
    state.useless_in_a_row = useful ? 0 : state.useless_in_a_row + 1;
    return state.useless_in_a_row == SPECX_RETIRE_AFTER;
}

/* Judges on the real state, asks, and puts the state back: the answer is by construction
 * what specx_backoff_skip will say after specx_backoff_judged. */
bool specx_backoff_would_skip(uint64_t dev, uint64_t ino, const struct specx_judgment *judged)
{
    __typeof__(state) before = state;
    if (judged)
        specx_backoff_judged(judged->dev, judged->ino, judged->useful);
    bool skip = skips(backoff_of(dev, ino, false));
    state = before;
    return skip;
}

bool specx_backoff_settle(const struct specx_judgment *judged, uint64_t dev, uint64_t ino,
                          bool passes)
{
    bool retired = judged && specx_backoff_judged(judged->dev, judged->ino, judged->useful);
    if (passes)
        specx_backoff_skip(dev, ino);
    return retired;
}
