/* The shape of speculative prefetches (src/run/runtime/policy/prefetch.h): a random read is
 * prefetched as it is, a sequential one to the next chunk boundary (never past EOF), and a long
 * range is cut into calls of at most one chunk, aligned after the first. */
#include <stdio.h>

#include "check.h"
#include "run/runtime/policy/prefetch.h"

#define CHUNK SPECX_PREFETCH_CHUNK

static void test_random_read_is_prefetched_as_it_is(void)
{
    CHECK(specx_prefetch_end(false, 4096, 1u << 30) == 4096);
    CHECK(specx_prefetch_end(false, CHUNK + 4096, 1u << 30) == CHUNK + 4096);
}

static void test_sequential_read_reaches_the_next_chunk_boundary(void)
{
    CHECK(specx_prefetch_end(true, 4096, 1u << 30) == CHUNK);
    CHECK(specx_prefetch_end(true, CHUNK, 1u << 30) == CHUNK); /* already on a boundary */
    CHECK(specx_prefetch_end(true, CHUNK + 1, 1u << 30) == 2 * CHUNK);
    /* a small file read from its start is fetched whole, and never past its end */
    CHECK(specx_prefetch_end(true, 4096, 100000) == 100000);
}

/* Cuts [off, end) as specx_start_read does; checks coverage and the calls' shape. */
static void check_calls(uint64_t off, uint64_t end, unsigned expected_calls)
{
    unsigned calls = 0;
    for (uint64_t pos = off; pos < end; calls++) {
        uint64_t n = specx_prefetch_call_len(pos, end);
        CHECK(n > 0 && n <= CHUNK);
        if (calls > 0)
            CHECK(pos % CHUNK == 0); /* every call after the first starts aligned */
        pos += n;
        CHECK(pos <= end);
    }
    CHECK(calls == expected_calls);
}

static void test_calls(void)
{
    check_calls(4096, 4096 + CHUNK, 1);         /* one chunk's worth: one call, as it is */
    check_calls(0, 3 * CHUNK, 3);
    check_calls(4096, 4096 + 2 * CHUNK, 3);     /* 124 KiB, 128 KiB, 4 KiB */
    check_calls(100, 200, 1);
}

int main(void)
{
    test_random_read_is_prefetched_as_it_is();
    test_sequential_read_reaches_the_next_chunk_boundary();
    test_calls();
    puts("ok");
    return check_status();
}
