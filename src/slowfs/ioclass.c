#include "ioclass.h"

#include <sys/syscall.h>
#include <unistd.h>

/* From linux/ioprio.h, which glibc does not wrap. */
#define IOPRIO_WHO_PROCESS 1
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_IDLE 3

enum model_class ioclass_of(pid_t tid)
{
    /* FUSE reports the requesting thread, and ioprio_get(IOPRIO_WHO_PROCESS) on a thread id
     * reads that thread's own class (docs/DESIGN.md §1). */
    long prio = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, (int)tid);
    if (prio >= 0 && (prio >> IOPRIO_CLASS_SHIFT) == IOPRIO_CLASS_IDLE)
        return MODEL_IDLE;
    return MODEL_REGULAR;
}
