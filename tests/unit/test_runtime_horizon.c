/* The prefetch horizon's decision (src/run/runtime/policy/horizon.h) and the range arithmetic the
 * read path relies on (src/kernel/residency.h). */
#include <stdio.h>

#include "check.h"
#include "run/runtime/policy/horizon.h"
#include "kernel/residency.h"

static void test_count_bound(void)
{
    CHECK(!specx_horizon_should_park(0, 0, 4));
    CHECK(!specx_horizon_should_park(3, 0, 4));
    CHECK(specx_horizon_should_park(4, 0, 4));
    CHECK(specx_horizon_should_park(5, 0, 4));
}

static void test_time_bound(void)
{
    uint64_t old = SPECX_HORIZON_MAX_AGE_NS + 1;
    CHECK(specx_horizon_should_park(1, old, 64));
    CHECK(!specx_horizon_should_park(1, SPECX_HORIZON_MAX_AGE_NS, 64));
    /* nothing outstanding: age is meaningless */
    CHECK(!specx_horizon_should_park(0, old, 64));
}

static void test_byte_bound(void)
{
    CHECK(!specx_horizon_over_bytes(0, 1u << 20, 0));          /* no bound */
    CHECK(!specx_horizon_over_bytes(1u << 30, 1u << 20, 0));
    CHECK(!specx_horizon_over_bytes(0, 8u << 20, 2u << 20));   /* one may always go */
    CHECK(!specx_horizon_over_bytes(1u << 20, 1u << 20, 2u << 20));
    CHECK(specx_horizon_over_bytes(1u << 20, (1u << 20) + 1, 2u << 20));
    CHECK(specx_horizon_memcg_bytes(0) == 0);                  /* no group, no bound */
    CHECK(specx_horizon_memcg_bytes(16u << 20) == 2u << 20);
}

static void test_pages_spanned(void)
{
    CHECK(specx_pages_spanned(0, 0) == 0);
    CHECK(specx_pages_spanned(0, 1) == 1);
    CHECK(specx_pages_spanned(0, 4096) == 1);
    CHECK(specx_pages_spanned(0, 4097) == 2);
    CHECK(specx_pages_spanned(4095, 2) == 2);
    CHECK(specx_pages_spanned(8192, 8192) == 2);
}

static void test_clamp_to_eof(void)
{
    CHECK(specx_clamp_to_eof(0, 100, 50) == 50);
    CHECK(specx_clamp_to_eof(10, 20, 50) == 20);
    CHECK(specx_clamp_to_eof(50, 20, 50) == 0);
    CHECK(specx_clamp_to_eof(60, 20, 50) == 0);
}

int main(void)
{
    test_count_bound();
    test_time_bound();
    test_byte_bound();
    test_pages_spanned();
    test_clamp_to_eof();
    puts("ok");
    return check_status();
}
