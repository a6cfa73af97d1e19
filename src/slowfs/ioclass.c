#include "slowfs/ioclass.h"

#include "kernel/ioprio.h"

enum model_class ioclass_of(pid_t tid)
{
    /* FUSE reports the requesting thread, and ioprio_get(IOPRIO_WHO_PROCESS) on a thread id
     * reads that thread's own class (docs/design/slowfs.md). */
    return specx_ioprio_is_idle(tid) ? MODEL_IDLE : MODEL_REGULAR;
}
