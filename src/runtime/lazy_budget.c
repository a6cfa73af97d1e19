/* How much memory a fast-reforked copy may keep of what it pulled from the program
 * (lazy_memory.h). Pulled pages are the copy's own, not shared with the program, and the copy
 * is charged to the program's memory cgroup: in a cgroup sized for the program alone (the
 * out-of-core benchmarks run in 64 MiB), a fixed 64 MiB would push the program's own pages
 * out. So the copy keeps at most an eighth of the cgroup's limit, and never more than 64 MiB. */
#include "lazy_memory.h"
#include "memcg.h"

#include <stdint.h>

#define BUDGET_MAX (64ul << 20)
#define BUDGET_SHARE 8u
#define BUDGET_MIN (1ul << 20)

unsigned long specx_lazy_budget_of(unsigned long limit)
{
    unsigned long budget = limit && limit / BUDGET_SHARE < BUDGET_MAX ? limit / BUDGET_SHARE
                                                                      : BUDGET_MAX;
    return budget < BUDGET_MIN ? BUDGET_MIN : budget;
}

unsigned long specx_lazy_budget(void)
{
    static unsigned long budget;
    if (budget == 0)
        budget = specx_lazy_budget_of((unsigned long)specx_memcg_self_limit());
    return budget;
}
