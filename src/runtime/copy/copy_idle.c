/* The idle limit of a speculative process: see copy_idle.h. */
#include "copy/copy_idle.h"

#include <signal.h>

#include "copy/copy_timer.h"
#include "core/control.h"
#include "core/runtime.h"

/* The signals of the copy's CPU-time and wall-clock timers (copy_timer.h); the memory watch
 * uses SIGRTMAX - 2. */
#define IDLE_SIGNAL (SIGRTMAX - 1)
#define STUCK_SIGNAL (SIGRTMAX - 3)

static uint64_t activity_at_last_tick;
static unsigned idle_ticks;

static void on_tick(int sig)
{
    (void)sig;
    uint64_t now = __atomic_load_n(&specx.copy_activity, __ATOMIC_RELAXED);
    if (now != activity_at_last_tick) {
        activity_at_last_tick = now;
        idle_ticks = 0;
        return;
    }
    if (++idle_ticks >= SPECX_COPY_IDLE_TICKS) {
        SPECX_COUNT(spec_idle_ended, 1);
        specx_copy_end_itself();
    }
}

static uint64_t activity_at_last_wall_tick;
static unsigned stuck_ticks;

/* Parked at its horizon the copy waits for the program, as it should: that is not stuck. */
static void on_wall_tick(int sig)
{
    (void)sig;
    uint64_t now = __atomic_load_n(&specx.copy_activity, __ATOMIC_RELAXED);
    bool parked = __atomic_load_n(&specx.ctl->parked, __ATOMIC_RELAXED);
    if (now != activity_at_last_wall_tick || parked) {
        activity_at_last_wall_tick = now;
        stuck_ticks = 0;
        return;
    }
    if (++stuck_ticks >= SPECX_COPY_STUCK_TICKS) {
        SPECX_COUNT(spec_stuck_ended, 1);
        specx_copy_end_itself();
    }
}

void specx_copy_idle_arm(void)
{
    specx_copy_every(CLOCK_PROCESS_CPUTIME_ID, IDLE_SIGNAL, on_tick, SPECX_COPY_IDLE_TICK_NS);
    specx_copy_every(CLOCK_MONOTONIC, STUCK_SIGNAL, on_wall_tick, SPECX_COPY_STUCK_TICK_NS);
}
