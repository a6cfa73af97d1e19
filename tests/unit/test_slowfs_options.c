/* Unit tests of specx slowfs's command line and presets (src/slowfs/options.c, presets.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "slowfs/options.h"
#include "slowfs/presets.h"
#include "common/util.h"

#include "check.h"

static char err[512];

/* Parses a NULL-terminated argument list (argv[0] added). */
static int parse(struct slowfs_options *o, const char **args)
{
    char *argv[32] = { "specx-slowfs" };
    int argc = 1;
    while (*args)
        argv[argc++] = (char *)*args++;
    argv[argc] = NULL;
    err[0] = '\0';
    return options_parse(argc, argv, o, err, sizeof err);
}

#define PARSE(o, ...) parse(o, (const char *[]){ __VA_ARGS__, NULL })

static void test_presets_table(void)
{
    const struct preset *p = preset_find("paper2003");
    CHECK(p && p->config.disks == 4 && p->config.stripe_kb == 64 &&
          p->config.latency_ms == 12 && p->config.bus_mbps == 40);
    p = preset_find("hdd");
    CHECK(p && p->config.disks == 1 && p->config.latency_ms == 8 &&
          p->config.bandwidth_mbps == 160);
    p = preset_find("cloud-disk");
    CHECK(p && p->config.disks == 16 && p->config.latency_ms == 1 &&
          p->config.bus_mbps == 250 && p->config.placement == MODEL_ANY);
    p = preset_find("object-store");
    CHECK(p && p->config.disks == 64 && p->config.latency_ms == 30 &&
          p->config.bandwidth_mbps == 100 && p->config.placement == MODEL_ANY);
    CHECK(p->config.metadata_ms[MODEL_LOOKUP] == 30 && p->config.metadata_ms[MODEL_OPEN] == 0 &&
          p->config.metadata_ms[MODEL_READDIR] == 30 && p->config.readdir_entries == 1000 &&
          p->config.attr_timeout_s == 60);
    p = preset_find("nfs");
    CHECK(p && p->config.disks == 8 && p->config.latency_ms == 0.2 &&
          p->config.bandwidth_mbps == 1250 && p->config.bus_mbps == 1250 &&
          p->config.placement == MODEL_ANY && p->config.attr_timeout_s == 60);
    for (int op = 0; p && op < MODEL_METADATA_OPS; op++)
        CHECK(p->config.metadata_ms[op] == 0.2);
    CHECK(preset_find("paper2003")->config.placement == MODEL_STRIPED);
    CHECK(preset_find("floppy") == NULL);
    for (p = presets; p->name; p++)
        CHECK(p->config.priority && p->config.jitter_pct == 0 && !p->config.model_writes);
    /* The local devices: metadata free, kept by the kernel for libfuse's default 1 s. */
    static const char *const local[] = { "paper2003", "hdd", "cloud-disk" };
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        struct model_params mp = config_model_params(&preset_find(local[i])->config);
        CHECK(!model_metadata_modelled(&mp) && preset_find(local[i])->config.attr_timeout_s == 1);
    }
    char list[256];
    preset_list(list, sizeof list);
    CHECK(strcmp(list, "paper2003, hdd, cloud-disk, nfs, object-store") == 0);
}

static void test_default_is_paper2003(void)
{
    struct slowfs_options o;
    CHECK(PARSE(&o, "/b", "/m") == 0);
    CHECK(o.action == ACTION_MOUNT && !o.daemonize);
    CHECK(strcmp(o.preset, "paper2003") == 0 && o.device.disks == 4);
    CHECK(strcmp(o.backing, "/b") == 0 && strcmp(o.mountpoint, "/m") == 0);
    CHECK(!o.device.model_writes);
}

