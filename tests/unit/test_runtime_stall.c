/* What a stall means for the running copy (src/run/runtime/policy/stall.c): left to go on, or
 * judged and replaced. */
#include "check.h"
#include "run/runtime/policy/stall.h"

static bool keeps(struct specx_stall_view v)
{
    return specx_stall_keeps_copy(&v);
}

static void test_a_copy_that_ended_is_never_kept(void)
{
    CHECK(!keeps((struct specx_stall_view){ .running = false, .entering = true, .on_track = true,
                                            .dry = true, .arrived = true, .other_thread = true }));
}

static void test_a_copy_still_entering_is_left_to_get_going(void)
{
    CHECK(keeps((struct specx_stall_view){ .running = true, .entering = true }));
    CHECK(keeps((struct specx_stall_view){ .running = true, .entering = true, .dry = true,
                                           .earned = true }));
}

static void test_a_live_copy_off_track_is_replaced(void)
{
    CHECK(!keeps((struct specx_stall_view){ .running = true }));
    CHECK(!keeps((struct specx_stall_view){ .running = true, .on_track = true }));
}

static void test_a_dry_copy_on_track_stays_on_probation_until_it_earns_trust(void)
{
    CHECK(keeps((struct specx_stall_view){ .running = true, .dry = true, .on_track = true }));
    CHECK(!keeps((struct specx_stall_view){ .running = true, .dry = true, .on_track = true,
                                            .earned = true }));
    CHECK(!keeps((struct specx_stall_view){ .running = true, .dry = true }));
}

static void test_a_readahead_wait_or_another_threads_stall_is_no_divergence(void)
{
    CHECK(keeps((struct specx_stall_view){ .running = true, .arrived = true }));
    CHECK(keeps((struct specx_stall_view){ .running = true, .other_thread = true }));
    CHECK(keeps((struct specx_stall_view){ .running = true, .dry = true, .arrived = true }));
    CHECK(keeps((struct specx_stall_view){ .running = true, .dry = true, .other_thread = true }));
}

static void test_a_dry_copy_that_earned_trust_is_promoted_wherever_the_stall(void)
{
    CHECK(!keeps((struct specx_stall_view){ .running = true, .dry = true, .earned = true,
                                            .arrived = true }));
    CHECK(!keeps((struct specx_stall_view){ .running = true, .dry = true, .earned = true,
                                            .other_thread = true, .on_track = true }));
}

int main(void)
{
    test_a_copy_that_ended_is_never_kept();
    test_a_copy_still_entering_is_left_to_get_going();
    test_a_live_copy_off_track_is_replaced();
    test_a_dry_copy_on_track_stays_on_probation_until_it_earns_trust();
    test_a_readahead_wait_or_another_threads_stall_is_no_divergence();
    test_a_dry_copy_that_earned_trust_is_promoted_wherever_the_stall();
    return check_status();
}
