/* Unit tests of the slowfs statistics (src/slowfs/stats.c): accounting and the JSON fields
 * the bench harness depends on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slowfs/presets.h"
#include "slowfs/stats.h"

#include "check.h"

static void test_count_read_splits_response(void)
{
    struct slowfs_stats s = { 0 };
    stats_count_read(&s, MODEL_REGULAR, 4096, 0.030, 0.012);
    stats_count_read(&s, MODEL_REGULAR, 8192, 0.012, 0.012);
    stats_count_read(&s, MODEL_IDLE, 100, 0.5, 0.1);
    const struct class_stats *r = &s.classes[MODEL_REGULAR], *i = &s.classes[MODEL_IDLE];
    CHECK(r->requests == 2 && r->bytes == 12288);
    CHECK(fabs(r->service_s - 0.024) < 1e-12 && fabs(r->queue_wait_s - 0.018) < 1e-12);
    CHECK(i->requests == 1 && i->bytes == 100 && fabs(i->queue_wait_s - 0.4) < 1e-12);
}

static void test_count_write_keeps_times(void)
{
    struct slowfs_stats s = { 0 };
    stats_count_write(&s, 4096, 0, 0); /* unmodelled: counted only */
    stats_count_write(&s, 65536, 0.030, 0.012);
    CHECK(s.write_requests == 2 && s.write_bytes == 69632);
    CHECK(fabs(s.write_queue_wait_s - 0.018) < 1e-12 && fabs(s.write_service_s - 0.012) < 1e-12);
    CHECK(s.classes[MODEL_REGULAR].requests == 0); /* writes are not reads */
}

static struct stats_snapshot sample(struct model_disk_stats *disks)
{
    struct stats_snapshot snap = {
        .preset = "paper2003",
        .config = preset_find("paper2003")->config,
        .pid = 1234,
        .uptime_s = 2.5,
        .ndisks = 4,
        .disks = disks,
    };
    disks[2] = (struct model_disk_stats){ .requests = 7, .bytes = 28672, .busy_s = 0.0847 };
    stats_count_read(&snap.counters, MODEL_REGULAR, 28672, 0.1, 0.0847);
    return snap;
}

static void test_json_fields(void)
{
    struct model_disk_stats disks[4] = { { 0 } };
    struct stats_snapshot snap = sample(disks);
    char *j = stats_json(&snap);
    CHECK(j != NULL);
    static const char *const expect[] = {
        "{\"preset\": \"paper2003\", \"model\": {\"disks\": 4, \"stripe_kb\": 64, "
        "\"latency_ms\": 12, \"jitter_pct\": 0, \"bandwidth_mbps\": 40, \"bus_mbps\": 40, "
        "\"metadata_latency_ms\": 0, \"priority\": true, \"placement\": \"striped\"",
        "\"metadata_ms\": {\"lookup\": 0, \"open\": 0, \"readdir\": 0, \"readlink\": 0}, "
        "\"readdir_entries\": 1000, \"attr_timeout_s\": 1}",
        "\"metadata\": {\"requests\": 0, \"response_s\": 0.000000, \"lookup\": 0, \"open\": 0, "
        "\"readdir\": 0, \"readlink\": 0}",
        "\"pid\": 1234", "\"uptime_s\": 2.500000", "\"requests\": 1, \"bytes\": 28672",
        "\"classes\": {\"regular\": {\"requests\": 1, \"bytes\": 28672, "
        "\"queue_wait_s\": 0.015300, \"service_s\": 0.084700}, \"idle\": {\"requests\": 0",
        "\"disks\": [{\"requests\": 0, \"bytes\": 0, \"busy_s\": 0.000000}, {",
        "{\"requests\": 7, \"bytes\": 28672, \"busy_s\": 0.084700}",
        "\"writes\": {\"requests\": 0, \"bytes\": 0, \"modelled\": false, \"queue_wait_s\": 0.000000, "
        "\"service_s\": 0.000000}}",
    };
    for (size_t i = 0; j && i < sizeof expect / sizeof expect[0]; i++)
        if (!strstr(j, expect[i])) {
            fprintf(stderr, "missing %s in %s\n", expect[i], j);
            check_failures++;
        }
    free(j);
}

/* Metadata requests are counted in all and per operation, in JSON and in the table. */
static void test_metadata_counted_per_operation(void)
{
    struct model_disk_stats disks[4] = { { 0 } };
    struct stats_snapshot snap = sample(disks);
    stats_count_metadata(&snap.counters, MODEL_LOOKUP, 0.0002);
    stats_count_metadata(&snap.counters, MODEL_LOOKUP, 0.0002);
    stats_count_metadata(&snap.counters, MODEL_READDIR, 0.0004);
    char *j = stats_json(&snap);
    CHECK(j && strstr(j, "\"metadata\": {\"requests\": 3, \"response_s\": 0.000800, "
                         "\"lookup\": 2, \"open\": 0, \"readdir\": 1, \"readlink\": 0}"));
    free(j);
    char *t = stats_table(&snap);
    CHECK(t && strstr(t, "metadata 3 requests (lookup 2, open 0, readdir 1, readlink 0); "));
    free(t);
}

static void test_modelled_writes_are_shown(void)
{
    struct model_disk_stats disks[4] = { { 0 } };
    struct stats_snapshot snap = sample(disks);
    char *t = stats_table(&snap);
    CHECK(t && strstr(t, "writes 0 requests, 0 bytes (not modelled)\n"));
    CHECK(t && !strstr(t, "writes modelled"));
    free(t);
    snap.config.model_writes = true;
    stats_count_write(&snap.counters, 65536, 0.040, 0.020);
    stats_count_write(&snap.counters, 65536, 0.020, 0.020);
    t = stats_table(&snap);
    CHECK(t && strstr(t, "priority on, writes modelled\n"));
    CHECK(t && strstr(t, "writes 2 requests, 131072 bytes, wait 10.000 ms/req, "
                         "service 20.000 ms/req (modelled)\n"));
    free(t);
    char *j = stats_json(&snap);
    CHECK(j && strstr(j, "\"writes\": {\"requests\": 2, \"bytes\": 131072, \"modelled\": true, "
                         "\"queue_wait_s\": 0.020000, \"service_s\": 0.040000}"));
    free(j);
}

static void test_table_mentions_every_disk(void)
{
    struct model_disk_stats disks[4] = { { 0 } };
    struct stats_snapshot snap = sample(disks);
    char *t = stats_table(&snap);
    CHECK(t && strstr(t, "paper2003: 4 disks (striped)") && strstr(t, "regular") && strstr(t, "idle"));
    CHECK(t && strstr(t, "\n3 "));
    free(t);
}

static void test_bus_limit_or_none(void)
{
    struct model_disk_stats disks[4] = { { 0 } };
    struct stats_snapshot snap = sample(disks);
    char *t = stats_table(&snap);
    CHECK(t && strstr(t, ", bus 40 MB/s, "));
    free(t);
    snap.config.bus_mbps = 0;
    t = stats_table(&snap);
    CHECK(t && strstr(t, ", bus unlimited, "));
    free(t);
}

int main(void)
{
    test_count_read_splits_response();
    test_count_write_keeps_times();
    test_json_fields();
    test_metadata_counted_per_operation();
    test_bus_limit_or_none();
    test_modelled_writes_are_shown();
    test_table_mentions_every_disk();
    return check_status();
}
