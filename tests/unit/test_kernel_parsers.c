/* The kernel layer's pure parsers (src/kernel): which cgroup a process is in, where each
 * hierarchy is mounted, "key value" files, pressure files, when a process started and whether
 * it is being killed, on texts as the kernel writes them; and a group's parent, on a tree of
 * directories laid out as cgroupfs lays out its files. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/cgroup.h"
#include "check.h"
#include "kernel/kfile.h"
#include "kernel/oom_victim.h"
#include "kernel/process_start.h"
#include "kernel/psi.h"

static void test_cgroup_v1_line_wins(void)
{
    char text[] = "9:name=systemd:/\n4:memory:/bench/run-1\n1:cpu:/\n0::/user.slice\n";
    bool v1 = false;
    const char *path = specx_cgroup_path_in(text, "memory", &v1);
    CHECK(path && strcmp(path, "/bench/run-1") == 0 && v1);
}

static void test_cgroup_controller_list(void)
{
    char text[] = "3:cpu,memory,pids:/a\n";
    bool v1 = false;
    const char *path = specx_cgroup_path_in(text, "memory", &v1);
    CHECK(path && strcmp(path, "/a") == 0 && v1);
    char not_memory[] = "3:memory_x,cpu:/b\n";
    CHECK(specx_cgroup_path_in(not_memory, "memory", &v1) == NULL);
}

static void test_cgroup_v2_only(void)
{
    char text[] = "0::/system.slice/x.service\n";
    bool v1 = true;
    const char *path = specx_cgroup_path_in(text, "freezer", &v1);
    CHECK(path && strcmp(path, "/system.slice/x.service") == 0 && !v1);
    char empty[] = "";
    CHECK(specx_cgroup_path_in(empty, "memory", &v1) == NULL);
}

static void test_mounts_hybrid(void)
{
    char text[] = "proc /proc proc rw 0 0\n"
                  "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
                  "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
                  "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n";
    char copy[sizeof text];
    bool v1 = false;
    memcpy(copy, text, sizeof text);
    const char *mount = specx_cgroup_mount_in(copy, "memory", &v1);
    CHECK(mount && strcmp(mount, "/sys/fs/cgroup/memory") == 0 && v1);
    memcpy(copy, text, sizeof text);
    mount = specx_cgroup_mount_in(copy, "cpuacct", &v1);
    CHECK(mount && strcmp(mount, "/sys/fs/cgroup/cpu,cpuacct") == 0 && v1);
    memcpy(copy, text, sizeof text);
    mount = specx_cgroup_mount_in(copy, "freezer", &v1); /* not on v1: the v2 hierarchy */
    CHECK(mount && strcmp(mount, "/sys/fs/cgroup/unified") == 0 && !v1);
}

static void test_key_value(void)
{
    const char *stat = "cache 6885376\nrss 1916928\ntotal_rss 2000\nworkingset_refault_file 9143\n";
    uint64_t v = 0;
    CHECK(specx_kfile_key_u64(stat, "rss", &v) && v == 1916928);
    CHECK(specx_kfile_key_u64(stat, "workingset_refault_file", &v) && v == 9143);
    CHECK(!specx_kfile_key_u64(stat, "rs", &v));
    CHECK(!specx_kfile_key_u64(stat, "pgmajfault", &v));
    CHECK(specx_kfile_parse_u64("max\n", &v) && v == UINT64_MAX);
    CHECK(!specx_kfile_parse_u64("-1", &v));
}

static void test_psi(void)
{
    struct specx_psi psi;
    CHECK(specx_psi_parse("some avg10=1.50 avg60=0.25 avg300=0.00 total=12345\n"
                          "full avg10=0.75 avg60=0.00 avg300=0.00 total=678\n", &psi));
    CHECK(psi.some.avg10 == 1.5 && psi.some.total_us == 12345);
    CHECK(psi.has_full && psi.full.avg10 == 0.75 && psi.full.total_us == 678);
    CHECK(specx_psi_parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &psi) && !psi.has_full);
    CHECK(!specx_psi_parse("garbage", &psi));
}

