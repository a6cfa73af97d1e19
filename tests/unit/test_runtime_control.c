/* The prefetch log shared by a program and its speculative process
 * (src/run/runtime/core/control.c): which prefetches a read consumes, and how the horizon moves. */
#include <stdio.h>

#include "check.h"
#include "run/runtime/core/control.h"

/* The program thread that reads (pthread_self in the read path). */
#define READER 1ul

static struct specx_control *fresh(void)
{
    struct specx_control *ctl = specx_control_create();
    CHECK(ctl);
    return ctl;
}

static void test_consume_matches_file_and_range(void)
{
    struct specx_control *ctl = fresh();
    specx_log_prefetch(&ctl->stream[0], 1, 10, 0, 4096, 0, false);
    specx_log_prefetch(&ctl->stream[0], 1, 11, 0, 4096, 0, false);
    CHECK(specx_log_consume(ctl, READER, 1, 12, 0, 4096) == 0);    /* other file */
    CHECK(specx_log_consume(ctl, READER, 2, 10, 0, 4096) == 0);    /* other device */
    CHECK(specx_log_consume(ctl, READER, 1, 10, 4096, 100) == 0);  /* past the range */
    CHECK(specx_log_consume(ctl, READER, 1, 10, 4000, 100) == 1);  /* overlaps */
    CHECK(specx_log_consume(ctl, READER, 1, 10, 0, 4096) == 0);    /* consumed only once */
}

static void test_consume_moves_horizon_past_earlier_records(void)
{
    struct specx_control *ctl = fresh();
    for (uint64_t ino = 0; ino < 5; ino++)
        specx_log_prefetch(&ctl->stream[0], 1, ino, 0, 100, 0, false);
    CHECK(ctl->stream[0].issued == 5 && ctl->stream[0].passed == 0);
    CHECK(specx_log_consume(ctl, READER, 1, 2, 0, 1) == 1);
    CHECK(ctl->stream[0].passed == 3); /* records 0..2 are behind the program now */
    CHECK(specx_log_consume(ctl, READER, 1, 0, 0, 1) == 1); /* late reads still count as used */
    CHECK(ctl->stream[0].passed == 3);
}

/* A copy that has reported every step of its start already: the program does not wait. */
static void start_copy(struct specx_control *ctl)
{
    struct specx_stream_ctl *first = &ctl->stream[0];
    first->generation = first->detached = first->snapshot = first->ready = 1;
    const struct specx_start_wait wait = { .timeout_ns = 1000000000ull, .snapshot = true };
    CHECK(specx_control_start(&ctl->stream[0], ctl->stream[0].issued, &wait).ready == 1);
}

static void test_a_new_copy_inherits_nothing_outstanding(void)
{
    struct specx_control *ctl = fresh();
    specx_log_prefetch(&ctl->stream[0], 1, 1, 0, 100, 0, false);
    specx_log_prefetch(&ctl->stream[0], 1, 2, 0, 100, 0, false);
    start_copy(ctl);
    CHECK(ctl->stream[0].issued - ctl->stream[0].passed == 0);
    /* the old records can still be matched */
    CHECK(specx_log_consume(ctl, READER, 1, 2, 50, 10) == 1);
}

static void test_window_forgets_old_records(void)
{
    struct specx_control *ctl = fresh();
    specx_log_prefetch(&ctl->stream[0], 9, 9, 0, 100, 0, false);
    for (unsigned i = 0; i < SPECX_LOG_SIZE; i++)
        specx_log_prefetch(&ctl->stream[0], 1, 1000 + i, 0, 100, 0, false);
    CHECK(specx_log_consume(ctl, READER, 9, 9, 0, 100) == 0);
    CHECK(specx_log_consume(ctl, READER, 1, 1000 + SPECX_LOG_SIZE - 1, 0, 100) == 1);
}

static void test_horizon_wait_returns_when_allowed(void)
{
    struct specx_control *ctl = fresh();
    specx_log_prefetch(&ctl->stream[0], 1, 1, 0, 100, 0, false);
    start_copy(ctl);
    specx_horizon_wait(&ctl->stream[0], 1, 4096, 1); /* nothing outstanding: must not block */
}

