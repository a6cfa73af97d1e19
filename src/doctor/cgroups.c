/* Control groups: which controllers are on which hierarchy (v1 or v2), whether this user can
 * make the groups specx makes, memory.oom.group and io.cost. The discovery is
 * src/kernel/cgroup.c's, the one every specx command uses; --cgroup prints it alone, for
 * scripts (the benchmark harness asks it rather than reading cgroupfs itself). */
#include "doctor/doctor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "kernel/cgroup.h"
#include "kernel/copy_hazards.h"
#include "kernel/kfile.h"

/* The controllers specx uses, and their v1 names where they differ. */
static const char *const controllers[] = { "memory", "cpu", "freezer", "pids", "io", "blkio",
                                           NULL };

/* How long the probe group may take to go once made. */
#define PROBE_REMOVE_MS 1000

/* The v2 hierarchy, if mounted: where, this process's group, its root's controllers. */
struct v2_view {
    bool mounted;
    struct specx_cgroup_where where;
    char controllers[512];
};

static void read_v2(struct v2_view *v2)
{
    *v2 = (struct v2_view){ 0 };
    if (specx_cgroup_where(0, SPECX_CG_CORE, &v2->where) < 0 || v2->where.version != SPECX_CG_V2)
        return;
    v2->mounted = true;
    struct specx_cgroup root = { SPECX_CG_V2, "" };
    snprintf(root.dir, sizeof root.dir, "%s", v2->where.mount);
    if (specx_cgroup_read(&root, "cgroup.controllers", v2->controllers,
                          sizeof v2->controllers) < 0)
        v2->controllers[0] = '\0';
    v2->controllers[strcspn(v2->controllers, "\n")] = '\0';
}

static bool word_in(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
            return true;
    return false;
}

/* Where CONTROLLER is: a v1 hierarchy, or the v2 one where its root offers it (the freezer is
 * a core part of every v2 group). False if neither has it. */
static bool controller_where(const struct v2_view *v2, const char *controller,
                             struct specx_cgroup_where *where)
{
    if (specx_cgroup_where(0, controller, where) < 0)
        return false;
    return where->version == SPECX_CG_V1 || strcmp(controller, "freezer") == 0 ||
           word_in(v2->controllers, controller);
}

static void json_where(const struct specx_cgroup_where *w)
{
    printf("{\"version\": %d, \"mount\": ", (int)w->version);
    specx_json_string(stdout, w->mount);
    printf(", \"group\": ");
    specx_json_string(stdout, w->path);
    printf("}");
}

/* The space-separated WORDS as JSON strings, comma-separated. */
static void json_words(const char *words)
{
    char copy[512];
    snprintf(copy, sizeof copy, "%s", words);
    const char *sep = "";
    for (char *save = NULL, *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        fputs(sep, stdout);
        specx_json_string(stdout, w);
        sep = ", ";
    }
}

void doctor_print_cgroup_json(void)
{
    struct v2_view v2;
    struct specx_cgroup_where where;
    struct specx_cgroup parent;
    read_v2(&v2);
    bool memory = controller_where(&v2, "memory", &where);
    if (memory) {
        printf("{\"version\": %d, \"memory\": {\"mount\": ", (int)where.version);
        specx_json_string(stdout, where.mount);
        printf(", \"group\": ");
        specx_json_string(stdout, where.path);
        printf(", \"parent\": ");
        specx_json_string(stdout, specx_cgroup_parent_for("memory", &parent) == 0 ? parent.dir
                                                                                  : NULL);
        printf("},\n");
    } else {
        printf("{\"version\": null, \"memory\": null,\n");
    }
    printf(" \"controllers\": {");
    const char *sep = "";
    for (const char *const *c = controllers; *c; c++) {
        if (!controller_where(&v2, *c, &where))
            continue;
        printf("%s\"%s\": ", sep, *c);
        json_where(&where);
        sep = ", ";
    }
    printf("},\n \"v2\": ");
    if (v2.mounted) {
        printf("{\"mount\": ");
        specx_json_string(stdout, v2.where.mount);
        printf(", \"group\": ");
        specx_json_string(stdout, v2.where.path);
        printf(", \"controllers\": [");
        json_words(v2.controllers);
        printf("]}");
    } else {
        printf("null");
    }
    printf("}\n");
}

void doctor_print_cgroup_text(void)
{
    struct v2_view v2;
    struct specx_cgroup_where where;
    struct specx_cgroup parent;
    read_v2(&v2);
    for (const char *const *c = controllers; *c; c++)
        if (controller_where(&v2, *c, &where))
            printf("%-8s v%d  %s  group %s\n", *c, (int)where.version, where.mount, where.path);
    if (v2.mounted)
        printf("v2       %s  group %s  controllers: %s\n", v2.where.mount, v2.where.path,
               *v2.controllers ? v2.controllers : "(none)");
    if (specx_cgroup_parent_for("memory", &parent) == 0)
        printf("new memory groups go in %s\n", parent.dir);
}

/* Whether CONTROLLER belongs to a v1 hierarchy (mounted or not): /proc/cgroups gives it a
 * hierarchy number, 0 for v2's. Such a controller cannot be enabled on v2. */
static bool bound_to_v1(const char *controller)
{
    char text[2048];
    if (specx_kfile_read("/proc/cgroups", text, sizeof text) < 0)
        return false;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char name[32];
        int hierarchy;
        if (sscanf(line, "%31s %d", name, &hierarchy) == 2 && strcmp(name, controller) == 0)
            return hierarchy != 0;
    }
    return false;
}

