/* The trust policy (src/run/runtime/policy/trust.c): which copies may prefetch for real, judged
 * by how many of their logged predictions the program read. */
#include "check.h"
#include "run/runtime/policy/trust.h"

static struct specx_tally tally(unsigned hits, unsigned misses)
{
    return (struct specx_tally){ hits, misses };
}

static void test_no_history_starts_dry_and_two_hits_promote(void)
{
    specx_trust_reset();
    CHECK(!specx_trust_live());
    CHECK(!specx_trust_earned(tally(1, 0))); /* one hit could be chance */
    CHECK(specx_trust_earned(tally(2, 0)));
    specx_trust_judge(tally(1, 0));
    specx_trust_judge(tally(1, 0)); /* copies that each predicted one read */
    CHECK(specx_trust_live());
}

static void test_inaccurate_copies_lose_trust_and_regain_it(void)
{
    specx_trust_reset();
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
    specx_trust_reset();
    specx_trust_judge(tally(3, 0));
    for (int i = 0; i < 50; i++)
        specx_trust_judge(tally(0, 0));
    CHECK(specx_trust_live());
    specx_trust_reset(); /* a forked child starts without its parent's history */
    CHECK(!specx_trust_live());
}

/* A judgment fixes the next copy's mode on the estimates it leaves: dry until trusted. */
static void test_a_judgment_fixes_the_next_copys_mode(void)
{
    specx_trust_reset();
    CHECK(specx_trust_next_dry());
    CHECK(specx_trust_dry());
    CHECK(specx_trust_judge(tally(1, 0)));
    CHECK(!specx_trust_judge(tally(1, 0))); /* two predictions read: the next copy is live */
    CHECK(!specx_trust_dry() && specx_trust_live());
    CHECK(specx_trust_judge(tally(0, 5)) == !specx_trust_live());
}

int main(void)
{
    test_a_judgment_fixes_the_next_copys_mode();
    test_no_history_starts_dry_and_two_hits_promote();
    test_inaccurate_copies_lose_trust_and_regain_it();
    test_copies_that_predict_nothing_change_nothing();
    return check_status();
}
