/* Serving the supervisor's copy's notified calls (docs/design/supervisor.md): its reads become
 * prefetches (Fraser & Chang 2003 §4.1.2: data in memory is copied into the copy, data that
 * is not is prefetched and the read returns as if done), at the copy's own offsets; its opens
 * are checked as the runtime's open trap checks them (§4.1.1) and handed over read-only. */
#ifndef SPECX_SERVE_H
#define SPECX_SERVE_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>

#include "run/supervisor/counts.h"
#include "run/supervisor/outside_copy.h"
#include "run/supervisor/predictions.h"

struct served_copy {
    struct outside_copy oc;
    bool dry;               /* predicts only (policy/trust.h) */
    uint64_t read;          /* bytes its reads returned so far */
    struct prediction_log log;
    unsigned horizon;       /* prefetches it may have outstanding */
    uint64_t memcg_bytes;   /* and bytes, in a memory cgroup (policy/horizon.h); 0: no bound */
    struct serve_counts *counts;
};

/* Answers REQ, a call of copy C. False if C must first wait for the program (its horizon is
 * full): REQ is left unanswered, to be served again later. */
bool serve_call(struct served_copy *c, const struct seccomp_notif *req);

#endif
