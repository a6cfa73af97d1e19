/* Sets of paths (src/idle/pathset.c): what the command read, sorted once, looked up often. */
#include "check.h"
#include "pathset.h"

int main(void)
{
    struct idle_pathset s = { 0 };
    CHECK(!idle_pathset_has(&s, "a"));
    const char *paths[] = { "b/c", "a", "b/c", "", "a/b" };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        CHECK(idle_pathset_add(&s, paths[i]) == 0);
    idle_pathset_sort(&s);
    CHECK(s.n == 4);
    CHECK(idle_pathset_has(&s, "a") && idle_pathset_has(&s, "b/c") && idle_pathset_has(&s, ""));
    CHECK(!idle_pathset_has(&s, "b"));
    idle_pathset_free(&s);
    CHECK(s.n == 0 && !s.paths);
    return check_status();
}
