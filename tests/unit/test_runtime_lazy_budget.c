/* How much a fast-reforked copy may keep (src/runtime/lazy_budget.c): the memory cgroup found
 * in /proc/self/cgroup text of both hierarchies, and the budget for a limit. */
#include <string.h>

#include "check.h"
#include "kernel_limits.h"
#include "lazy_memory.h"

static void test_cgroup_v1_memory_line_wins(void)
{
    char text[] = "9:name=systemd:/\n4:memory:/bench/run-1\n1:cpu:/\n0::/user.slice\n";
    bool v1 = false;
    const char *path = specx_memory_cgroup(text, &v1);
    CHECK(path && strcmp(path, "/bench/run-1") == 0 && v1);
}

static void test_cgroup_v1_controller_list(void)
{
    char text[] = "3:cpu,memory,pids:/a\n";
    bool v1 = false;
    const char *path = specx_memory_cgroup(text, &v1);
    CHECK(path && strcmp(path, "/a") == 0 && v1);
    char not_memory[] = "3:memory_x,cpu:/b\n";
    CHECK(specx_memory_cgroup(not_memory, &v1) == NULL);
}

static void test_cgroup_v2_only(void)
{
    char text[] = "0::/system.slice/x.service\n";
    bool v1 = true;
    const char *path = specx_memory_cgroup(text, &v1);
    CHECK(path && strcmp(path, "/system.slice/x.service") == 0 && !v1);
    char empty[] = "";
    CHECK(specx_memory_cgroup(empty, &v1) == NULL);
}

static void test_budget(void)
{
    CHECK(specx_lazy_budget_of(0) == 64ul << 20);              /* no limit */
    CHECK(specx_lazy_budget_of(9223372036854771712ul) == 64ul << 20); /* v1 "unlimited" */
    CHECK(specx_lazy_budget_of(128ul << 20) == 16ul << 20);    /* an eighth */
    CHECK(specx_lazy_budget_of(4ul << 20) == 1ul << 20);       /* never below 1 MiB */
}

int main(void)
{
    test_cgroup_v1_memory_line_wins();
    test_cgroup_v1_controller_list();
    test_cgroup_v2_only();
    test_budget();
    return check_status();
}
