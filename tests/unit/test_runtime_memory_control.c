/* The reactive cost-benefit control (src/run/runtime/policy/memory_control.c, Fraser & Chang 2003
 * §6.1): when speculation's memory overhead stops it and when it may run again. */
#include "check.h"
#include "run/runtime/policy/memory_control.h"

static void test_speculation_that_pays_stays_enabled(void)
{
    struct specx_memctl m;
    specx_memctl_init(&m);
    for (int i = 0; i < 100; i++)
        CHECK(specx_memctl_end_interval(&m, 3, 10) == SPECX_MEMCTL_SAME);
    CHECK(!m.disabled && m.crossings == 0 && m.added == 300 && m.removed == 1000);
    CHECK(specx_memctl_overhead(&m) < 0);
}

static void test_a_harmful_interval_disables_and_time_reenables(void)
{
    struct specx_memctl m;
    specx_memctl_init(&m);
    /* In units of the threshold T (32 pages): 0.5 T is negligible, then 10.25 T is not. */
    CHECK(specx_memctl_end_interval(&m, 32, 0) == SPECX_MEMCTL_SAME);
    CHECK(specx_memctl_end_interval(&m, 640, 0) == SPECX_MEMCTL_DISABLE);
    CHECK(m.disabled && m.crossings == 1);
    /* Disabled: nothing added, the overhead of 10.25 T spreads over the intervals since. */
    unsigned off = 0;
    while (specx_memctl_end_interval(&m, 0, 0) == SPECX_MEMCTL_SAME)
        off++;
    CHECK(off + 1 == 11); /* enabled again at the eleventh interval: 10.25 T / 11 <= T */
    CHECK(!m.disabled && m.reenabled == 1 && specx_memctl_overhead(&m) == 0);
}

static void test_more_harm_keeps_it_off_longer(void)
{
    struct specx_memctl a, b;
    specx_memctl_init(&a);
    specx_memctl_init(&b);
    CHECK(specx_memctl_end_interval(&a, 320, 0) == SPECX_MEMCTL_DISABLE);
    CHECK(specx_memctl_end_interval(&b, 3200, 0) == SPECX_MEMCTL_DISABLE);
    unsigned off_a = 0, off_b = 0;
    while (specx_memctl_end_interval(&a, 0, 0) == SPECX_MEMCTL_SAME)
        off_a++;
    while (specx_memctl_end_interval(&b, 0, 0) == SPECX_MEMCTL_SAME)
        off_b++;
    CHECK(off_a < off_b);
}

static void test_added_stalls_need_pressure_and_speculative_pages(void)
{
    CHECK(specx_memctl_added(500, false, 1000) == 0); /* memory not full: nothing pushed out */
    CHECK(specx_memctl_added(500, true, 1000) == 500);
    CHECK(specx_memctl_added(500, true, 40) == 40);   /* at most one page per speculative page */
    CHECK(specx_memctl_added(500, true, 0) == 0);
}

int main(void)
{
    test_speculation_that_pays_stays_enabled();
    test_a_harmful_interval_disables_and_time_reenables();
    test_more_harm_keeps_it_off_longer();
    test_added_stalls_need_pressure_and_speculative_pages();
    return check_status();
}
