/* See groups.h. */
#include "idle/groups.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "kernel/cgroup_sweep.h"
#include "common/util.h"

#define PREFIX "specx-idle"
/* How long the groups may take to empty once what is left in them is killed. */
#define EMPTY_TIMEOUT_MS 5000

/* Makes this run's group for CONTROLLER in G; false (G untouched) where there is none. */
static bool make_one(const char *controller, struct idle_group *g)
{
    struct specx_cgroup parent;
    char name[64];
    snprintf(name, sizeof name, PREFIX "-%d", (int)getpid());
    if (specx_cgroup_parent_for(controller, &parent) < 0 ||
        specx_cgroup_make(&parent, name, controller, &g->cg) < 0)
        return false;
    g->made = true;
    /* Held until we end, however: a sweep by another run leaves the group alone meanwhile. */
    g->lock_fd = specx_cgroup_hold(&g->cg);
    return true;
}

/* cpu.idle (v1 and v2 since Linux 5.15) gives the group's tasks the weight of SCHED_IDLE
 * tasks against everyone else's groups; older kernels get the least weight there is. */
static const char *make_cpu_idle(const struct specx_cgroup *cpu)
{
    if (specx_cgroup_write(cpu, "cpu.idle", "1\n") == 0)
        return "cpu.idle";
    if (cpu->version == SPECX_CG_V1)
        return specx_cgroup_write(cpu, "cpu.shares", "2\n") == 0 ? "cpu.shares 2" : NULL;
    return specx_cgroup_write(cpu, "cpu.weight", "1\n") == 0 ? "cpu.weight 1" : NULL;
}

int idle_groups_make(struct idle_groups *g, char *err, size_t errsize)
{
    *g = (struct idle_groups){ 0 };
    if (!make_one("memory", &g->mem)) {
        int e = errno;
        idle_groups_destroy(g);
        return specx_format_error(err, errsize, "cannot make a memory cgroup for CMD: %s",
                                  strerror(e));
    }
    if (g->mem.cg.version == SPECX_CG_V2) {
        /* One group does everything; the CPU controller is used where it can be delegated. */
        g->psi = g->freeze = &g->mem.cg;
        struct specx_cgroup parent = g->mem.cg;
        *strrchr(parent.dir, '/') = '\0';
        if (specx_cgroup_write(&parent, "cgroup.subtree_control", "+cpu\n") == 0)
            g->cpu_setting = make_cpu_idle(&g->mem.cg);
        return 0;
    }
    if (make_one("cpu", &g->cpu))
        g->cpu_setting = make_cpu_idle(&g->cpu.cg);
    if (g->cpu.made && g->cpu.cg.version == SPECX_CG_V2) /* the v2 group it is in already */
        g->psi = g->freeze = &g->cpu.cg;
    else if (make_one(SPECX_CG_CORE, &g->core))
        g->psi = g->freeze = &g->core.cg;
    else if (make_one("freezer", &g->frz))
        g->freeze = &g->frz.cg;
    return 0;
}

int idle_groups_attach(const struct idle_groups *g, pid_t pid)
{
    const struct idle_group *all[] = { &g->mem, &g->cpu, &g->core, &g->frz };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->made && specx_cgroup_attach(&all[i]->cg, pid) < 0)
            return -1;
    return 0;
}

void idle_groups_promote_cpu(const struct idle_groups *g)
{
    const struct specx_cgroup *cpu = g->cpu.made ? &g->cpu.cg : &g->mem.cg;
    if (!g->cpu_setting)
        return;
    specx_cgroup_write(cpu, "cpu.idle", "0\n");
    if (strcmp(g->cpu_setting, "cpu.shares 2") == 0)
        specx_cgroup_write(cpu, "cpu.shares", "1024\n");
    else if (strcmp(g->cpu_setting, "cpu.weight 1") == 0)
        specx_cgroup_write(cpu, "cpu.weight", "100\n");
}

void idle_groups_destroy(struct idle_groups *g)
{
    /* The freezing group first: what is frozen must be thawed to die. */
    struct idle_group *all[] = { &g->core, &g->frz, &g->cpu, &g->mem };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->made) {
            specx_cgroup_destroy(&all[i]->cg, EMPTY_TIMEOUT_MS);
            if (access(all[i]->cg.dir, F_OK) == 0)
                specx_warn("cannot remove the cgroup %s: %s", all[i]->cg.dir, strerror(errno));
            if (all[i]->lock_fd >= 0)
                close(all[i]->lock_fd);
            all[i]->made = false;
        }
}

void idle_groups_drop_locks(struct idle_groups *g)
{
    struct idle_group *all[] = { &g->mem, &g->cpu, &g->core, &g->frz };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->made && all[i]->lock_fd >= 0) {
            close(all[i]->lock_fd);
            all[i]->lock_fd = -1;
        }
}

static void say_removing(const char *dir)
{
    specx_warn("removing the cgroup %s left by a run that was killed", dir);
}

void idle_groups_sweep_stale(void)
{
    static const char *const controllers[] = { SPECX_CG_CORE, "freezer", "cpu", "memory" };
    for (size_t i = 0; i < sizeof controllers / sizeof controllers[0]; i++)
        specx_cgroup_sweep_stale(controllers[i], PREFIX, EMPTY_TIMEOUT_MS, say_removing);
}
