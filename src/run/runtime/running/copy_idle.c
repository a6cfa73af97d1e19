/* The idle and stuck limits of a speculative process: see copy_idle.h. */
#include "run/runtime/running/copy_idle.h"

#include <signal.h>

#include "run/runtime/running/copy_timer.h"
#include "run/runtime/core/control.h"
#include "run/runtime/core/runtime.h"

/* The signals of the copy's CPU-time and wall-clock timers (copy_timer.h); the memory watch
 * uses SIGRTMAX - 2. */
#define IDLE_SIGNAL (SIGRTMAX - 1)
#define STUCK_SIGNAL (SIGRTMAX - 3)

/* Ticks of one clock in a row in which the copy reached no I/O. */
struct quiet_count {
    uint64_t activity; /* specx.copy_activity at the last tick */
    unsigned ticks;
};

/* Counts a tick of C; true once LIMIT ticks in a row passed without I/O. An EXCUSED tick (the
 * copy is waiting for the program, as it should) counts as activity. Async-signal-safe. */
static bool quiet_for(struct quiet_count *c, bool excused, unsigned limit)
{
    uint64_t now = __atomic_load_n(&specx.copy_activity, __ATOMIC_RELAXED);
    if (now != c->activity || excused) {
        c->activity = now;
        c->ticks = 0;
        return false;
    }
    return ++c->ticks >= limit;
}

static struct quiet_count cpu_quiet, wall_quiet;

static void on_cpu_tick(int sig)
{
    (void)sig;
    if (quiet_for(&cpu_quiet, false, SPECX_COPY_IDLE_TICKS)) {
        SPECX_COUNT(spec_idle_ended, 1);
        specx_copy_end_itself();
    }
}

/* Parked at its horizon the copy waits for the program: that is not stuck. */
static void on_wall_tick(int sig)
{
    (void)sig;
    bool parked = __atomic_load_n(&specx_control_own_stream()->parked, __ATOMIC_RELAXED);
    if (quiet_for(&wall_quiet, parked, SPECX_COPY_STUCK_TICKS)) {
        SPECX_COUNT(spec_stuck_ended, 1);
        specx_copy_end_itself();
    }
}

void specx_copy_idle_arm(void)
{
    specx_copy_every(CLOCK_PROCESS_CPUTIME_ID, IDLE_SIGNAL, on_cpu_tick, SPECX_COPY_IDLE_TICK_NS);
    specx_copy_every(CLOCK_MONOTONIC, STUCK_SIGNAL, on_wall_tick, SPECX_COPY_STUCK_TICK_NS);
}
