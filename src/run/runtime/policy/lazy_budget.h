/* How much memory a fast-reforked copy may keep of what it pulled from the program
 * (refork/lazy_memory.h). Pulled pages are the copy's own, not shared with the program, and the
 * copy is charged to the program's memory cgroup: in a cgroup sized for the program alone (the
 * out-of-core benchmarks run in 64 MiB), a fixed 64 MiB would push the program's own pages
 * out. So the copy keeps at most an eighth of the cgroup's limit, and never more than 64 MiB. */
#ifndef SPECX_POLICY_LAZY_BUDGET_H
#define SPECX_POLICY_LAZY_BUDGET_H

/* The budget in a memory cgroup of LIMIT bytes (0: none), at least 1 MiB. */
unsigned long specx_lazy_budget_of(unsigned long limit);

#endif
