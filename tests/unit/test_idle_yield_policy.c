/* When the background gives memory back and takes it again (src/idle/yield_policy.c). */
#include "check.h"
#include "idle/yield_policy.h"

#define MiB (1ull << 20)
#define S 1000000000ull
#define TOTAL (1024 * MiB)

static void pressure_shrinks_by_halves(void)
{
    struct idle_yield_state s = { 0 };
    CHECK(idle_yield_step(&s, false, 1 * S, 800 * MiB, 100 * MiB, TOTAL) == YIELD_NOTHING);
    CHECK(idle_yield_step(&s, true, 2 * S, 800 * MiB, 0, TOTAL) == YIELD_SHRINK);
    CHECK(s.frozen && s.limit == 400 * MiB);
    /* Still pressure: halved again from what it holds. */
    CHECK(idle_yield_step(&s, true, 2 * S + 50, 400 * MiB, 0, TOTAL) == YIELD_SHRINK);
    CHECK(s.limit == 200 * MiB);
    /* The last shrink got nowhere (it holds over twice its limit): asking for half of that
     * again would ask for less than the limit already does. */
    CHECK(idle_yield_step(&s, true, 2 * S + 100, 450 * MiB, 0, TOTAL) == YIELD_NOTHING);
    CHECK(s.limit == 200 * MiB);
    /* A small background is not shrunk below the floor. */
    struct idle_yield_state t = { 0 };
    CHECK(idle_yield_step(&t, true, S, 2 * MiB, 0, TOTAL) == YIELD_SHRINK);
    CHECK(t.limit == IDLE_FLOOR_BYTES);
}

static void calm_thaws_then_grows_into_free_memory_only(void)
{
    struct idle_yield_state s = { 0 };
    idle_yield_step(&s, true, 10 * S, 256 * MiB, 0, TOTAL);
    CHECK(s.limit == 128 * MiB);
    CHECK(idle_yield_step(&s, false, 10 * S + S / 2, 128 * MiB, 0, TOTAL) == YIELD_NOTHING);
    CHECK(idle_yield_step(&s, false, 11 * S, 128 * MiB, 0, TOTAL) == YIELD_THAW);
    CHECK(!s.frozen);
    /* Calm, but nothing is free: the foreground fits, and growing would push it out. */
    CHECK(idle_yield_step(&s, false, 12 * S, 128 * MiB, 0, TOTAL) == YIELD_NOTHING);
    CHECK(s.limit == 128 * MiB);
    /* 100 MiB free: half of it. */
    CHECK(idle_yield_step(&s, false, 13 * S, 128 * MiB, 100 * MiB, TOTAL) == YIELD_GROW);
    CHECK(s.limit == 178 * MiB);
    /* Plenty free: doubling. */
    CHECK(idle_yield_step(&s, false, 14 * S, 178 * MiB, 400 * MiB, TOTAL) == YIELD_GROW);
    CHECK(s.limit == 356 * MiB);
    /* Half of everything free: no limit at all. */
    CHECK(idle_yield_step(&s, false, 15 * S, 356 * MiB, 600 * MiB, TOTAL) == YIELD_GROW);
    CHECK(s.limit == 0);
    CHECK(idle_yield_step(&s, false, 16 * S, 356 * MiB, 600 * MiB, TOTAL) == YIELD_NOTHING);
}

static void pressure_while_growing_shrinks_again(void)
{
    struct idle_yield_state s = { 0 };
    idle_yield_step(&s, true, 1 * S, 100 * MiB, 0, TOTAL);
    idle_yield_step(&s, false, 2 * S, 50 * MiB, 0, TOTAL); /* thaw */
    CHECK(idle_yield_step(&s, true, 2 * S + 1, 50 * MiB, 0, TOTAL) == YIELD_SHRINK);
    CHECK(s.frozen && s.limit == 25 * MiB);
}

static void only_a_thawed_limited_background_needs_what_is_unused(void)
{
    struct idle_yield_state s = { 0 };
    CHECK(!idle_yield_may_grow(&s)); /* at rest: no limit */
    idle_yield_step(&s, true, 1 * S, 100 * MiB, 0, TOTAL);
    CHECK(!idle_yield_may_grow(&s)); /* frozen: the next step thaws at most */
    idle_yield_step(&s, false, 2 * S, 50 * MiB, 0, TOTAL);
    CHECK(idle_yield_may_grow(&s));
    idle_yield_step(&s, false, 3 * S, 50 * MiB, TOTAL, TOTAL); /* limit gone */
    CHECK(!idle_yield_may_grow(&s));
}

int main(void)
{
    pressure_shrinks_by_halves();
    calm_thaws_then_grows_into_free_memory_only();
    pressure_while_growing_shrinks_again();
    only_a_thawed_limited_background_needs_what_is_unused();
    return check_status();
}
