/* See options.h. */
#include "idle/options.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "idle/dirty_policy.h"
#include "common/units.h"
#include "common/util.h"

void idle_options_usage(FILE *out)
{
    fprintf(out,
        "Usage: specx idle [OPTIONS] -- CMD [ARGS...]\n"
        "       specx idle --recover\n"
        "\n"
        "Run CMD on idle capacity only: CPU time, disk bandwidth and memory nobody else\n"
        "wants, given back the moment the foreground needs them; with --isolate, its\n"
        "changes to files stay invisible until it finishes and they are committed\n"
        "(Eggert 2002).\n"
        "\n"
        "Options:\n"
        "  -i, --isolate DIR       CMD sees DIR through an overlay: its writes stay apart\n"
        "                          until the commit (may be given up to 16 times)\n"
        "  -c, --commit auto|never|ask\n"
        "                          at CMD's exit: apply its changes if no file it read or\n"
        "                          wrote was changed by anyone else meanwhile (auto, the\n"
        "                          default), show them and discard them (never), or ask\n"
        "  -d, --deadline TIME     promote CMD to normal priority at TIME if it has not\n"
        "                          finished (HH:MM[:SS] today, YYYY-MM-DD HH:MM[:SS], @EPOCH)\n"
        "  -w, --within DUR        the same, DUR from now (e.g. 90s, 10m, 2h)\n"
        "      --net-rate RATE     queue CMD's traffic behind the foreground's at RATE, a\n"
        "                          little below the bottleneck's (e.g. 95mbit; without it\n"
        "                          its sockets are only marked)\n"
        "      --net-rate-down RATE\n"
        "                          the link's rate the other way, where it differs: what\n"
        "                          says the foreground's downloads fill it\n"
        "      --net-dev DEV       that link (default: the interfaces of the default routes)\n"
        "      --no-net            leave CMD's network traffic alone\n"
        "      --dirty-max SIZE    hold CMD while it has more than SIZE of data not yet\n"
        "                          written to disk (default 32M; 0: no bound)\n"
        "  -r, --report            print what CMD got and gave back to stderr at the end\n"
        "      --json FILE         write the same as JSON to FILE ('-': stdout)\n"
        "      --recover           run nothing: finish the commits of runs that were\n"
        "                          interrupted in them, drop what killed runs left\n"
        "  -h, --help              show this help\n"
        "  -V, --version           show the version\n"
        "\n"
        "The exit status is CMD's (128+N if killed by signal N); 3 if its changes were not\n"
        "committed because of a conflict (the paths are listed); 2 for bad usage; 1 if\n"
        "specx idle itself failed. See specx-idle(1).\n");
}

/* "HH:MM[:SS]" into TM's time fields; the rest of S must be empty. */
static bool parse_clock(const char *s, struct tm *tm)
{
    int h, m, sec = 0, used = 0;
    if (sscanf(s, "%2d:%2d%n", &h, &m, &used) != 2)
        return false;
    if (s[used] == ':') {
        int more = 0;
        if (sscanf(s + used + 1, "%2d%n", &sec, &more) != 1)
            return false;
        used += 1 + more;
    }
    if (s[used] != '\0' || h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 60)
        return false;
    tm->tm_hour = h;
    tm->tm_min = m;
    tm->tm_sec = sec;
    return true;
}

bool idle_parse_time(const char *s, time_t now, time_t *out)
{
    if (s[0] == '@') {
        uint64_t epoch;
        if (!specx_parse_u64(s + 1, 1, (uint64_t)INT64_MAX / 2, &epoch))
            return false;
        *out = (time_t)epoch;
        return true;
    }
    struct tm tm;
    localtime_r(&now, &tm);
    int y, mo, d, used = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &used) == 3) {
        if ((s[used] != ' ' && s[used] != 'T') || mo < 1 || mo > 12 || d < 1 || d > 31)
            return false;
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        s += used + 1;
    }
    if (!parse_clock(s, &tm))
        return false;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    if (t == (time_t)-1 || (used && tm.tm_mday != d)) /* 2026-02-31 normalises: refuse it */
        return false;
    *out = t;
    return true;
}

static int take_deadline(int opt, const char *arg, time_t now, struct idle_options *o,
                         char *err, size_t errsize)
{
    if (o->deadline)
        return specx_format_error(err, errsize, "give one of --deadline and --within, once");
    if (opt == 'w') {
        uint64_t ns;
        if (!specx_parse_duration(arg, &ns) || ns < 1000000000ull)
            return specx_format_error(err, errsize,
                                      "invalid --within '%s' (a duration of 1s or more)", arg);
        o->deadline = now + (time_t)(ns / 1000000000ull);
        return 0;
    }
    time_t t;
    if (!idle_parse_time(arg, now, &t))
        return specx_format_error(err, errsize, "invalid --deadline '%s' (HH:MM[:SS], "
                                  "YYYY-MM-DD HH:MM[:SS] or @EPOCH)", arg);
    if (t <= now)
        return specx_format_error(err, errsize, "--deadline '%s' is in the past", arg);
    o->deadline = t;
    return 0;
}

