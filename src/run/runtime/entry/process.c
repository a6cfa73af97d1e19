/* The program's process life cycle as it concerns its copy: libspecx.so's start (reads the
 * environment `specx run` prepared, claims the statistics slot) and end (stops the copy before
 * the program is gone); a forked child is a new program with its own statistics and, later,
 * its own copy; an exec ends the image (kill and reap the copy first: it would survive exec). */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/runtime/copy/copy.h"
#include "run/runtime/running/copy_timer.h"
#include "kernel/copy_hazards.h"
#include "run/runtime/core/history.h"
#include "run/runtime/core/runtime.h"
#include "run/runtime/core/stats.h"
#include "run/runtime/entry/real.h"
#include "kernel/kfile.h"
#include "kernel/residency.h"
#include "common/run_env.h"

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

/* Whether this process started under a seccomp filter, inherited across exec (systemd's
 * SystemCallFilter=, a sandboxing parent): then the runtime stands aside from the start
 * (copy.h), claiming only its report's slot, which says so. Its status is read with the
 * calls the dynamic loader has just made itself (open, read, close); an unreadable one counts
 * as sealed. */
static bool started_sealed(void)
{
    char text[4096] = "";
    uint64_t pid = 0, ppid = 0;
    int mode = specx_kfile_read("/proc/self/status", text, sizeof text) > 0
                   ? specx_status_seccomp(text)
                   : -1;
    if (mode == 0)
        return false;
    specx_kfile_key_u64(text, "Pid:", &pid);
    specx_kfile_key_u64(text, "PPid:", &ppid);
    specx.slot = specx_stats_claim_for((pid_t)pid, (pid_t)ppid);
    __atomic_fetch_or(&specx.slot->flags, SPECX_SLOT_SECCOMP, __ATOMIC_RELAXED);
    return true;
}

__attribute__((constructor)) static void specx_init(void)
{
    specx_resolve_real();
    specx_stats_init();
    if (started_sealed())
        return; /* role stays SPECX_ROLE_OFF */
    specx.verbose = env_is_one(SPECX_VERBOSE_ENV);
    specx.horizon = horizon_from_env();
    specx.spec_allowed = !env_is_one(SPECX_DISABLE_ENV);
    specx.memory_control = !env_is_one(SPECX_NO_MEMORY_CONTROL_ENV);
    specx_history_init();
    specx_start_process();
    specx.role = SPECX_ROLE_NORMAL;
}

__attribute__((destructor)) static void specx_fini(void)
{
    /* A copy that ran to the program's exit frees its large regions while the OOM killer can
     * still choose it, as any copy ending of its own accord does (copy_timer.h). */
    if (specx.role == SPECX_ROLE_SPEC)
        specx_copy_end_itself();
    if (specx.role != SPECX_ROLE_NORMAL || getpid() != specx.pid)
        return;
    specx_copy_stop();
    if (specx_residency_fallback())
        __atomic_fetch_or(&specx.slot->flags, SPECX_SLOT_NO_CACHESTAT, __ATOMIC_RELAXED);
    specx_stats_finish(specx.slot);
}

static void on_fork_child(void)
{
    if (specx.role == SPECX_ROLE_NORMAL)
        specx_start_process();
}

__attribute__((constructor)) static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, on_fork_child);
}

/* Only the process that owns the state acts: a vfork child shares it but is not it. */
static bool owns_state(void)
{
    return specx.role == SPECX_ROLE_NORMAL && getpid() == specx.pid;
}

/* Whether speculation was allowed before an exec that may fail. */
static bool allowed_before_exec;

/* No speculative process may be made between here and the exec (by a read in a signal
 * handler): it would outlive the image that made it. */
static void before_exec(void)
{
    if (!owns_state())
        return;
    allowed_before_exec = specx.spec_allowed;
    specx.spec_allowed = false;
    specx_copy_stop();
    specx_stats_finish(specx.slot);
}

static int after_failed_exec(int ret)
{
    if (owns_state()) {
        specx_stats_resume(specx.slot);
        specx.spec_allowed = allowed_before_exec;
    }
    return ret;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    before_exec();
    return after_failed_exec(REAL(execve)(path, argv, envp));
}

EXPORT int execv(const char *path, char *const argv[])
{
    before_exec();
    return after_failed_exec(REAL(execv)(path, argv));
}

EXPORT int execvp(const char *file, char *const argv[])
{
    before_exec();
    return after_failed_exec(REAL(execvp)(file, argv));
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    before_exec();
    return after_failed_exec(REAL(execvpe)(file, argv, envp));
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    before_exec();
    return after_failed_exec(REAL(fexecve)(fd, argv, envp));
}

/* The execl family: the variable arguments become an argv on the stack, then as execv*.
 * No malloc: execl and execle are async-signal-safe (POSIX), and a vfork child calls them
 * with the parent's heap. */

/* How many arguments follow ARG0 up to the terminating NULL, ARG0 included. */
static size_t count_args(const char *arg0, va_list *ap)
{
    va_list count;
    va_copy(count, *ap);
    size_t n = arg0 ? 1 : 0;
    while (arg0 && va_arg(count, char *))
        n++;
    va_end(count);
    return n;
}

/* Fills ARGV (room for N + 1) from ARG0 and AP, consuming AP up to and including the NULL. */
static void fill_args(char **argv, size_t n, const char *arg0, va_list *ap)
{
    argv[0] = (char *)arg0;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(*ap, char *); /* the last one read is the terminating NULL */
    argv[n] = NULL;
}

/* Declares ARGV: ARG0 and the variable arguments after it up to their NULL, consumed from AP,
 * as a NULL-terminated array on the stack. */
#define ARGV_ON_STACK(argv, arg0, ap)                                                          \
    size_t argv##_n = count_args((arg0), &(ap));                                               \
    char *argv[argv##_n + 1];                                                                  \
    fill_args(argv, argv##_n, (arg0), &(ap))

EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    ARGV_ON_STACK(argv, arg, ap);
    va_end(ap);
    return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    ARGV_ON_STACK(argv, arg, ap);
    va_end(ap);
    return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    ARGV_ON_STACK(argv, arg, ap);
    char **envp = va_arg(ap, char **);
    va_end(ap);
    return execve(path, argv, envp);
}
