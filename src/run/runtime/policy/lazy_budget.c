/* The copy's memory budget: see lazy_budget.h. */
#include "run/runtime/policy/lazy_budget.h"

#define BUDGET_MAX (64ul << 20)
#define BUDGET_SHARE 8u
#define BUDGET_MIN (1ul << 20)

unsigned long specx_lazy_budget_of(unsigned long limit)
{
    unsigned long budget = limit && limit / BUDGET_SHARE < BUDGET_MAX ? limit / BUDGET_SHARE
                                                                      : BUDGET_MAX;
    return budget < BUDGET_MIN ? BUDGET_MIN : budget;
}
