/* Where specx stands aside (src/kernel/copy_hazards.h), decided from the kernel's files as it
 * writes them: a status's Seccomp field, a group's memory.oom.group, pids.current and pids.max,
 * on groups laid out as cgroupfs lays them out (the limit may be set on a group above). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "kernel/copy_hazards.h"

static const char status_head[] = "Name:\tprog\nUmask:\t0022\nState:\tR (running)\nPid:\t42\n"
                                  "PPid:\t1\nTracerPid:\t0\nNoNewPrivs:\t1\n";

static void test_status_seccomp(void)
{
    char text[512];
    snprintf(text, sizeof text, "%sSeccomp:\t0\nSeccomp_filters:\t0\n", status_head);
    CHECK(specx_status_seccomp(text) == 0);
    snprintf(text, sizeof text, "%sSeccomp:\t1\nSeccomp_filters:\t0\n", status_head);
    CHECK(specx_status_seccomp(text) == 1);
    snprintf(text, sizeof text, "%sSeccomp:\t2\nSeccomp_filters:\t3\n", status_head);
    CHECK(specx_status_seccomp(text) == 2);
    /* Seccomp_filters is not Seccomp; a kernel without the field, or a garbled one: unknown. */
    snprintf(text, sizeof text, "%sSeccomp_filters:\t0\n", status_head);
    CHECK(specx_status_seccomp(text) == -1);
    CHECK(specx_status_seccomp("Seccomp:\t7\n") == -1);
    CHECK(specx_status_seccomp("") == -1);
}

static void test_pids_room(void)
{
    CHECK(!specx_pids_too_close(5000, UINT64_MAX)); /* "max": no limit */
    CHECK(!specx_pids_too_close(1, 100));
    CHECK(specx_pids_too_close(7, 7));  /* at the limit: a copy would take the last fork */
    CHECK(specx_pids_too_close(2, 8));  /* small limits keep SPECX_PIDS_ROOM_MIN free */
    CHECK(!specx_pids_too_close(1, 10));
    CHECK(specx_pids_too_close(4400, 4915)); /* large ones an eighth */
    CHECK(!specx_pids_too_close(4000, 4915));
    CHECK(specx_oom_group_set("1\n") && !specx_oom_group_set("0\n") && !specx_oom_group_set(""));
}

static void put(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* ROOT/slice/scope on v2 (cgroup.type in each group below the root). */
static struct specx_cgroup v2_tree(const char *root)
{
    struct specx_cgroup cg = { SPECX_CG_V2, "" };
    snprintf(cg.dir, sizeof cg.dir, "%s/slice", root);
    mkdir(cg.dir, 0755);
    put(cg.dir, "cgroup.type", "domain\n");
    strcat(cg.dir, "/scope");
    mkdir(cg.dir, 0755);
    put(cg.dir, "cgroup.type", "domain\n");
    return cg;
}

static void test_group_walks(void)
{
    char root[] = "/tmp/specx-unit-hazards-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    struct specx_cgroup scope = v2_tree(root);
    char slice[PATH_MAX];
    snprintf(slice, sizeof slice, "%s/slice", root);
    /* No such files (the controllers are elsewhere): nothing to stand aside for. */
    CHECK(!specx_oom_group_above(scope) && !specx_pids_short_above(scope));
    put(scope.dir, "memory.oom.group", "0\n");
    put(slice, "memory.oom.group", "0\n");
    CHECK(!specx_oom_group_above(scope));
    put(slice, "memory.oom.group", "1\n"); /* the slice is killed as one, scope and all */
    CHECK(specx_oom_group_above(scope));
    struct specx_cgroup v1 = scope;
    v1.version = SPECX_CG_V1; /* v1 has no such file: whatever one says is not the kernel's */
    put(root, "cgroup.sane_behavior", "0\n");
    CHECK(!specx_oom_group_above(v1));
    put(scope.dir, "pids.max", "max\n");
    put(scope.dir, "pids.current", "3\n");
    put(slice, "pids.max", "500\n");
    put(slice, "pids.current", "12\n");
    CHECK(!specx_pids_short_above(scope));
    put(slice, "pids.current", "490\n"); /* the limit above binds the scope */
    CHECK(specx_pids_short_above(scope));
    put(slice, "pids.max", "max\n");
    put(scope.dir, "pids.max", "7\n");
    put(scope.dir, "pids.current", "7\n");
    CHECK(specx_pids_short_above(scope) && specx_pids_short_above(v1));
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    test_status_seccomp();
    test_pids_room();
    test_group_walks();
    return check_status();
}
