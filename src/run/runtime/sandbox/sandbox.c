/* Entering the speculative process's sandbox: the three restrictions of Fraser & Chang 2003,
 * §4.1.1, in the order that makes each one safe to rely on. The second restriction (no
 * parent/child relationship) is the runtime's: it clones with exit signal 0. */
#include "run/runtime/sandbox/sandbox.h"
#include "run/runtime/sandbox/privatize.h"
#include "run/runtime/sandbox/sandbox_filter.h"
#include "run/runtime/sandbox/sandbox_open_trap.h"
#include "kernel/raw.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

static pthread_once_t prepared = PTHREAD_ONCE_INIT;
static int prepare_status;

static void compile_filter(void)
{
    uint64_t cookie = specx_open_trap_choose_cookie();
    prepare_status = cookie ? specx_filter_compile(SPECX_FILTER_INSIDE, cookie) : -EAGAIN;
}

int specx_sandbox_prepare(void)
{
    pthread_once(&prepared, compile_filter);
    return prepare_status;
}

/* A crash of the speculative copy must not leave a core file or wake a core-dump handler:
 * nobody may notice that it ran. */
static int forbid_core_dumps(void)
{
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) < 0 ||
        specx_raw_syscall(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return -errno;
    return 0;
}

/* The copy shares the program's memory cgroup: when the group runs out, the kernel's OOM
 * killer must take the copy, never the program (whose fate would then differ from a run
 * without specx). The highest score makes the copy the first victim whatever its size;
 * raising one's own score needs no privilege. */
static int volunteer_for_oom_kill(void)
{
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* dprintf writes through libc's internal write, not the runtime's wrapper of write(2),
     * which swallows output to descriptors 1 and 2 in the copy. */
    int err = dprintf(fd, "1000") == 4 ? 0 : -EIO;
    close(fd);
    return err;
}

int specx_sandbox_snapshot(const struct specx_region *keep, size_t nkeep, bool *copied_shared)
{
    /* Normally done by the runtime in the parent; here only if it was not. */
    int err = specx_filter_compiled() ? 0 : specx_sandbox_prepare();
    /* Before the copy stops being dumpable: then /proc/self belongs to root. */
    if (err == 0)
        err = volunteer_for_oom_kill();
    if (err == 0)
        err = forbid_core_dumps();
    /* Shared memory copy-on-write first: where it must be copied, the copy is the snapshot. */
    return err ? err : specx_privatize_mappings(keep, nkeep, copied_shared);
}

int specx_sandbox_seal(const uint32_t *shared_wait)
{
    /* The file pointers were copied at the clone (specx_privatize_fds); now the system-call
     * table, its open trap handler in place first. */
    int err = specx_open_trap_install();
    return err ? err : specx_filter_load(getpid(), shared_wait);
}
