/* When the background gives memory back and takes it again (src/idle/yield_policy.c). */
#include "check.h"
#include "yield_policy.h"

#define MiB (1ull << 20)
#define S 1000000000ull

static void pressure_shrinks_by_halves(void)
{
    struct idle_yield_state s = { 0 };
    CHECK(idle_yield_step(&s, false, 1 * S, 800 * MiB, 8192 * MiB) == YIELD_NOTHING);
    CHECK(idle_yield_step(&s, true, 2 * S, 800 * MiB, 8192 * MiB) == YIELD_SHRINK);
    CHECK(s.frozen && s.limit == 400 * MiB);
    /* Still pressure, and it holds less than twice its limit: halved again from usage. */
    CHECK(idle_yield_step(&s, true, 2 * S + 50, 400 * MiB, 8192 * MiB) == YIELD_SHRINK);
    CHECK(s.limit == 200 * MiB);
    /* The last shrink got nowhere (it holds over twice its limit): asking for half of that
     * again would ask for less than the limit already does. */
    CHECK(idle_yield_step(&s, true, 2 * S + 100, 450 * MiB, 8192 * MiB) == YIELD_NOTHING);
    CHECK(s.limit == 200 * MiB);
    /* A small background is not shrunk below the floor. */
    struct idle_yield_state t = { 0 };
    CHECK(idle_yield_step(&t, true, S, 2 * MiB, 8192 * MiB) == YIELD_SHRINK);
    CHECK(t.limit == IDLE_FLOOR_BYTES);
}

static void calm_thaws_then_grows(void)
{
    struct idle_yield_state s = { 0 };
    idle_yield_step(&s, true, 10 * S, 256 * MiB, 1024 * MiB);
    CHECK(s.limit == 128 * MiB);
    CHECK(idle_yield_step(&s, false, 10 * S + S / 2, 128 * MiB, 1024 * MiB) == YIELD_NOTHING);
    CHECK(idle_yield_step(&s, false, 11 * S, 128 * MiB, 1024 * MiB) == YIELD_THAW);
    CHECK(!s.frozen);
    CHECK(idle_yield_step(&s, false, 11 * S + S / 2, 128 * MiB, 1024 * MiB) == YIELD_NOTHING);
    CHECK(idle_yield_step(&s, false, 12 * S, 128 * MiB, 1024 * MiB) == YIELD_GROW);
    CHECK(s.limit == 256 * MiB);
    CHECK(idle_yield_step(&s, false, 13 * S, 256 * MiB, 1024 * MiB) == YIELD_GROW);
    CHECK(s.limit == 512 * MiB);
    /* Growing to all there is means no limit at all. */
    CHECK(idle_yield_step(&s, false, 14 * S, 512 * MiB, 1024 * MiB) == YIELD_GROW);
    CHECK(s.limit == 0);
    CHECK(idle_yield_step(&s, false, 15 * S, 512 * MiB, 1024 * MiB) == YIELD_NOTHING);
}

static void pressure_while_growing_shrinks_again(void)
{
    struct idle_yield_state s = { 0 };
    idle_yield_step(&s, true, 1 * S, 100 * MiB, 1024 * MiB);
    idle_yield_step(&s, false, 2 * S, 50 * MiB, 1024 * MiB);    /* thaw */
    CHECK(idle_yield_step(&s, true, 2 * S + 1, 50 * MiB, 1024 * MiB) == YIELD_SHRINK);
    CHECK(s.frozen && s.limit == 25 * MiB);
}

int main(void)
{
    pressure_shrinks_by_halves();
    calm_thaws_then_grows();
    pressure_while_growing_shrinks_again();
    return check_status();
}
