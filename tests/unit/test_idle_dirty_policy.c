/* How much unwritten data the background may have (src/idle/dirty_policy.c). */
#include "check.h"
#include "idle/dirty_policy.h"

#define MiB (1ull << 20)

static void no_bound_does_nothing(void)
{
    struct idle_dirty_step s = idle_dirty_decide(false, 1024 * MiB, 0, true);
    CHECK(!s.hold && !s.flush && !s.rest && s.next_ns == IDLE_DIRTY_REPORT_NS);
}

static void held_above_the_bound_until_half_of_it(void)
{
    CHECK(!idle_dirty_decide(false, 32 * MiB, 32 * MiB, true).hold);
    CHECK(idle_dirty_decide(false, 33 * MiB, 32 * MiB, true).hold);
    /* Once held, below the bound is not enough: half of it is. */
    CHECK(idle_dirty_decide(true, 20 * MiB, 32 * MiB, true).hold);
    CHECK(!idle_dirty_decide(true, 16 * MiB, 32 * MiB, true).hold);
}

static void write_back_starts_early_and_sampling_quickens(void)
{
    struct idle_dirty_step little = idle_dirty_decide(false, 8 * MiB, 32 * MiB, true);
    CHECK(!little.flush && little.next_ns == IDLE_DIRTY_SLOW_NS);
    struct idle_dirty_step more = idle_dirty_decide(false, 9 * MiB, 32 * MiB, true);
    CHECK(more.flush && !more.hold && more.next_ns == IDLE_DIRTY_FAST_NS);
}

static void little_data_rests_until_memory_use_moves(void)
{
    CHECK(idle_dirty_decide(false, 0, 32 * MiB, true).rest);
    CHECK(idle_dirty_decide(false, 8 * MiB, 32 * MiB, true).rest);
    CHECK(!idle_dirty_decide(false, 9 * MiB, 32 * MiB, true).rest);
    /* Held, it is sampled until write-back lets it go. */
    CHECK(!idle_dirty_decide(true, 20 * MiB, 32 * MiB, true).rest);
    /* Resting at most a quarter of the bound, a writer's first sample finds under half. */
    CHECK(8 * MiB + idle_dirty_watch_window(32 * MiB) < 16 * MiB);
}

static void data_only_the_flushers_can_write_holds_nothing(void)
{
    /* Holding would not bring it down (idle_dirty_hold_helps): it is let go, and written. */
    struct idle_dirty_step s = idle_dirty_decide(true, 64 * MiB, 32 * MiB, false);
    CHECK(!s.hold && s.flush && s.next_ns == IDLE_DIRTY_FAST_NS);
}

static void a_hold_lasts_while_its_write_back_does(void)
{
    CHECK(idle_dirty_hold_helps(false, true, false, 0));
    CHECK(!idle_dirty_hold_helps(false, false, false, 0));
    /* Held: the first pass is waited for, then data being written back. */
    CHECK(idle_dirty_hold_helps(true, false, false, 0));
    CHECK(idle_dirty_hold_helps(true, true, true, 1 << 20));
    /* Nothing on its way: what is left only the flushers write, whatever the pass found. */
    CHECK(!idle_dirty_hold_helps(true, true, true, 0));
}

int main(void)
{
    no_bound_does_nothing();
    held_above_the_bound_until_half_of_it();
    write_back_starts_early_and_sampling_quickens();
    little_data_rests_until_memory_use_moves();
    data_only_the_flushers_can_write_holds_nothing();
    a_hold_lasts_while_its_write_back_does();
    return check_status();
}