static void test_explicit_options_override_preset(void)
{
    struct slowfs_options o;
    /* Order does not matter: --latency-ms before --preset still wins. */
    CHECK(PARSE(&o, "--latency-ms", "3.5", "--preset", "hdd", "--no-priority", "-d",
                "--bus-mbps", "0", "--seed", "42", "/b", "/m") == 0);
    CHECK(o.device.disks == 1 && o.device.latency_ms == 3.5 && o.device.bandwidth_mbps == 160);
    CHECK(!o.device.priority && o.daemonize && o.device.bus_mbps == 0 && o.device.seed == 42);
    CHECK(PARSE(&o, "--model-writes", "-p", "hdd", "/b", "/m") == 0);
    CHECK(o.device.model_writes && o.device.disks == 1 && !o.count_flushes);
    CHECK(PARSE(&o, "--count-flushes", "/b", "/m") == 0 && o.count_flushes);
    CHECK(PARSE(&o, "-p", "object-store", "--disks", "8", "--stripe-kb", "128",
                "--jitter-pct", "10", "--bandwidth-mbps", "50", "--metadata-latency-ms", "2",
                "/b", "/m") == 0);
    CHECK(PARSE(&o, "--placement", "striped", "-p", "object-store", "/b", "/m") == 0);
    CHECK(o.device.placement == MODEL_STRIPED && o.device.disks == 64);
    CHECK(PARSE(&o, "-p", "object-store", "--disks", "8", "--stripe-kb", "128",
                "--jitter-pct", "10", "--bandwidth-mbps", "50", "--metadata-latency-ms", "2",
                "/b", "/m") == 0);
    CHECK(o.device.disks == 8 && o.device.stripe_kb == 128 && o.device.jitter_pct == 10 &&
          o.device.bandwidth_mbps == 50 && o.device.latency_ms == 30);
    for (int op = 0; op < MODEL_METADATA_OPS; op++)
        CHECK(o.device.metadata_ms[op] == 2);
}

/* --metadata-latency-ms sets every metadata cost; a single operation's option overrides it,
 * whichever comes first. */
static void test_metadata_options(void)
{
    struct slowfs_options o;
    CHECK(PARSE(&o, "--open-ms", "0", "--metadata-latency-ms", "1.5", "--readdir-ms", "4",
                "--readdir-entries", "50", "--attr-timeout-s", "0", "/b", "/m") == 0);
    CHECK(o.device.metadata_ms[MODEL_LOOKUP] == 1.5 && o.device.metadata_ms[MODEL_OPEN] == 0 &&
          o.device.metadata_ms[MODEL_READDIR] == 4 && o.device.metadata_ms[MODEL_READLINK] == 1.5);
    CHECK(o.device.readdir_entries == 50 && o.device.attr_timeout_s == 0);
    CHECK(PARSE(&o, "-p", "nfs", "--lookup-ms", "3", "--readlink-ms", "0", "/b", "/m") == 0);
    CHECK(o.device.metadata_ms[MODEL_LOOKUP] == 3 && o.device.metadata_ms[MODEL_OPEN] == 0.2 &&
          o.device.metadata_ms[MODEL_READLINK] == 0 && o.device.attr_timeout_s == 60);
    CHECK(PARSE(&o, "-p", "nfs", "--metadata-latency-ms", "0", "/b", "/m") == 0);
    struct model_params mp = config_model_params(&o.device);
    CHECK(!model_metadata_modelled(&mp));
}

static void test_model_units(void)
{
    struct slowfs_config c = preset_find("paper2003")->config;
    c.jitter_pct = 20;
    c.metadata_ms[MODEL_OPEN] = 0.5;
    c.readdir_entries = 7;
    struct model_params p = config_model_params(&c);
    CHECK(p.disks == 4 && p.stripe_bytes == 65536 && fabs(p.latency_s - 0.012) < 1e-12);
    CHECK(fabs(p.jitter_frac - 0.2) < 1e-12 && p.disk_bps == 40e6 && p.bus_bps == 40e6);
    CHECK(fabs(p.metadata_s[MODEL_OPEN] - 0.0005) < 1e-12 && p.metadata_s[MODEL_LOOKUP] == 0);
    CHECK(p.readdir_page == 7 && p.priority && model_metadata_modelled(&p));
}

static void test_unknown_preset_lists_valid_ones(void)
{
    struct slowfs_options o;
    CHECK(PARSE(&o, "--preset", "floppy", "/b", "/m") == -1);
    CHECK(strstr(err, "unknown preset 'floppy'") && strstr(err, "paper2003, hdd"));
}

