/* The trust policy (src/runtime/trust.c): which copies may prefetch for real, judged by how
 * many of their logged predictions the program read. */
#include "check.h"
#include "control.h"
#include "runtime.h"
#include "trust.h"

struct specx_state specx = { .pid = 1 };

static struct specx_tally tally(unsigned hits, unsigned misses)
{
    return (struct specx_tally){ hits, misses };
}

static void test_tally_counts_read_and_passed_records(void)
{
    struct specx_control *ctl = specx_control_create();
    CHECK(ctl);
    for (uint64_t ino = 1; ino <= 4; ino++)
        specx_log_prefetch(ctl, 1, ino, 0, 4096, 0, true);
    CHECK(specx_log_consume(ctl, 1, 2, 0, 100) == 0); /* dry records are no prefetches */
    struct specx_tally t = specx_trust_tally(ctl, 0, true);
    CHECK(t.hits == 1 && t.misses == 1); /* ino 1 passed over; 3 and 4 not reached yet */
    t = specx_trust_tally(ctl, 0, false);
    CHECK(t.hits == 1 && t.misses == 3);
    CHECK(specx_trust_tally(ctl, 2, false).hits == 0); /* a later copy's records only */
    CHECK(specx_trust_predicted(ctl, 0, 1, 2, 4000, 10));
    CHECK(!specx_trust_predicted(ctl, 0, 1, 3, 0, 10)); /* logged but not read */
    CHECK(!specx_trust_predicted(ctl, 2, 1, 2, 0, 10)); /* an earlier copy's record */
}

static void test_pending_predictions_are_not_logged_twice(void)
{
    struct specx_control *ctl = specx_control_create();
    CHECK(ctl);
    specx_log_prefetch(ctl, 1, 7, 8192, 8192, 0, true);
    CHECK(specx_trust_pending(ctl, 1, 7, 8192, 4096));
    CHECK(!specx_trust_pending(ctl, 1, 7, 12288, 8192)); /* only partly predicted */
    CHECK(!specx_trust_pending(ctl, 1, 8, 8192, 4096));  /* another file */
    specx_log_consume(ctl, 1, 7, 8192, 100);
    CHECK(!specx_trust_pending(ctl, 1, 7, 8192, 4096)); /* read: predicting it again is new */
}

static void test_no_history_starts_dry_and_two_hits_promote(void)
{
    specx.pid = 2;
    CHECK(!specx_trust_live());
    CHECK(!specx_trust_earned(tally(1, 0))); /* one hit could be chance */
    CHECK(specx_trust_earned(tally(2, 0)));
    specx_trust_judge(tally(1, 0));
    specx_trust_judge(tally(1, 0)); /* copies that each predicted one read */
    CHECK(specx_trust_live());
}

static void test_inaccurate_copies_lose_trust_and_regain_it(void)
{
    specx.pid = 3;
    specx_trust_judge(tally(20, 0));
    CHECK(specx_trust_live());
    specx_trust_judge(tally(0, 5)); /* a phase where it guesses wrong */
    CHECK(!specx_trust_live());
    CHECK(!specx_trust_earned(tally(1, 1)));
    specx_trust_judge(tally(10, 0));
    specx_trust_judge(tally(10, 0));
    CHECK(specx_trust_live());
}

static void test_copies_that_predict_nothing_change_nothing(void)
{
    specx.pid = 4;
    specx_trust_judge(tally(3, 0));
    for (int i = 0; i < 50; i++)
        specx_trust_judge(tally(0, 0));
    CHECK(specx_trust_live());
    specx.pid = 5; /* a forked child starts without its parent's history */
    CHECK(!specx_trust_live());
}

int main(void)
{
    test_tally_counts_read_and_passed_records();
    test_pending_predictions_are_not_logged_twice();
    test_no_history_starts_dry_and_two_hits_promote();
    test_inaccurate_copies_lose_trust_and_regain_it();
    test_copies_that_predict_nothing_change_nothing();
    return check_status();
}