static void test_tally_counts_read_and_passed_records(void)
{
    struct specx_control *ctl = specx_control_create();
    CHECK(ctl);
    for (uint64_t ino = 1; ino <= 4; ino++)
        specx_log_prefetch(&ctl->stream[0], 1, ino, 0, 4096, 0, true);
    struct specx_log_view v;
    CHECK(specx_log_consume_at_stall(ctl, READER, 1, 2, 0, 100, 0, 0, &v) == 0); /* dry: no prefetches */
    CHECK(v.from == 0 && v.predicted);
    CHECK(v.on_track.hits == 1 && v.on_track.misses == 1); /* ino 1 passed; 3, 4 not reached */
    CHECK(v.diverged.hits == 1 && v.diverged.misses == 3);
    CHECK(specx_log_view(&ctl->stream[0], 2, 1, 2, 0, 10).diverged.hits == 0); /* a later copy's records */
    CHECK(specx_log_view(&ctl->stream[0], 0, 1, 2, 4000, 10).predicted);
    CHECK(!specx_log_view(&ctl->stream[0], 0, 1, 3, 0, 10).predicted); /* logged but not read */
    CHECK(!specx_log_view(&ctl->stream[0], 2, 1, 2, 0, 10).predicted); /* an earlier copy's record */
}

static void test_pending_predictions_are_not_logged_twice(void)
{
    struct specx_control *ctl = specx_control_create();
    CHECK(ctl);
    specx_log_prefetch(&ctl->stream[0], 1, 7, 8192, 8192, 0, true);
    CHECK(specx_log_pending(&ctl->stream[0], 1, 7, 8192, 4096));
    CHECK(!specx_log_pending(&ctl->stream[0], 1, 7, 12288, 8192)); /* only partly predicted */
    CHECK(!specx_log_pending(&ctl->stream[0], 1, 8, 8192, 4096));  /* another file */
    specx_log_consume(ctl, READER, 1, 7, 8192, 100);
    CHECK(!specx_log_pending(&ctl->stream[0], 1, 7, 8192, 4096)); /* read: predicting it again is new */
}

/* A read consumes the records of every copy's stream, and each stream counts whether the
 * copy's own thread read them or another did (copy.c tells a pool from threads with streams of
 * their own by it). */
static void test_a_read_consumes_every_streams_records_and_says_whose_thread_read(void)
{
    struct specx_control *ctl = fresh();
    ctl->stream[0].owner = READER;
    ctl->stream[2].owner = READER + 1;
    specx_log_prefetch(&ctl->stream[0], 1, 5, 0, 4096, 0, false);
    specx_log_prefetch(&ctl->stream[2], 1, 6, 0, 4096, 0, false);
    specx_log_prefetch(&ctl->stream[2], 1, 7, 0, 4096, 0, true);
    CHECK(specx_log_consume(ctl, READER, 1, 5, 0, 10) == 1);
    CHECK(specx_log_consume(ctl, READER, 1, 6, 0, 10) == 1);
    CHECK(specx_log_consume(ctl, READER + 1, 1, 7, 0, 10) == 0); /* a prediction */
    CHECK(ctl->stream[0].owner_read == 1 && ctl->stream[0].others_read == 0);
    CHECK(ctl->stream[2].owner_read == 1 && ctl->stream[2].others_read == 1);
    CHECK(ctl->stream[0].passed == 1 && ctl->stream[2].passed == 2); /* each its own horizon */
}

int main(void)
{
    test_consume_matches_file_and_range();
    test_consume_moves_horizon_past_earlier_records();
    test_a_new_copy_inherits_nothing_outstanding();
    test_window_forgets_old_records();
    test_horizon_wait_returns_when_allowed();
    test_tally_counts_read_and_passed_records();
    test_pending_predictions_are_not_logged_twice();
    test_a_read_consumes_every_streams_records_and_says_whose_thread_read();
    puts("ok");
    return check_status();
}
