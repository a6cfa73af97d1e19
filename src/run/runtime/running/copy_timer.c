/* The copy's timers and its own end: see copy_timer.h. */
#include "run/runtime/running/copy_timer.h"

#include <signal.h>
#include <stddef.h>
#include <unistd.h>

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

static void (*before_end)(void);

void specx_copy_before_end(void (*hook)(void))
{
    before_end = hook;
}

static _Noreturn void end_with(int status)
{
    if (before_end)
        before_end();
    _exit(status);
}

void specx_copy_end_itself(void)
{
    end_with(0);
}

void specx_copy_end_by_signal(int signo)
{
    end_with(128 + signo);
}

void specx_copy_crash_arm(void)
{
    static const int crashes[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP };
    struct sigaction ends = { .sa_handler = specx_copy_end_by_signal };
    sigemptyset(&ends.sa_mask);
    for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++) {
        struct sigaction old;
        if (sigaction(crashes[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO))
            sigaction(crashes[i], &ends, NULL);
    }
}
