/* The copy's timers and its own end: see copy_timer.h. */
#include "copy/copy_timer.h"

#include <signal.h>
#include <unistd.h>

#include "copy/lazy_memory.h"

void specx_copy_every(clockid_t clock, int signo, void (*handler)(int), uint64_t period_ns)
{
    struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, NULL) < 0)
        return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = signo };
    timer_t timer;
    if (timer_create(clock, &ev, &timer) < 0)
        return;
    struct timespec period = { (time_t)(period_ns / 1000000000ull),
                               (long)(period_ns % 1000000000ull) };
    struct itimerspec every = { .it_interval = period, .it_value = period };
    timer_settime(timer, 0, &every, NULL);
}

void specx_copy_end_itself(void)
{
    specx_lazy_release_regions();
    _exit(0);
}
