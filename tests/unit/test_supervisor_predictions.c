/* The supervisor's prefetch log (src/run/supervisor/predictions.h): how the program's progress,
 * seen from outside, reaches its copy's records. */
#include <stdio.h>

#include "check.h"
#include "run/supervisor/predictions.h"

static struct prediction_log log_of_three(void)
{
    static struct prediction_log l;
    predictions_reset(&l);
    /* file 7 read from its start, then file 8: the copy had read 0, 4096 and 12288 bytes */
    CHECK(predictions_add(&l, (struct prediction){ 7, 0, 4096, 0, 100 }));
    CHECK(predictions_add(&l, (struct prediction){ 7, 4096, 8192, 4096, 200 }));
    CHECK(predictions_add(&l, (struct prediction){ 8, 0, 4096, 12288, 300 }));
    return l;
}

static void test_the_program_s_reads_reach_records(void)
{
    struct prediction_log l = log_of_three();
    CHECK(predictions_outstanding(&l) == 3);
    CHECK(predictions_oldest_age(&l, 1100) == 1000);
    predictions_pass_read(&l, 0);       /* the first was made before the copy read anything */
    CHECK(l.passed == 1);
    predictions_pass_read(&l, 4095);
    CHECK(l.passed == 1);
    predictions_pass_read(&l, 20000);
    CHECK(l.passed == 3 && predictions_outstanding(&l) == 0);
    CHECK(predictions_oldest_age(&l, 5000) == 0);
}

static void test_a_stall_inside_a_record_is_predicted(void)
{
    struct prediction_log l = log_of_three();
    CHECK(predictions_stalled_at(&l, 7, 8191));
    CHECK(l.passed == 1);               /* the one it waits for is not passed yet */
    CHECK(!predictions_stalled_at(&l, 7, 12288)); /* past the end of file 7's records */
    CHECK(!predictions_stalled_at(&l, 9, 0));
    CHECK(predictions_stalled_at(&l, 8, 0) && l.passed == 2);
    CHECK(predictions_stalled_at(&l, 7, 0) && l.passed == 2); /* a re-read never moves back */
}

static void test_a_full_log_refuses(void)
{
    static struct prediction_log l;
    predictions_reset(&l);
    for (unsigned i = 0; i < PREDICTIONS_MAX; i++)
        CHECK(predictions_add(&l, (struct prediction){ 1, i, 1, i, 0 }));
    CHECK(!predictions_add(&l, (struct prediction){ 1, 0, 1, 0, 0 }));
}

int main(void)
{
    test_the_program_s_reads_reach_records();
    test_a_stall_inside_a_record_is_predicted();
    test_a_full_log_refuses();
    puts("ok");
    return check_status();
}
