/* How much a fast-reforked copy may keep (src/run/runtime/policy/lazy_budget.c): the budget for a
 * memory cgroup's limit. */
#include "check.h"
#include "run/runtime/policy/lazy_budget.h"

static void test_budget(void)
{
    CHECK(specx_lazy_budget_of(0) == 64ul << 20);              /* no limit */
    CHECK(specx_lazy_budget_of(9223372036854771712ul) == 64ul << 20); /* v1 "unlimited" */
    CHECK(specx_lazy_budget_of(128ul << 20) == 16ul << 20);    /* an eighth */
    CHECK(specx_lazy_budget_of(4ul << 20) == 1ul << 20);       /* never below 1 MiB */
}

int main(void)
{
    test_budget();
    return check_status();
}
