/* How much unwritten data the background may have (src/idle/dirty_policy.c). */
#include "check.h"
#include "dirty_policy.h"

#define MiB (1ull << 20)

static void no_bound_does_nothing(void)
{
    struct idle_dirty_step s = idle_dirty_decide(false, 1024 * MiB, 0);
    CHECK(!s.hold && !s.flush && s.next_ns == IDLE_DIRTY_SLOW_NS);
}

static void held_above_the_bound_until_half_of_it(void)
{
    CHECK(!idle_dirty_decide(false, 32 * MiB, 32 * MiB).hold);
    CHECK(idle_dirty_decide(false, 33 * MiB, 32 * MiB).hold);
    /* Once held, below the bound is not enough: half of it is. */
    CHECK(idle_dirty_decide(true, 20 * MiB, 32 * MiB).hold);
    CHECK(!idle_dirty_decide(true, 16 * MiB, 32 * MiB).hold);
}

static void write_back_starts_early_and_sampling_quickens(void)
{
    struct idle_dirty_step little = idle_dirty_decide(false, 8 * MiB, 32 * MiB);
    CHECK(!little.flush && little.next_ns == IDLE_DIRTY_SLOW_NS);
    struct idle_dirty_step more = idle_dirty_decide(false, 9 * MiB, 32 * MiB);
    CHECK(more.flush && !more.hold && more.next_ns == IDLE_DIRTY_FAST_NS);
}

int main(void)
{
    no_bound_does_nothing();
    held_above_the_bound_until_half_of_it();
    write_back_starts_early_and_sampling_quickens();
    return check_status();
}
