/* How the background's receive side yields (Eggert 2002 ch. 4: what arrives has already
 * crossed the bottleneck, so the only lever is the sender's, and the one every sender obeys,
 * whatever its congestion control, is the receive window). When the foreground receives on a
 * busy link, the window of the background's connections is clamped to a few segments; if the
 * link is still busy a sample later, the background is held (frozen): it reads nothing, its
 * buffers fill and its windows close, so its senders stop. When the foreground is quiet the
 * hold ends (the first read reopens each window at once) and the clamp doubles until it is
 * gone. Pure logic, unit-tested; net_receive.c acts. */
#ifndef IDLE_RECV_POLICY_H
#define IDLE_RECV_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* The clamp (three full segments: the sender keeps its ACK clock), and the most it grows to
 * before it is lifted. */
#define IDLE_RECV_LEAST_BYTES 4344u
#define IDLE_RECV_MOST_BYTES (8u << 20)

struct idle_recv_state {
    uint32_t clamp; /* bytes; 0: none */
    bool hold;      /* the background frozen */
};

/* One sample: the foreground received FG_BPS and the link carried TOTAL_BPS inwards, of
 * CAPACITY_BPS. Returns the new state. */
struct idle_recv_state idle_recv_step(struct idle_recv_state s, uint64_t fg_bps,
                                      uint64_t total_bps, uint64_t capacity_bps);

#endif
