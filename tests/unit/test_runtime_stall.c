/* What a stall means for speculation (src/run/runtime/policy/stall.c): nothing, the copy
 * stopped, kept, ended for a back-off, or judged and replaced. */
#include "check.h"
#include "run/runtime/policy/stall.h"

static enum specx_stall_action decide(struct specx_stall_facts f)
{
    return specx_stall_decide(&f);
}

/* A stall where speculation may run, with a copy as V. */
static bool keeps(struct specx_stall_view v)
{
    return decide((struct specx_stall_facts){ .allowed = true, .had_copy = true, .copy = v }) ==
           SPECX_STALL_KEEP;
}

static void test_nothing_is_done_where_speculation_does_not_run(void)
{
    CHECK(decide((struct specx_stall_facts){ .memory_stopped = true, .had_copy = true,
                                             .copy = { .running = true } }) ==
          SPECX_STALL_IGNORE);
    CHECK(decide((struct specx_stall_facts){ 0 }) == SPECX_STALL_IGNORE);
}

static void test_the_memory_control_stops_any_copy_before_anything_else(void)
{
    CHECK(decide((struct specx_stall_facts){ .allowed = true, .memory_stopped = true,
                                             .had_copy = true,
                                             .copy = { .running = true, .entering = true } }) ==
          SPECX_STALL_STOP);
    CHECK(decide((struct specx_stall_facts){ .allowed = true, .memory_stopped = true }) ==
          SPECX_STALL_STOP);
}

static void test_the_first_stall_makes_a_copy_unless_backing_off(void)
{
    CHECK(decide((struct specx_stall_facts){ .allowed = true }) == SPECX_STALL_COPY);
    CHECK(decide((struct specx_stall_facts){ .allowed = true, .backing_off = true }) ==
          SPECX_STALL_BACK_OFF);
}

static void test_a_copy_not_kept_is_replaced_or_ended_by_the_back_off(void)
{
    struct specx_stall_facts f = { .allowed = true, .had_copy = true, .copy = { .running = true } };
    CHECK(decide(f) == SPECX_STALL_COPY);
    f.backing_off = true;
    CHECK(decide(f) == SPECX_STALL_BACK_OFF);
    f.copy.entering = true; /* a kept copy is never judged, whatever the back-off */
    CHECK(decide(f) == SPECX_STALL_KEEP);
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

/* A stall of another stream of reads (another thread's, on a read the copy did not predict,
 * the copy shown to follow its own thread alone): the copy is neither replaced nor promoted;
 * the thread gets a copy of its own where its stall is real and not backed off. */
static void test_another_streams_stall_starts_a_copy_of_its_own(void)
{
    struct specx_stall_view other = { .running = true, .other_thread = true,
                                      .other_stream = true };
    struct specx_stall_facts f = { .allowed = true, .had_copy = true, .copy = other };
    CHECK(decide(f) == SPECX_STALL_NEW_STREAM);
    f.copy.dry = f.copy.earned = true; /* not promoted from another stream */
    CHECK(decide(f) == SPECX_STALL_NEW_STREAM);
    f.copy = other;
    f.backing_off = true;
    CHECK(decide(f) == SPECX_STALL_KEEP);
    f.backing_off = false;
    f.copy.arrived = true;
    CHECK(decide(f) == SPECX_STALL_KEEP);
    f.copy = other;
    f.copy.running = false; /* an ended copy is judged as any */
    CHECK(decide(f) == SPECX_STALL_COPY);
    f.memory_stopped = true;
    CHECK(decide(f) == SPECX_STALL_STOP);
}

int main(void)
{
    test_nothing_is_done_where_speculation_does_not_run();
    test_the_memory_control_stops_any_copy_before_anything_else();
    test_the_first_stall_makes_a_copy_unless_backing_off();
    test_a_copy_not_kept_is_replaced_or_ended_by_the_back_off();
    test_a_copy_that_ended_is_never_kept();
    test_a_copy_still_entering_is_left_to_get_going();
    test_a_live_copy_off_track_is_replaced();
    test_a_dry_copy_on_track_stays_on_probation_until_it_earns_trust();
    test_a_readahead_wait_or_another_threads_stall_is_no_divergence();
    test_a_dry_copy_that_earned_trust_is_promoted_wherever_the_stall();
    test_another_streams_stall_starts_a_copy_of_its_own();
    return check_status();
}
