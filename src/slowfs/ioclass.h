/* The I/O priority class of the thread behind a FUSE request. */
#ifndef SLOWFS_IOCLASS_H
#define SLOWFS_IOCLASS_H

#include <sys/types.h>

#include "slowfs/model.h"

/* MODEL_IDLE if thread tid is in I/O priority class IDLE (ionice -c3, or a speculative child
 * that set IOPRIO_CLASS_IDLE), MODEL_REGULAR otherwise, including when tid has gone. */
enum model_class ioclass_of(pid_t tid);

#endif