static void test_proc_stat_cpu(void)
{
    uint64_t ticks = 0;
    /* A command with a space and a ")" in its name: fields count from the last ")". */
    CHECK(specx_proc_stat_cpu_ticks("4242 (a) b) S 1 4242 4242 0 -1 4194560 1200 0 3 0 "
                                    "250 17 5 3 20 0 1 0 123 4096 100\n", &ticks));
    CHECK(ticks == 275);
    CHECK(!specx_proc_stat_cpu_ticks("4242 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13", &ticks));
    CHECK(!specx_proc_stat_cpu_ticks("no parenthesis", &ticks));
}

static void test_proc_stat_start_time(void)
{
    uint64_t start = 0;
    /* Field 22, counted from the last ")" of a command that holds a space and a ")". */
    CHECK(specx_proc_stat_start_time("4242 (a) b) S 1 4242 4242 0 -1 4194560 1200 0 3 0 "
                                     "250 17 5 3 20 0 1 0 123456 4096 100\n", &start));
    CHECK(start == 123456);
    CHECK(!specx_proc_stat_start_time("4242 (sh) S 1 2 3 4 5 6 7 8 9 10 11 12 13", &start));
    CHECK(!specx_proc_stat_start_time("no parenthesis", &start));
}

/* The signal lines of a /proc/PID/status. */
static void status_text(char *buf, size_t size, unsigned long long thread,
                        unsigned long long shared)
{
    snprintf(buf, size,
             "Name:\topvm\nState:\tR (running)\nShdPnd0:\t0000000000000100\n"
             "SigQ:\t1/95109\nSigPnd:\t%016llx\nShdPnd:\t%016llx\n"
             "SigBlk:\t0000000000000000\n",
             thread, shared);
}

static void test_proc_status_killed(void)
{
    const unsigned long long sigkill = 1ull << (SIGKILL - 1), sigterm = 1ull << (SIGTERM - 1);
    char text[512];
    status_text(text, sizeof text, 0, 0);
    CHECK(!specx_oom_victim_status_killed(text)); /* a line merely starting with ShdPnd */
    status_text(text, sizeof text, sigkill, sigkill);
    CHECK(specx_oom_victim_status_killed(text)); /* killed, not yet exiting */
    status_text(text, sizeof text, 0, sigkill);
    CHECK(specx_oom_victim_status_killed(text)); /* exiting of it: the thread took its SIGKILL */
    status_text(text, sizeof text, sigterm, sigterm);
    CHECK(!specx_oom_victim_status_killed(text));
    CHECK(!specx_oom_victim_status_killed("no such lines"));
}

static void touch(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

/* Which group is a hierarchy's root: on v2 the one without cgroup.type, on v1 the one with
 * cgroup.sane_behavior. */
static void test_cgroup_parent(void)
{
    char root[] = "/tmp/specx-unit-cgroup-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    struct specx_cgroup leaf = { SPECX_CG_V2, "" }, up, top;
    snprintf(leaf.dir, sizeof leaf.dir, "%s/slice", root);
    mkdir(leaf.dir, 0755);
    touch(leaf.dir, "cgroup.type");
    strcat(leaf.dir, "/scope");
    mkdir(leaf.dir, 0755);
    touch(leaf.dir, "cgroup.type");
    CHECK(specx_cgroup_parent(&leaf, &up) && strcmp(strrchr(up.dir, '/'), "/slice") == 0);
    CHECK(specx_cgroup_parent(&up, &top) && strcmp(top.dir, root) == 0);
    CHECK(!specx_cgroup_parent(&top, &up)); /* the root: no cgroup.type */
    struct specx_cgroup v1 = { SPECX_CG_V1, "" };
    snprintf(v1.dir, sizeof v1.dir, "%s/slice/scope", root);
    touch(root, "cgroup.sane_behavior");
    CHECK(specx_cgroup_parent(&v1, &v1) && specx_cgroup_parent(&v1, &v1));
    CHECK(strcmp(v1.dir, root) == 0 && !specx_cgroup_parent(&v1, &up));
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    test_cgroup_v1_line_wins();
    test_cgroup_controller_list();
    test_cgroup_v2_only();
    test_mounts_hybrid();
    test_key_value();
    test_psi();
    test_proc_stat_cpu();
    test_proc_stat_start_time();
    test_proc_status_killed();
    test_cgroup_parent();
    return check_status();
}
