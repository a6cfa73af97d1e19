/* I/O priority classes (ioprio_set(2), which glibc does not wrap): the idle class that
 * speculative copies, prefetchers and `specx idle`'s background run in, honoured by the BFQ and
 * mq-deadline schedulers and by specx slowfs (docs/design/slowfs.md). */
#ifndef SPECX_KERNEL_IOPRIO_H
#define SPECX_KERNEL_IOPRIO_H

#include <linux/ioprio.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "kernel/raw.h"

/* Thread or process TID (0: the caller) in CLASS (IOPRIO_CLASS_IDLE, _BE) at LEVEL (0-7; the
 * idle class has none). 0, or -1 with errno. */
static inline int specx_ioprio_set(pid_t tid, int class, int level)
{
    return (int)specx_raw_syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, (int)tid,
                        IOPRIO_PRIO_VALUE(class, level));
}

/* True if thread TID's I/O is in the idle class (FUSE names the requesting thread). */
static inline bool specx_ioprio_is_idle(pid_t tid)
{
    long prio = specx_raw_syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, (int)tid);
    return prio >= 0 && IOPRIO_PRIO_CLASS(prio) == IOPRIO_CLASS_IDLE;
}

#endif
