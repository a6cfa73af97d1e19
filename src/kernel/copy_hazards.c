/* See copy_hazards.h. */
#include "kernel/copy_hazards.h"

#include <stdio.h>

#include "kernel/cgroup.h"
#include "kernel/kfile.h"

int specx_status_seccomp(const char *text)
{
    uint64_t mode;
    if (!specx_kfile_key_u64(text, "Seccomp:", &mode) || mode > 2)
        return -1;
    return (int)mode;
}

bool specx_pids_too_close(uint64_t current, uint64_t max)
{
    if (max == UINT64_MAX)
        return false;
    uint64_t room = max / 8 > SPECX_PIDS_ROOM_MIN ? max / 8 : SPECX_PIDS_ROOM_MIN;
    return current + room >= max;
}

bool specx_oom_group_set(const char *text)
{
    uint64_t v;
    return specx_kfile_parse_u64(text, &v) && v != 0;
}

int specx_seccomp_mode(pid_t pid, pid_t tid)
{
    char path[64], text[4096];
    if (tid == 0)
        snprintf(path, sizeof path, "/proc/thread-self/status");
    else
        snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, (int)tid);
    if (specx_kfile_read(path, text, sizeof text) <= 0)
        return -1;
    return specx_status_seccomp(text);
}

bool specx_oom_group_above(struct specx_cgroup cg)
{
    if (cg.version != SPECX_CG_V2)
        return false;
    do {
        char text[32];
        if (specx_cgroup_read(&cg, "memory.oom.group", text, sizeof text) > 0 &&
            specx_oom_group_set(text))
            return true;
    } while (specx_cgroup_parent(&cg, &cg));
    return false;
}

bool specx_pids_short_above(struct specx_cgroup cg)
{
    do {
        uint64_t current, max;
        if (specx_cgroup_u64(&cg, "pids.max", &max) &&
            specx_cgroup_u64(&cg, "pids.current", &current) &&
            specx_pids_too_close(current, max))
            return true;
    } while (specx_cgroup_parent(&cg, &cg));
    return false;
}

void specx_copy_groups_find(pid_t pid, struct specx_copy_groups *g)
{
    g->memory_v2 = specx_cgroup_of(pid, "memory", &g->memory_group) == 0 &&
                   g->memory_group.version == SPECX_CG_V2;
    g->pids = specx_cgroup_of(pid, "pids", &g->pids_group) == 0;
}

enum specx_hazard specx_copy_hazard(const struct specx_copy_groups *g, pid_t pid, pid_t tid)
{
    int seccomp = specx_seccomp_mode(pid, tid);
    if (seccomp != 0)
        return seccomp < 0 ? SPECX_HAZARD_UNKNOWN : SPECX_HAZARD_SECCOMP;
    if (g->memory_v2 && specx_oom_group_above(g->memory_group))
        return SPECX_HAZARD_OOM_GROUP;
    if (g->pids && specx_pids_short_above(g->pids_group))
        return SPECX_HAZARD_PIDS_MAX;
    return SPECX_HAZARD_NONE;
}
