/* Sets of paths (src/idle/pathset.c): what the command read, sorted once, looked up often; and
 * which isolated directory a path is in. */
#include <string.h>

#include "check.h"
#include "idle/pathset.h"

static void a_set_is_sorted_once_and_looked_up(void)
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
}

static void a_path_is_within_a_directory_only_at_a_separator(void)
{
    static char dirs[2][4096] = { "/srv/a", "/srv/b" };
    const char *rel = NULL;
    CHECK(idle_path_within("/srv/b/x/y", dirs, 2, &rel) == 1 && strcmp(rel, "x/y") == 0);
    CHECK(idle_path_within("/srv/a", dirs, 2, &rel) == 0 && strcmp(rel, "") == 0);
    CHECK(idle_path_within("/srv/ab/x", dirs, 2, &rel) == -1);
    CHECK(idle_path_within("/srv", dirs, 2, &rel) == -1);
}

static void only_plain_names_below_a_directory_are_valid(void)
{
    CHECK(idle_rel_valid("a") && idle_rel_valid("a/b.c/..d") && idle_rel_valid(".x/y"));
    const char *bad[] = { "", "/etc/passwd", "..", "a/../b", "a/..", "./a", "a/./b", "a//b",
                          "a/", "/" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!idle_rel_valid(bad[i]));
}

int main(void)
{
    a_set_is_sorted_once_and_looked_up();
    a_path_is_within_a_directory_only_at_a_separator();
    only_plain_names_below_a_directory_are_valid();
    return check_status();
}
