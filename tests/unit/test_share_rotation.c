/* specx share's scheduler: whose turn is next (src/share/rotation.c). */
#include "check.h"
#include "share/rotation.h"

static void round_robin(void)
{
    struct share_slot s[4] = { { true, 0 }, { true, 0 }, { false, 0 }, { true, 0 } };
    CHECK(share_next_job(SCHEDULER_RR, s, 4, SIZE_MAX) == 0);
    CHECK(share_next_job(SCHEDULER_RR, s, 4, 0) == 1);
    CHECK(share_next_job(SCHEDULER_RR, s, 4, 1) == 3); /* 2 has ended */
    CHECK(share_next_job(SCHEDULER_RR, s, 4, 3) == 0); /* around */
    struct share_slot alone[2] = { { true, 0 }, { false, 0 } };
    CHECK(share_next_job(SCHEDULER_RR, alone, 2, 0) == 0); /* the last job goes on */
    struct share_slot none[2] = { { false, 0 }, { false, 0 } };
    CHECK(share_next_job(SCHEDULER_RR, none, 2, 0) == SIZE_MAX);
    CHECK(share_turn_ns(SCHEDULER_RR, 100, 3) == 100);
}

static void feedback_queue(void)
{
    struct share_slot s[3] = { { true, 0 }, { true, 0 }, { true, 0 } };
    /* Job 0 used its whole turn: it drops a level, and the others (level 0) come first. */
    share_after_turn(SCHEDULER_MLFQ, &s[0], true);
    CHECK(s[0].level == 1);
    CHECK(share_next_job(SCHEDULER_MLFQ, s, 3, 0) == 1);
    share_after_turn(SCHEDULER_MLFQ, &s[1], false); /* ended its turn early: stays */
    CHECK(s[1].level == 0);
    CHECK(share_next_job(SCHEDULER_MLFQ, s, 3, 1) == 2);
    CHECK(share_next_job(SCHEDULER_MLFQ, s, 3, 2) == 1); /* level 0 before job 0 */
    s[1].runnable = s[2].runnable = false;
    CHECK(share_next_job(SCHEDULER_MLFQ, s, 3, 2) == 0);
    CHECK(share_turn_ns(SCHEDULER_MLFQ, 100, 2) == 400);
    for (int i = 0; i < 10; i++)
        share_after_turn(SCHEDULER_MLFQ, &s[0], true);
    CHECK(s[0].level == SHARE_MLFQ_LEVELS - 1);
    share_after_turn(SCHEDULER_RR, &s[1], true); /* round robin keeps no levels */
    CHECK(s[1].level == 0);
}

int main(void)
{
    round_robin();
    feedback_queue();
    return check_status();
}
