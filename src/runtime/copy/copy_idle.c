/* The idle limit of a speculative process: see copy_idle.h. */
#include "copy/copy_idle.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "copy/lazy_memory.h"
#include "core/runtime.h"

/* A real-time signal the copy's own timer sends: program code seldom uses the top ones, and
 * one that replaces the handler in the copy only keeps the copy alive, as before. */
#define IDLE_SIGNAL (SIGRTMAX - 1)

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
        specx_lazy_release_regions();
        _exit(0);
    }
}

void specx_copy_idle_arm(void)
{
    struct sigaction sa = { .sa_handler = on_tick, .sa_flags = SA_RESTART };
    sigemptyset(&sa.sa_mask);
    if (sigaction(IDLE_SIGNAL, &sa, NULL) < 0)
        return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, IDLE_SIGNAL);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = IDLE_SIGNAL };
    timer_t timer;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &timer) < 0)
        return;
    struct itimerspec every = {
        .it_interval = { 0, (long)SPECX_COPY_IDLE_TICK_NS },
        .it_value = { 0, (long)SPECX_COPY_IDLE_TICK_NS },
    };
    timer_settime(timer, 0, &every, NULL);
}