static int take_isolate(const char *arg, struct idle_options *o, char *err, size_t errsize)
{
    if (o->nisolate == IDLE_MAX_ISOLATE)
        return specx_format_error(err, errsize, "at most %d --isolate directories",
                                  IDLE_MAX_ISOLATE);
    if (arg[0] == '\0')
        return specx_format_error(err, errsize, "--isolate needs a directory");
    o->isolate[o->nisolate++] = arg;
    return 0;
}

static int take_commit(const char *arg, struct idle_options *o, char *err, size_t errsize)
{
    static const char *const names[] = { "auto", "never", "ask", NULL };
    for (int i = 0; names[i]; i++)
        if (strcmp(arg, names[i]) == 0) {
            o->commit = (enum idle_commit)i;
            return 0;
        }
    return specx_format_error(err, errsize, "invalid --commit '%s' (auto, never or ask)", arg);
}

int idle_options_parse(int argc, char **argv, time_t now, struct idle_options *o, char *err,
                       size_t errsize)
{
    static const struct option long_options[] = {
        { "isolate", required_argument, NULL, 'i' },
        { "commit", required_argument, NULL, 'c' },
        { "deadline", required_argument, NULL, 'd' },
        { "within", required_argument, NULL, 'w' },
        { "no-net", no_argument, NULL, 'N' },
        { "net-rate", required_argument, NULL, 'B' },
        { "net-rate-down", required_argument, NULL, 'b' },
        { "net-dev", required_argument, NULL, 'D' },
        { "dirty-max", required_argument, NULL, 'M' },
        { "report", no_argument, NULL, 'r' },
        { "json", required_argument, NULL, 'J' },
        { "recover", no_argument, NULL, 'R' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct idle_options){ .commit = COMMIT_AUTO, .net = true,
                                .dirty_max_bytes = IDLE_DIRTY_DEFAULT_BYTES };
    int opt, rc = 0;
    opterr = 0;
    /* '+': options end at the command's first word, so its own options stay its own. */
    while (rc == 0 && (opt = getopt_long(argc, argv, "+:i:c:d:w:rhV", long_options, NULL)) != -1) {
        switch (opt) {
        case 'i': rc = take_isolate(optarg, o, err, errsize); break;
        case 'c': rc = take_commit(optarg, o, err, errsize); break;
        case 'd':
        case 'w': rc = take_deadline(opt, optarg, now, o, err, errsize); break;
        case 'N': o->net = false; break;
        case 'B':
            if (!specx_parse_rate(optarg, &o->net_rate_bps))
                rc = specx_format_error(err, errsize, "invalid --net-rate '%s' (e.g. 100mbit, "
                                        "1gbit)", optarg);
            break;
        case 'b':
            if (!specx_parse_rate(optarg, &o->net_rate_down_bps))
                rc = specx_format_error(err, errsize, "invalid --net-rate-down '%s' (e.g. "
                                        "500mbit, 1gbit)", optarg);
            break;
        case 'D': o->net_dev = optarg; break;
        case 'M':
            if (strcmp(optarg, "0") == 0)
                o->dirty_max_bytes = 0;
            else if (!specx_parse_size(optarg, &o->dirty_max_bytes))
                rc = specx_format_error(err, errsize, "invalid --dirty-max '%s' (e.g. 64M, 1G; "
                                        "0 for no bound)", optarg);
            break;
        case 'r': o->report = true; break;
        case 'J': o->json = optarg; break;
        case 'R': o->recover = true; break;
        case 'h': o->help = true; break;
        case 'V': o->version = true; break;
        case ':':
            return specx_format_error(err, errsize, "option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt)
                return specx_format_error(err, errsize,
                                          "invalid option '-%c'; see 'specx idle --help'", optopt);
            return specx_format_error(err, errsize,
                                      "invalid option '%s'; see 'specx idle --help'",
                                      argv[optind - 1]);
        }
    }
    if (rc < 0 || o->help || o->version)
        return rc;
    if (o->recover)
        return optind < argc ? specx_format_error(err, errsize, "--recover takes no command")
                             : 0;
    if (optind >= argc)
        return specx_format_error(err, errsize, "no command; see 'specx idle --help'");
    if (o->commit != COMMIT_AUTO && o->nisolate == 0)
        return specx_format_error(err, errsize, "--commit needs --isolate");
    /* The receive side works on the interfaces the queue found (net_receive.h). */
    if (o->net_rate_down_bps && !o->net_rate_bps)
        return specx_format_error(err, errsize, "--net-rate-down needs --net-rate");
    o->argv = argv + optind;
    return 0;
}
