/* Command-line parsing and validation for specx slowfs. Values are checked here, before
 * anything is mounted, so bad input never leaves a half-made mount behind. */
#include "slowfs/options.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

enum {
    OPT_DISKS = 256, OPT_PLACEMENT, OPT_STRIPE, OPT_LATENCY, OPT_JITTER, OPT_BANDWIDTH, OPT_BUS, OPT_METADATA,
    OPT_NO_PRIORITY, OPT_MODEL_WRITES, OPT_SEED, OPT_STATS, OPT_JSON, OPT_UNMOUNT,
    OPT_COUNT_FLUSHES, OPT_VOLATILE_CACHE, OPT_POWER_CUT_AFTER, OPT_POWER_CUT,
    OPT_READDIR_ENTRIES, OPT_ATTR_TIMEOUT,
    /* One per metadata operation, in the order of enum model_metadata_op. */
    OPT_METADATA_OP, OPT_METADATA_OP_END = OPT_METADATA_OP + MODEL_METADATA_OPS - 1,
};

static const struct option long_options[] = {
    { "preset", required_argument, NULL, 'p' },
    { "disks", required_argument, NULL, OPT_DISKS },
    { "placement", required_argument, NULL, OPT_PLACEMENT },
    { "stripe-kb", required_argument, NULL, OPT_STRIPE },
    { "latency-ms", required_argument, NULL, OPT_LATENCY },
    { "jitter-pct", required_argument, NULL, OPT_JITTER },
    { "bandwidth-mbps", required_argument, NULL, OPT_BANDWIDTH },
    { "bus-mbps", required_argument, NULL, OPT_BUS },
    { "metadata-latency-ms", required_argument, NULL, OPT_METADATA },
    { "lookup-ms", required_argument, NULL, OPT_METADATA_OP + MODEL_LOOKUP },
    { "open-ms", required_argument, NULL, OPT_METADATA_OP + MODEL_OPEN },
    { "readdir-ms", required_argument, NULL, OPT_METADATA_OP + MODEL_READDIR },
    { "readlink-ms", required_argument, NULL, OPT_METADATA_OP + MODEL_READLINK },
    { "readdir-entries", required_argument, NULL, OPT_READDIR_ENTRIES },
    { "attr-timeout-s", required_argument, NULL, OPT_ATTR_TIMEOUT },
    { "no-priority", no_argument, NULL, OPT_NO_PRIORITY },
    { "model-writes", no_argument, NULL, OPT_MODEL_WRITES },
    { "seed", required_argument, NULL, OPT_SEED },
    { "volatile-cache", no_argument, NULL, OPT_VOLATILE_CACHE },
    { "power-cut-after", required_argument, NULL, OPT_POWER_CUT_AFTER },
    { "power-cut", no_argument, NULL, OPT_POWER_CUT },
    { "daemon", no_argument, NULL, 'd' },
    { "count-flushes", no_argument, NULL, OPT_COUNT_FLUSHES },
    { "stats", no_argument, NULL, OPT_STATS },
    { "json", no_argument, NULL, OPT_JSON },
    { "unmount", no_argument, NULL, OPT_UNMOUNT },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

void options_usage(FILE *out)
{
    char names[256];
    preset_list(names, sizeof names);
    fprintf(out,
        "Usage: specx slowfs [OPTIONS] BACKING_DIR MOUNTPOINT\n"
        "       specx slowfs --stats MOUNTPOINT [--json]\n"
        "       specx slowfs --unmount MOUNTPOINT\n"
        "       specx slowfs --power-cut MOUNTPOINT\n"
        "\n"
        "Mount BACKING_DIR at MOUNTPOINT through an emulated slow storage device:\n"
        "striped disks with access latency, bandwidth, a shared bus, and an idle\n"
        "I/O class that only uses free disk time.\n"
        "\n"
        "Device (a preset, then single values overridden):\n"
        "  -p, --preset NAME            %s (default %s)\n"
        "      --disks N                independent disks, 1..1024\n"
        "      --placement striped|any  requests go to the disk holding the data, or to\n"
        "                               whichever disk (lane) is free first\n"
        "      --stripe-kb N            stripe unit in KiB\n"
        "      --latency-ms MS          access latency (seek + rotation)\n"
        "      --jitter-pct PCT         latency varies uniformly by +-PCT %%\n"
        "      --bandwidth-mbps MBPS    transfer rate of one disk (MB = 10^6 bytes)\n"
        "      --bus-mbps MBPS          shared bus limit, 0 = none\n"
        "      --lookup-ms MS           a name looked up or its attributes fetched again\n"
        "      --open-ms MS             an open of a file (close-to-open revalidation)\n"
        "      --readdir-ms MS          one request of a directory listing\n"
        "      --readdir-entries N      entries a listing gets per request (default 1000)\n"
        "      --readlink-ms MS         a symbolic link's target\n"
        "      --metadata-latency-ms MS all four metadata costs at once (the ones above\n"
        "                               override it); 0 in the local presets\n"
        "      --attr-timeout-s S       how long the kernel trusts names and attributes\n"
        "                               before asking again (1 local, 60 remote presets)\n"
        "      --no-priority            serve IDLE-class requests like any other\n"
        "      --model-writes           writes take disk time as reads of their range do\n"
        "                               (default: they cost nothing, only counted)\n"
        "      --seed N                 seed of the latency jitter\n"
        "      --volatile-cache         a write cache that a power cut empties: data is\n"
        "                               durable once its file is synced, a name once its\n"
        "                               directory is\n"
        "      --power-cut-after N      with --volatile-cache: cut the power after the N-th\n"
        "                               request that changes something\n"
        "\n"
        "Running:\n"
        "  -d, --daemon                 return once mounted and serve in the background\n"
        "      --count-flushes          answer FLUSH (one request per close) and count it,\n"
        "                               and writes, per file (xattr user.specx.slowfs.file)\n"
        "      --stats MOUNTPOINT       print the device's statistics (--json for JSON)\n"
        "      --unmount MOUNTPOINT     unmount and wait for the server to exit\n"
        "      --power-cut MOUNTPOINT   cut the power of a --volatile-cache mount now\n"
        "  -h, --help                   show this help\n"
        "  -V, --version                show the version\n"
        "\n"
        "See specx-slowfs(1).\n", names, PRESET_DEFAULT);
}

/* The explicit device options, applied over the preset once parsing is done. */
struct overrides {
    bool disks, placement, stripe, latency, jitter, bandwidth, bus, metadata, no_priority,
        model_writes, seed, readdir_entries, attr_timeout;
    bool metadata_op[MODEL_METADATA_OPS];
    double metadata_all_ms; /* --metadata-latency-ms */
    struct slowfs_config v;
};

/* --lookup-ms and the others: one metadata operation's cost. */
static int parse_metadata_op(enum model_metadata_op op, const char *arg, struct overrides *o,
                             char *err, size_t errsize)
{
    if (!specx_parse_double(arg, 0, 10000, &o->v.metadata_ms[op]))
        return specx_format_error(err, errsize, "invalid --%s-ms '%s' (0 to 10000)",
                                  model_metadata_name(op), arg);
    o->metadata_op[op] = true;
    return 0;
}


static int parse_device_option(int opt, const char *arg, struct overrides *o, char *err,
                               size_t errsize)
{
    uint64_t u;
    if (opt >= OPT_METADATA_OP && opt <= OPT_METADATA_OP_END)
        return parse_metadata_op((enum model_metadata_op)(opt - OPT_METADATA_OP), arg, o, err,
                                 errsize);
    switch (opt) {
    case OPT_DISKS:
        if (!specx_parse_u64(arg, 1, MODEL_MAX_DISKS, &u))
            return specx_format_error(err, errsize, "invalid --disks '%s' (an integer from 1 to %d)", arg,
                        MODEL_MAX_DISKS);
        o->v.disks = (unsigned)u;
        o->disks = true;
        return 0;
    case OPT_PLACEMENT:
        if (strcmp(arg, "striped") == 0)
            o->v.placement = MODEL_STRIPED;
        else if (strcmp(arg, "any") == 0)
            o->v.placement = MODEL_ANY;
        else
            return specx_format_error(err, errsize, "invalid --placement '%s' (striped or any)", arg);
        o->placement = true;
        return 0;
    case OPT_STRIPE:
        if (!specx_parse_u64(arg, 1, 1048576, &o->v.stripe_kb))
            return specx_format_error(err, errsize,
                        "invalid --stripe-kb '%s' (an integer from 1 to 1048576)", arg);
        o->stripe = true;
        return 0;
    case OPT_LATENCY:
        if (!specx_parse_double(arg, 0, 10000, &o->v.latency_ms))
            return specx_format_error(err, errsize, "invalid --latency-ms '%s' (0 to 10000)", arg);
        o->latency = true;
        return 0;
    case OPT_JITTER:
        if (!specx_parse_double(arg, 0, 100, &o->v.jitter_pct))
            return specx_format_error(err, errsize, "invalid --jitter-pct '%s' (0 to 100)", arg);
        o->jitter = true;
        return 0;
    case OPT_BANDWIDTH:
        if (!specx_parse_double(arg, 0, 1e6, &o->v.bandwidth_mbps) || o->v.bandwidth_mbps <= 0)
            return specx_format_error(err, errsize,
                        "invalid --bandwidth-mbps '%s' (more than 0, up to 1000000)", arg);
        o->bandwidth = true;
        return 0;
    case OPT_BUS:
        if (!specx_parse_double(arg, 0, 1e6, &o->v.bus_mbps))
            return specx_format_error(err, errsize,
                        "invalid --bus-mbps '%s' (0 for no limit, up to 1000000)", arg);
        o->bus = true;
        return 0;
    case OPT_METADATA:
        if (!specx_parse_double(arg, 0, 10000, &o->metadata_all_ms))
            return specx_format_error(err, errsize, "invalid --metadata-latency-ms '%s' (0 to 10000)", arg);
        o->metadata = true;
        return 0;
    case OPT_READDIR_ENTRIES:
        if (!specx_parse_u64(arg, 1, 1000000, &o->v.readdir_entries))
            return specx_format_error(err, errsize,
                                      "invalid --readdir-entries '%s' (an integer from 1 to 1000000)",
                                      arg);
        o->readdir_entries = true;
        return 0;
    case OPT_ATTR_TIMEOUT:
        if (!specx_parse_double(arg, 0, 86400, &o->v.attr_timeout_s))
            return specx_format_error(err, errsize, "invalid --attr-timeout-s '%s' (0 to 86400)",
                                      arg);
        o->attr_timeout = true;
        return 0;
    case OPT_NO_PRIORITY:
        o->no_priority = true;
        return 0;
    case OPT_MODEL_WRITES:
        o->model_writes = true;
        return 0;
    case OPT_SEED:
        if (!specx_parse_u64(arg, 0, UINT64_MAX, &o->v.seed))
            return specx_format_error(err, errsize, "invalid --seed '%s' (a non-negative integer)", arg);
        o->seed = true;
        return 0;
    }
    return specx_format_error(err, errsize, "internal error: option %d", opt);
}

static void apply_overrides(struct slowfs_config *c, const struct overrides *o)
{
    if (o->disks) c->disks = o->v.disks;
    if (o->placement) c->placement = o->v.placement;
    if (o->stripe) c->stripe_kb = o->v.stripe_kb;
    if (o->latency) c->latency_ms = o->v.latency_ms;
    if (o->jitter) c->jitter_pct = o->v.jitter_pct;
    if (o->bandwidth) c->bandwidth_mbps = o->v.bandwidth_mbps;
    if (o->bus) c->bus_mbps = o->v.bus_mbps;
    for (int op = 0; op < MODEL_METADATA_OPS; op++) {
        if (o->metadata) c->metadata_ms[op] = o->metadata_all_ms;
        if (o->metadata_op[op]) c->metadata_ms[op] = o->v.metadata_ms[op];
    }
    if (o->readdir_entries) c->readdir_entries = o->v.readdir_entries;
    if (o->attr_timeout) c->attr_timeout_s = o->v.attr_timeout_s;
    if (o->no_priority) c->priority = false;
    if (o->model_writes) c->model_writes = true;
    if (o->seed) c->seed = o->v.seed;
}

/* Sets the action, refusing two different ones (e.g. --stats with --unmount). The mount point
 * is the operand, wherever it stands: `--stats --json MNT` and `--json --stats MNT` are one. */
static int set_action(struct slowfs_options *out, enum slowfs_action action, char *err,
                      size_t errsize)
{
    if (out->action != ACTION_MOUNT && out->action != action)
        return specx_format_error(err, errsize,
                                  "--stats, --unmount and --power-cut cannot be combined");
    out->action = action;
    return 0;
}

static int check_operands(struct slowfs_options *out, int nargs, char **args, char *err,
                          size_t errsize)
{
    if (out->action == ACTION_MOUNT) {
        if (nargs != 2)
            return specx_format_error(err, errsize, "expected BACKING_DIR and MOUNTPOINT; see '%s --help'",
                        specx_progname());
        out->backing = args[0];
        out->mountpoint = args[1];
        return 0;
    }
    if (nargs == 0)
        return specx_format_error(err, errsize, "expected MOUNTPOINT; see '%s --help'",
                                  specx_progname());
    if (nargs > 1)
        return specx_format_error(err, errsize, "unexpected argument '%s'", args[1]);
    out->mountpoint = args[0];
    return 0;
}

int options_parse(int argc, char **argv, struct slowfs_options *out, char *err, size_t errsize)
{
    struct overrides o = { 0 };
    *out = (struct slowfs_options){ .action = ACTION_MOUNT, .preset = PRESET_DEFAULT };
    bool help = false, version = false;
    int opt;
    opterr = 0;
    optind = 0; /* full reset, so the parser can run more than once (unit tests) */
    while ((opt = getopt_long(argc, argv, ":p:dhV", long_options, NULL)) != -1) {
        switch (opt) {
        case 'p': out->preset = optarg; break;
        case 'd': out->daemonize = true; break;
        case 'h': help = true; break;
        case 'V': version = true; break;
        case OPT_JSON: out->json = true; break;
        case OPT_COUNT_FLUSHES: out->count_flushes = true; break;
        case OPT_STATS:
            if (set_action(out, ACTION_STATS, err, errsize))
                return -1;
            break;
        case OPT_UNMOUNT:
            if (set_action(out, ACTION_UNMOUNT, err, errsize))
                return -1;
            break;
        case OPT_POWER_CUT:
            if (set_action(out, ACTION_POWER_CUT, err, errsize))
                return -1;
            break;
        case OPT_VOLATILE_CACHE: out->volatile_cache = true; break;
        case OPT_POWER_CUT_AFTER:
            if (!specx_parse_u64(optarg, 1, UINT64_MAX, &out->power_cut_after))
                return specx_format_error(err, errsize,
                                          "invalid --power-cut-after '%s' (a positive integer)",
                                          optarg);
            break;
        case ':':
            return specx_format_error(err, errsize, "option '%s' needs a value", argv[optind - 1]);
        case '?':
            if (optopt > 0 && optopt < 256)
                return specx_format_error(err, errsize, "invalid option '-%c'; see '%s --help'", optopt,
                            specx_progname());
            return specx_format_error(err, errsize, "invalid option '%s'; see '%s --help'",
                        argv[optind - 1], specx_progname());
        default:
            if (parse_device_option(opt, optarg, &o, err, errsize))
                return -1;
        }
    }
    if (help || version) {
        out->action = help ? ACTION_HELP : ACTION_VERSION;
        return 0;
    }
    const struct preset *p = preset_find(out->preset);
    if (!p) {
        char names[256];
        preset_list(names, sizeof names);
        return specx_format_error(err, errsize, "unknown preset '%s' (valid: %s)", out->preset, names);
    }
    out->device = p->config;
    apply_overrides(&out->device, &o);
    if (out->power_cut_after && !out->volatile_cache)
        return specx_format_error(err, errsize, "--power-cut-after needs --volatile-cache");
    return check_operands(out, argc - optind, argv + optind, err, errsize);
}
