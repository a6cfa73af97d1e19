/* Where the background's packets wait (Eggert 2002 ch. 4): an HTB qdisc (handle 1de0:) at the
 * root of each interface the traffic leaves by, at the rate of the bottleneck, whose
 * background class (prio 7, a token rate) gets only what the foreground's class (prio 0, the
 * default) leaves. This kernel has HTB but no prio qdisc, netem or TCP-LP. Runs of specx idle
 * on one interface share the qdisc; the last one removes it (the kernel puts back the
 * interface's default), and a run killed outright leaves it to the next run's sweep. A run is
 * one of an interface's users while it holds the lock (flock) on its entry in the registry
 * (/run/specx-idle/net, root's), whatever its pid looks like from another pid namespace. */
#ifndef IDLE_NET_QUEUE_H
#define IDLE_NET_QUEUE_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDLE_NET_MAX_DEVS 8

struct idle_net_dev {
    char name[IF_NAMESIZE];
    uint64_t rate_bps;   /* the bottleneck's rate the qdisc shapes to, bits per second */
    char entry[32];      /* this run's entry in the registry of the interface's users */
    int entry_fd;        /* that entry, locked while the run lives */
};

struct idle_net_queue {
    struct idle_net_dev devs[IDLE_NET_MAX_DEVS];
    size_t n;
    bool stopped;        /* left: the devices stay listed for the report */
    char why[512];       /* interfaces left alone, and why (empty if none) */
};

/* Queues on DEV (NULL: the interfaces of the default routes) at RATE_BPS; with no rate,
 * nowhere: a qdisc at a link's own speed orders nothing where the bottleneck is further on,
 * and costs a fast multi-queue interface its queues. Interfaces that cannot be used are
 * skipped and named in q->why. */
void idle_net_queue_start(struct idle_net_queue *q, const char *dev, uint64_t rate_bps);

/* The background's class gets the foreground's priority and rate (the deadline's promotion). */
void idle_net_queue_promote(const struct idle_net_queue *q);

/* Leaves the qdiscs; the last run on an interface removes its qdisc. Safe to call twice. */
void idle_net_queue_stop(struct idle_net_queue *q);

/* In the command's process, before exec: lets go of its copies of the registry entries'
 * locks (see idle_groups_drop_locks). */
void idle_net_queue_drop_locks(struct idle_net_queue *q);

/* Removes the qdiscs of this network namespace that only runs killed outright still held. */
void idle_net_queue_sweep(void);

#endif
