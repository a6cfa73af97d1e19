/* How the background's receive side yields (src/idle/recv_policy.c). */
#include "check.h"
#include "idle/recv_policy.h"

#define MBIT 1000000ull

static struct idle_recv_state step(struct idle_recv_state s, uint64_t fg, uint64_t total)
{
    return idle_recv_step(s, fg * MBIT, total * MBIT, 50 * MBIT);
}

static void clamped_then_held_while_the_foreground_receives_on_a_busy_link(void)
{
    struct idle_recv_state s = step((struct idle_recv_state){ 0 }, 10, 50);
    CHECK(s.clamp == IDLE_RECV_LEAST_BYTES && !s.hold);
    s = step(s, 40, 48); /* still busy with the clamp: held */
    CHECK(s.clamp == IDLE_RECV_LEAST_BYTES && s.hold);
    s = step(s, 48, 48);
    CHECK(s.hold);
}

static void room_left_lets_it_run_clamped(void)
{
    struct idle_recv_state s = { .clamp = IDLE_RECV_LEAST_BYTES, .hold = true };
    s = step(s, 30, 34); /* a foreground that does not fill the link */
    CHECK(!s.hold && s.clamp == IDLE_RECV_LEAST_BYTES);
}

static void a_trickle_or_an_idle_link_changes_nothing(void)
{
    CHECK(step((struct idle_recv_state){ 0 }, 1, 50).clamp == 0);  /* a trickle */
    CHECK(step((struct idle_recv_state){ 0 }, 20, 30).clamp == 0); /* room left */
}

static void released_then_lifted_by_doublings_when_the_foreground_is_quiet(void)
{
    struct idle_recv_state s = { .clamp = IDLE_RECV_LEAST_BYTES, .hold = true };
    s = step(s, 0, 2);
    CHECK(!s.hold && s.clamp == 2 * IDLE_RECV_LEAST_BYTES);
    int steps = 1;
    while (s.clamp && steps < 100) {
        s = step(s, 0, 49);
        steps++;
    }
    CHECK(s.clamp == 0 && steps <= 12);
}

int main(void)
{
    clamped_then_held_while_the_foreground_receives_on_a_busy_link();
    room_left_lets_it_run_clamped();
    a_trickle_or_an_idle_link_changes_nothing();
    released_then_lifted_by_doublings_when_the_foreground_is_quiet();
    return check_status();
}