static void test_nonsense_numbers(void)
{
    static const char *bad[][2] = {
        { "--disks", "0" }, { "--disks", "1025" }, { "--disks", "4x" }, { "--disks", "-1" },
        { "--stripe-kb", "0" }, { "--latency-ms", "-1" }, { "--latency-ms", "abc" },
        { "--latency-ms", "10001" }, { "--latency-ms", "nan" }, { "--jitter-pct", "101" },
        { "--bandwidth-mbps", "0" }, { "--bandwidth-mbps", "" }, { "--bus-mbps", "-5" },
        { "--metadata-latency-ms", "inf" }, { "--seed", "x" }, { "--placement", "random" },
        { "--lookup-ms", "-1" }, { "--open-ms", "x" }, { "--readdir-ms", "10001" },
        { "--readlink-ms", "nan" }, { "--readdir-entries", "0" }, { "--readdir-entries", "1.5" },
        { "--attr-timeout-s", "-1" }, { "--attr-timeout-s", "86401" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct slowfs_options o;
        CHECK(PARSE(&o, bad[i][0], bad[i][1], "/b", "/m") == -1);
        CHECK(strstr(err, bad[i][0]) != NULL);
        CHECK(strchr(err, '\n') == NULL);
    }
}

static void test_operands_and_actions(void)
{
    struct slowfs_options o;
    CHECK(PARSE(&o, "/b") == -1);
    CHECK(PARSE(&o, "/b", "/m", "/x") == -1);
    CHECK(PARSE(&o, "--bogus", "/b", "/m") == -1 && strstr(err, "--bogus"));
    CHECK(PARSE(&o, "/b", "/m", "--disks") == -1 && strstr(err, "needs a value"));
    CHECK(PARSE(&o, "--stats", "/m", "--json") == 0);
    CHECK(o.action == ACTION_STATS && o.json && strcmp(o.mountpoint, "/m") == 0);
    CHECK(PARSE(&o, "--stats", "--json", "/m") == 0);
    CHECK(o.action == ACTION_STATS && o.json && strcmp(o.mountpoint, "/m") == 0);
    CHECK(PARSE(&o, "--json", "--stats", "/m") == 0 && strcmp(o.mountpoint, "/m") == 0);
    CHECK(PARSE(&o, "--stats") == -1 && strstr(err, "MOUNTPOINT"));
    CHECK(PARSE(&o, "--unmount", "/m") == 0 && o.action == ACTION_UNMOUNT);
    CHECK(PARSE(&o, "--unmount", "/m", "/x") == -1);
    CHECK(PARSE(&o, "--stats", "/m", "--unmount", "/m") == -1);
    CHECK(PARSE(&o, "--help") == 0 && o.action == ACTION_HELP);
    CHECK(PARSE(&o, "-V") == 0 && o.action == ACTION_VERSION);
}

static void test_volatile_cache(void)
{
    struct slowfs_options o;
    CHECK(PARSE(&o, "/b", "/m") == 0 && !o.volatile_cache && o.power_cut_after == 0);
    CHECK(PARSE(&o, "--volatile-cache", "/b", "/m") == 0);
    CHECK(o.volatile_cache && o.power_cut_after == 0 && o.action == ACTION_MOUNT);
    CHECK(PARSE(&o, "--power-cut-after", "40", "--volatile-cache", "/b", "/m") == 0);
    CHECK(o.volatile_cache && o.power_cut_after == 40);
    CHECK(PARSE(&o, "--power-cut-after", "40", "/b", "/m") == -1 &&
          strstr(err, "needs --volatile-cache"));
    CHECK(PARSE(&o, "--volatile-cache", "--power-cut-after", "0", "/b", "/m") == -1 &&
          strstr(err, "--power-cut-after"));
    CHECK(PARSE(&o, "--power-cut", "/m") == 0 && o.action == ACTION_POWER_CUT &&
          strcmp(o.mountpoint, "/m") == 0);
    CHECK(PARSE(&o, "--power-cut", "/m", "--unmount", "/m") == -1);
}

int main(void)
{
    specx_set_progname("specx slowfs");
    test_presets_table();
    test_default_is_paper2003();
    test_explicit_options_override_preset();
    test_metadata_options();
    test_model_units();
    test_unknown_preset_lists_valid_ones();
    test_nonsense_numbers();
    test_operands_and_actions();
    test_volatile_cache();
    return check_status();
}
