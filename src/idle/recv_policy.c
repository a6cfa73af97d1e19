/* See recv_policy.h. */
#include "idle/recv_policy.h"

struct idle_recv_state idle_recv_step(struct idle_recv_state s, uint64_t fg_bps,
                                      uint64_t total_bps, uint64_t capacity_bps)
{
    /* The foreground counts as receiving from a twentieth of the link: less is a trickle
     * (a terminal, a poll) that a full link still serves without delay worth the name. */
    bool fg_active = fg_bps * 20 >= capacity_bps;
    bool busy = total_bps * 10 >= capacity_bps * 9;
    if (fg_active && busy)
        return (struct idle_recv_state){ .clamp = IDLE_RECV_LEAST_BYTES, .hold = s.clamp != 0 };
    if (fg_active) /* room left: the background keeps the clamp it has, and runs */
        return (struct idle_recv_state){ .clamp = s.clamp };
    if (s.clamp == 0 || s.clamp >= IDLE_RECV_MOST_BYTES / 2)
        return (struct idle_recv_state){ 0 };
    return (struct idle_recv_state){ .clamp = s.clamp * 2 };
}
