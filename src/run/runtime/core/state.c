/* The per-process state of libspecx.so (core/runtime.h): what one process image knows, reset
 * at its start and in a forked child. */
#include "run/runtime/core/runtime.h"

#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "run/runtime/core/control.h"
#include "run/runtime/core/stats.h"
#include "run/runtime/policy/backoff.h"
#include "run/runtime/policy/trust.h"
#include "kernel/raw.h"

struct specx_state specx;

/* Threads between specx_calls_begin and _end, and this thread's own part of that count (a
 * signal handler may stand aside while its thread was in such code). */
static unsigned calls_in_flight;
static __thread unsigned calls_here __attribute__((tls_model("initial-exec")));

bool specx_calls_begin(void)
{
    calls_here++;
    __atomic_add_fetch(&calls_in_flight, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&specx.role, __ATOMIC_SEQ_CST) == SPECX_ROLE_NORMAL)
        return true;
    specx_calls_end();
    return false;
}

void specx_calls_end(void)
{
    __atomic_sub_fetch(&calls_in_flight, 1, __ATOMIC_SEQ_CST);
    calls_here--;
}

void specx_calls_drain(void)
{
    while (__atomic_load_n(&calls_in_flight, __ATOMIC_SEQ_CST) > calls_here)
        sched_yield();
}

void specx_log_line(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof line, "specx: ");
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    specx_raw_write(STDERR_FILENO, line, (size_t)n);
}

/* Resets what belongs to one process: its slot, no copy or control region yet (the inherited
 * ones belong to the parent), and no history of copies judged. Also run in a forked child. */
void specx_start_process(void)
{
    if (specx.ctl)
        munmap(specx.ctl, sizeof *specx.ctl); /* the parent's, inherited by fork */
    if (specx.slot)
        specx_stats_release(specx.slot);
    specx.pid = getpid();
    memset(specx.stream, 0, sizeof specx.stream);
    specx.manager = 0; /* in a forked child, the manager may have been a thread it lost */
    __atomic_store_n(&calls_in_flight, calls_here, __ATOMIC_SEQ_CST); /* ... and so the others */
    memset(specx.dying, 0, sizeof specx.dying);
    specx.ctl = NULL;
    specx.slot = specx_stats_claim();
    specx.slot->horizon = specx.horizon;
    if (!specx.spec_allowed)
        __atomic_fetch_or(&specx.slot->flags, SPECX_SLOT_NO_SPEC, __ATOMIC_RELAXED);
    specx_trust_reset();
    specx_backoff_reset();
}
