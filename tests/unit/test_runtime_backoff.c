/* Back-off and retirement of a process's copies (src/run/runtime/policy/backoff.c). */
#include "check.h"
#include "run/runtime/policy/backoff.h"
#include "common/stats_layout.h"

/* Stalls on (dev, ino) that pass without a copy before one is allowed again. */
static unsigned skipped(uint64_t dev, uint64_t ino)
{
    unsigned n = 0;
    while (specx_backoff_skip(dev, ino) && n < 1000)
        n++;
    return n;
}

static void test_useless_copies_double_the_backoff_up_to_64(void)
{
    specx_backoff_reset();
    CHECK(skipped(1, 1) == 0); /* no history: a copy at the first stall */
    unsigned expect[] = { 1, 2, 4 };
    for (unsigned i = 0; i < 3; i++) {
        specx_backoff_judged(1, 1, false);
        CHECK(skipped(1, 1) == expect[i]);
    }
    specx_backoff_judged(1, 1, true); /* one useful copy: no back-off */
    CHECK(skipped(1, 1) == 0);
    specx_backoff_reset();
    for (unsigned i = 0; i < 7; i++) {
        specx_backoff_judged(1, 1, false);
        specx_backoff_judged(2, 2, true); /* keeps the process from retiring */
    }
    CHECK(skipped(1, 1) == 64);
}

static void test_a_file_without_history_follows_the_process(void)
{
    specx_backoff_reset();
    specx_backoff_judged(1, 1, false);
    specx_backoff_judged(1, 1, false);
    CHECK(skipped(9, 9) == 2); /* the process's back-off, that of the last judged copy */
    CHECK(skipped(1, 1) == 2); /* file 1 keeps its own */
}

static void test_useless_copies_in_a_row_retire_the_process(void)
{
    specx_backoff_reset();
    for (unsigned i = 1; i < SPECX_RETIRE_AFTER; i++)
        CHECK(!specx_backoff_judged(i, i, false));
    CHECK(!specx_backoff_retired());
    CHECK(specx_backoff_judged(99, 99, false)); /* the eighth in a row: retired now */
    CHECK(specx_backoff_retired());
    CHECK(specx_backoff_skip(1234, 5)); /* every stall, any file */
    specx_backoff_reset(); /* a forked child starts afresh */
    CHECK(!specx_backoff_retired());
}

static void test_a_useful_copy_restarts_the_count(void)
{
    specx_backoff_reset();
    for (unsigned i = 1; i < SPECX_RETIRE_AFTER; i++)
        specx_backoff_judged(1, 1, false);
    specx_backoff_judged(1, 1, true);
    for (unsigned i = 1; i < SPECX_RETIRE_AFTER; i++)
        CHECK(!specx_backoff_judged(1, 1, false));
    CHECK(!specx_backoff_retired());
}

/* would_skip answers what skip will after the judgment, and changes nothing: checked against
 * the real sequence over a history of files, useful and useless copies, and retirement. */
static void test_would_skip_foretells_skip_after_a_judgment(void)
{
    specx_backoff_reset();
    for (unsigned step = 0; step < 40; step++) {
        struct specx_judgment j = { step % 3, step % 3, step < 10 && step % 5 == 0 };
        uint64_t file = (step * 7) % 4;
        CHECK(specx_backoff_would_skip(file, file, NULL) ==
              specx_backoff_would_skip(file, file, NULL)); /* asking twice changes nothing */
        bool foretold = specx_backoff_would_skip(file, file, &j);
        specx_backoff_judged(j.dev, j.ino, j.useful);
        CHECK(specx_backoff_would_skip(file, file, NULL) == foretold);
        CHECK(specx_backoff_skip(file, file) == foretold);
    }
    CHECK(specx_backoff_retired());
}

/* settle is judged, then skip: the same back-off, the same retirement, over the same history
 * as the two calls made one after the other. */
static void test_settle_is_a_judgment_then_a_skip(void)
{
    unsigned skips_after_settle[40], skips_after_pair[40];
    bool retired_by_settle[40], retired_by_pair[40];
    for (int way = 0; way < 2; way++) {
        specx_backoff_reset();
        for (unsigned step = 0; step < 40; step++) {
            struct specx_judgment j = { step % 3, step % 3, step < 10 && step % 5 == 0 };
            uint64_t file = (step * 7) % 4;
            bool passes = step % 2 == 0;
            const struct specx_judgment *judged = step % 4 == 3 ? NULL : &j;
            if (way == 0) {
                retired_by_settle[step] = specx_backoff_settle(judged, file, file, passes);
                skips_after_settle[step] = specx_backoff_would_skip(file, file, NULL);
            } else {
                retired_by_pair[step] = judged && specx_backoff_judged(j.dev, j.ino, j.useful);
                if (passes)
                    specx_backoff_skip(file, file);
                skips_after_pair[step] = specx_backoff_would_skip(file, file, NULL);
            }
        }
    }
    for (unsigned step = 0; step < 40; step++)
        CHECK(retired_by_settle[step] == retired_by_pair[step] &&
              skips_after_settle[step] == skips_after_pair[step]);
    CHECK(specx_backoff_retired());
}

int main(void)
{
    test_settle_is_a_judgment_then_a_skip();
    test_would_skip_foretells_skip_after_a_judgment();
    test_useless_copies_double_the_backoff_up_to_64();
    test_a_file_without_history_follows_the_process();
    test_useless_copies_in_a_row_retire_the_process();
    test_a_useful_copy_restarts_the_count();
    return check_status();
}
