/* See freezer.h. */
#include "kernel/freezer.h"

#include <errno.h>
#include <string.h>
#include <time.h>

int specx_freezer_set(const struct specx_cgroup *cg, bool frozen)
{
    if (cg->version == SPECX_CG_V1)
        return specx_cgroup_write(cg, "freezer.state", frozen ? "FROZEN\n" : "THAWED\n");
    return specx_cgroup_write(cg, "cgroup.freeze", frozen ? "1\n" : "0\n");
}

bool specx_freezer_is_frozen(const struct specx_cgroup *cg)
{
    char state[32];
    uint64_t frozen;
    if (cg->version == SPECX_CG_V1)
        return specx_cgroup_read(cg, "freezer.state", state, sizeof state) > 0 &&
               strncmp(state, "FROZEN", 6) == 0;
    return specx_cgroup_key_u64(cg, "cgroup.events", "frozen", &frozen) && frozen == 1;
}

int specx_freezer_wait(const struct specx_cgroup *cg, bool frozen, int timeout_ms)
{
    const struct timespec pause = { 0, 2 * 1000 * 1000 };
    for (int waited = 0;; waited += 2) {
        if (specx_freezer_is_frozen(cg) == frozen)
            return 0;
        if (waited >= timeout_ms) {
            errno = ETIMEDOUT;
            return -1;
        }
        nanosleep(&pause, NULL);
    }
}
