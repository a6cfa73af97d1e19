/* The background's receive side yields to the foreground's (recv_policy.h says how: its
 * receive window, then a hold). Every sample: what the interfaces queued on received, what the
 * background's TCP connections received (tcp_info of each, reached through pidfd_getfd), the
 * foreground's share the difference; the clamp then set on each of the background's
 * connections (TCP_WINDOW_CLAMP, SO_RCVBUF). Only with --net-rate: the link's capacity is what
 * says it is busy. */
#ifndef IDLE_NET_RECEIVE_H
#define IDLE_NET_RECEIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/cgroup.h"
#include "idle/hold.h"
#include "idle/net_queue.h"
#include "idle/recv_policy.h"

struct idle_net_receive {
    bool enabled;
    const struct specx_cgroup *group;   /* the background's processes */
    const struct idle_net_queue *queue; /* its interfaces and their rate */
    uint64_t capacity_bps;              /* what they can receive, all together */
    struct idle_hold *hold;
    uint64_t last_ns, last_link_bytes, last_bg_bytes;
    bool bg_counted;                    /* last_bg_bytes is from the last sample */
    uint32_t most_window;               /* what an unclamped connection may offer */
    struct idle_recv_state state;
    /* What it did, for the report. */
    unsigned clamps, holds;
    uint64_t clamped_ns, held_ns;
};

/* Starts watching if QUEUE has interfaces at a rate; else stays off. Each receives at
 * DOWN_BPS, or at its queue's rate if that is 0 (a link as fast both ways). */
void idle_net_receive_start(struct idle_net_receive *r, const struct specx_cgroup *group,
                            const struct idle_net_queue *queue, uint64_t down_bps,
                            struct idle_hold *hold, uint64_t now_ns);

/* One sample (every IDLE_SAMPLE_NS) and the clamp that follows. */
void idle_net_receive_tick(struct idle_net_receive *r, uint64_t now_ns);

/* Lifts the clamp and the hold for good (the deadline, or the end). */
void idle_net_receive_stop(struct idle_net_receive *r, uint64_t now_ns);

#endif