/* One line for CONTROLLER's hierarchy. */
static bool check_controller(struct doctor_report *r, const struct v2_view *v2,
                             const char *controller, const char *used_by,
                             enum doctor_status if_missing, const char *consequence)
{
    struct specx_cgroup_where where;
    struct doctor_check *c = doctor_add(r, used_by, "cgroup %s", controller);
    if (controller_where(v2, controller, &where)) {
        doctor_found(c, "the %s controller is on cgroup v%d at %s (this process: %s)",
                     controller, (int)where.version, where.mount, where.path);
        if (strcmp(controller, "memory") == 0 && where.version == SPECX_CG_V1)
            doctor_consequence(c, DOCTOR_OK, "v1 memory groups have no PSI: run's memory control "
                               "and idle's memory yield watch the machine's reclaim and the "
                               "groups' limit hits instead");
        return true;
    }
    doctor_found(c, "no cgroup hierarchy has the %s controller", controller);
    doctor_consequence(c, if_missing, "%s", consequence);
    if (bound_to_v1(controller))
        doctor_fix(c, "mount its v1 hierarchy: mount -t cgroup -o %s cgroup /sys/fs/cgroup/%s",
                   controller, controller);
    else if (v2->mounted)
        doctor_fix(c, "enable it in the v2 root: echo +%s > %s/cgroup.subtree_control",
                   controller, v2->where.mount);
    else
        doctor_fix(c, "mount cgroup2 on /sys/fs/cgroup");
    return false;
}

/* Makes and removes a group where specx makes CONTROLLER's groups, as this user. */
static void check_delegation(struct doctor_report *r, const char *controller,
                             const char *used_by, enum doctor_status if_not,
                             const char *consequence)
{
    struct specx_cgroup parent, probe;
    char name[64];
    struct doctor_check *c = doctor_add(r, used_by, "delegation %s", controller);
    snprintf(name, sizeof name, "specx-doctor-%d", (int)getpid());
    int e = specx_cgroup_parent_for(controller, &parent) < 0 ? errno
            : specx_cgroup_make(&parent, name, controller, &probe) < 0 ? errno : 0;
    if (e == 0) {
        specx_cgroup_remove(&probe, PROBE_REMOVE_MS);
        doctor_found(c, "this user can make %s groups in %s", controller, parent.dir);
        return;
    }
    doctor_found(c, "this user cannot make a %s group%s%s: %s", controller,
                 e == ENOTSUP ? "" : " in ", e == ENOTSUP ? "" : parent.dir, strerror(e));
    doctor_consequence(c, if_not, "%s", consequence);
    doctor_fix(c, "run as root, or in a delegated group (systemd-run --user -p Delegate=yes "
                  "--scope specx ...)");
}

/* v2's memory.oom.group on this process's group or above: specx run makes no copies there. */
static void check_oom_group(struct doctor_report *r)
{
    struct specx_cgroup memory;
    struct doctor_check *c = doctor_add(r, "run", "memory.oom.group");
    if (specx_cgroup_of(0, "memory", &memory) < 0) {
        doctor_found(c, "no memory group to look at");
        return;
    }
    if (memory.version == SPECX_CG_V1) {
        doctor_found(c, "the memory controller is on v1, which has no memory.oom.group");
        return;
    }
    if (!specx_oom_group_above(memory)) {
        doctor_found(c, "not set on %s or any group above it", memory.dir);
        return;
    }
    doctor_found(c, "set on %s or a group above it: the OOM killer takes the whole group",
                 memory.dir);
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "specx run makes no speculative copy of programs started here (one OOM "
                       "kill would take the program with its copy)");
    doctor_fix(c, "start specx outside that group, or set memory.oom.group to 0 "
                  "(systemd: OOMPolicy=continue)");
}

/* io.cost: which devices have the v2 cost model on (io.cost.qos in the v2 root). */
static void check_io_cost(struct doctor_report *r, const struct v2_view *v2)
{
    struct doctor_check *c = doctor_add(r, "none (idle I/O class)", "io.cost");
    char qos[2048];
    struct specx_cgroup root = { SPECX_CG_V2, "" };
    snprintf(root.dir, sizeof root.dir, "%s", v2->where.mount);
    if (!v2->mounted || !word_in(v2->controllers, "io") ||
        specx_cgroup_read(&root, "io.cost.qos", qos, sizeof qos) < 0) {
        doctor_found(c, "no v2 io controller with io.cost here");
    } else {
        int enabled = 0;
        for (char *save = NULL, *line = strtok_r(qos, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save))
            enabled += strstr(line, " enable=1") != NULL;
        doctor_found(c, "io.cost is on for %d device(s)", enabled);
    }
    doctor_consequence(c, DOCTOR_OK,
                       "none: specx orders background I/O by the idle I/O class (see io-sched), "
                       "not by io.weight");
}

void doctor_check_cgroups(struct doctor_report *r)
{
    struct v2_view v2;
    read_v2(&v2);
    if (check_controller(r, &v2, "memory", "run, share, idle, bench", DOCTOR_MISSING,
                         "specx share and specx idle cannot run; bench's out-of-core workloads "
                         "are skipped"))
        check_delegation(r, "memory", "share, idle, bench", DOCTOR_MISSING,
                         "specx share and specx idle cannot run as this user");
    if (check_controller(r, &v2, "freezer", "share, idle", DOCTOR_MISSING,
                         "specx share cannot run; specx idle cannot freeze its background"))
        check_delegation(r, "freezer", "share, idle", DOCTOR_MISSING,
                         "specx share cannot run as this user");
    if (check_controller(r, &v2, "cpu", "idle", DOCTOR_DEGRADED,
                         "specx idle's background has SCHED_IDLE but no idle group weight"))
        check_delegation(r, "cpu", "idle", DOCTOR_DEGRADED,
                         "specx idle's background has SCHED_IDLE but no idle group weight");
    check_oom_group(r);
    check_io_cost(r, &v2);
}
