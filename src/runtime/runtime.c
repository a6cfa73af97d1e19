/* libspecx.so's start and end: reads the environment `specx run` prepared, claims the
 * statistics slot, and at exit stops the speculative process before the program is gone. */
#include "runtime.h"
#include "run_env.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "control.h"

#include "horizon.h"
#include "real.h"
#include "residency.h"
#include "spec.h"
#include "stats.h"

struct specx_state specx;
struct specx_real specx_real;

#define RESOLVE(field, symbol) \
    specx_real.field = (__typeof__(specx_real.field))dlsym(RTLD_NEXT, symbol)

void specx_resolve_real(void)
{
    RESOLVE(read, "read");
    RESOLVE(pread, "pread");
    RESOLVE(pread64, "pread64");
    RESOLVE(readv, "readv");
    RESOLVE(preadv, "preadv");
    RESOLVE(preadv64, "preadv64");
    RESOLVE(preadv2, "preadv2");
    RESOLVE(preadv64v2, "preadv64v2");
    RESOLVE(read_chk, "__read_chk");
    RESOLVE(pread_chk, "__pread_chk");
    RESOLVE(pread64_chk, "__pread64_chk");
    RESOLVE(write, "write");
    RESOLVE(posix_fadvise, "posix_fadvise");
    RESOLVE(posix_fadvise64, "posix_fadvise64");
    RESOLVE(fread, "fread");
    RESOLVE(fread_unlocked, "fread_unlocked");
    RESOLVE(fgets, "fgets");
    RESOLVE(fgets_unlocked, "fgets_unlocked");
    RESOLVE(fgetc, "fgetc");
    RESOLVE(getc, "getc");
    RESOLVE(io_getc, "_IO_getc");
    RESOLVE(uflow, "__uflow");
    RESOLVE(underflow, "__underflow");
    RESOLVE(getdelim, "getdelim");
    RESOLVE(getline, "getline");
    RESOLVE(fseek, "fseek");
    RESOLVE(fseeko, "fseeko");
    RESOLVE(fseeko64, "fseeko64");
    RESOLVE(execve, "execve");
    RESOLVE(execv, "execv");
    RESOLVE(execvp, "execvp");
    RESOLVE(execvpe, "execvpe");
    RESOLVE(fexecve, "fexecve");
    RESOLVE(pthread_create, "pthread_create");
    RESOLVE(mmap, "mmap");
    RESOLVE(mmap64, "mmap64");
}

void specx_log(const char *fmt, ...)
{
    if (!specx.verbose)
        return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof line, "specx: ");
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    REAL(write)(STDERR_FILENO, line, (size_t)n);
}

void specx_disable_speculation(enum specx_slot_flag why)
{
    specx.spec_allowed = false;
    __atomic_fetch_or(&specx.slot->flags, why, __ATOMIC_RELAXED);
    specx_spec_stop();
}

static unsigned horizon_from_env(void)
{
    const char *s = getenv(SPECX_HORIZON_ENV);
    char *end;
    unsigned long v = s ? strtoul(s, &end, 10) : 0;
    if (!s || *end || v == 0)
        return SPECX_HORIZON_DEFAULT;
    return v > SPECX_HORIZON_MAX ? SPECX_HORIZON_MAX : (unsigned)v;
}

static bool env_is_one(const char *name)
{
    const char *s = getenv(name);
    return s && strcmp(s, "1") == 0;
}

/* Resets what belongs to one process: its slot, and no speculative process or control
 * region yet (the inherited ones belong to the parent). Also run in a forked child. */
void specx_start_process(void)
{
    if (specx.ctl)
        munmap(specx.ctl, sizeof *specx.ctl); /* the parent's, inherited by fork */
    if (specx.slot)
        specx_stats_release(specx.slot);
    specx.pid = getpid();
    specx.copy = 0;
    memset(specx.dying, 0, sizeof specx.dying);
    specx.ctl = NULL;
    specx.slot = specx_stats_claim();
    specx.slot->horizon = specx.horizon;
    if (!specx.spec_allowed)
        __atomic_fetch_or(&specx.slot->flags, SPECX_SLOT_NO_SPEC, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void specx_init(void)
{
    specx_resolve_real();
    specx_stats_init();
    specx.verbose = env_is_one(SPECX_VERBOSE_ENV);
    specx.horizon = horizon_from_env();
    specx.spec_allowed = !env_is_one(SPECX_DISABLE_ENV);
    specx_start_process();
    specx.role = SPECX_ROLE_NORMAL;
}

__attribute__((destructor)) static void specx_fini(void)
{
    if (specx.role != SPECX_ROLE_NORMAL || getpid() != specx.pid)
        return;
    specx_spec_stop();
    if (specx_residency_fallback())
        __atomic_fetch_or(&specx.slot->flags, SPECX_SLOT_NO_CACHESTAT, __ATOMIC_RELAXED);
    specx_stats_finish(specx.slot);
}
