/* The background's CPU and disk priority per thread (Eggert 2002 §2.3: prioritization):
 * SCHED_IDLE, which runs it only when no other task wants the CPU, and the idle I/O class,
 * which schedulers that honour classes (BFQ, mq-deadline) serve only when the device is idle.
 * Both are inherited by every thread and child the command starts. */
#ifndef IDLE_PRIORITY_H
#define IDLE_PRIORITY_H

#include "kernel/cgroup.h"

/* The caller (the command, before exec) at idle CPU and I/O priority. 0, or -1 with errno. */
int idle_priority_lower_self(void);

/* Every thread of every process in GROUP back at normal priority (SCHED_OTHER, best-effort
 * I/O): the deadline's promotion. Returns the number of threads promoted. */
unsigned idle_priority_promote(const struct specx_cgroup *group);

#endif
