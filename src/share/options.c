/* See options.h. */
#include "share/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/units.h"
#include "common/util.h"

#define DEFAULT_QUANTUM_NS (5ull * 1000000000ull)

long share_split_commands(int argc, char **argv, struct share_command **out)
{
    size_t n = 1;
    for (int i = 0; i < argc; i++)
        n += strcmp(argv[i], ":::") == 0;
    struct share_command *cmds = calloc(n, sizeof *cmds);
    if (!cmds)
        return -1;
    size_t k = 0;
    int start = 0;
    for (int i = 0; i <= argc; i++) {
        if (i < argc && strcmp(argv[i], ":::") != 0)
            continue;
        if (i == start) { /* an empty command */
            free(cmds);
            return -1;
        }
        cmds[k++].argv = &argv[start];
        if (i < argc)
            argv[i] = NULL; /* ends the command's argv in place */
        start = i + 1;
    }
    *out = cmds;
    return (long)k;
}

long share_read_jobs_file(const char *file, struct share_command **out)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    struct share_command *cmds = NULL;
    size_t n = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        const char *p = line + strspn(line, " \t");
        if (*p == '\0' || *p == '#')
            continue;
        struct share_command *grown = realloc(cmds, (n + 1) * sizeof *cmds);
        char **argv = calloc(4, sizeof *argv);
        if (!grown || !argv) {
            free(argv);
            free(grown ? grown : cmds);
            free(line);
            fclose(f);
            errno = ENOMEM;
            return -1;
        }
        cmds = grown;
        argv[0] = "/bin/sh";
        argv[1] = "-c";
        argv[2] = strdup(p);
        cmds[n++].argv = argv;
    }
    free(line);
    fclose(f);
    *out = cmds;
    return (long)n;
}

void share_options_usage(FILE *out)
{
    fprintf(out,
        "Usage: specx share [OPTIONS] -- CMD [ARGS...] [::: CMD [ARGS...]]...\n"
        "       specx share [OPTIONS] --jobs FILE\n"
        "       specx share --follow [OPTIONS] CGROUP...\n"
        "       specx share --follow-slurm[=ROOT] [OPTIONS]\n"
        "\n"
        "Run memory-hungry jobs in turns instead of all at once: one job runs for a\n"
        "quantum while the others are frozen, and during its turn the next job's memory\n"
        "is brought back in, so that each turn starts warm (Suh et al. 2001).\n"
        "\n"
        "Options:\n"
        "  -q, --quantum DUR       length of a turn (default 5s; e.g. 500ms, 2s, 1m)\n"
        "  -m, --memory SIZE       memory limit of all jobs together (e.g. 512M, 2G;\n"
        "                          default: none of our own)\n"
        "      --scheduler rr|mlfq round robin (default), or the multi-level feedback\n"
        "                          queue of the paper's section 2\n"
        "      --prefetch none|switch|model\n"
        "                          bring the next job's swapped-out memory and evicted\n"
        "                          file pages back in: not at all, at the switch, or\n"
        "                          during the current turn, started when the paper's\n"
        "                          model says (Eq. 11; the default)\n"
        "      --release none|cold|pageout\n"
        "                          after a job's turn, page its memory out at once\n"
        "                          (pageout); none and cold: only mark it cold, as every\n"
        "                          frozen job's is (with --follow, none leaves it alone)\n"
        "                          (default none)\n"
        "      --mispredict P      prefetch a wrong job with probability P (0-1; for the\n"
        "                          benchmark's prediction-error curve)\n"
        "  -j, --jobs FILE         read the jobs from FILE, one shell command per line\n"
        "  -o, --output DIR        write each job's output to DIR/N.out and DIR/N.err\n"
        "                          (default: each line on our stdout or stderr, prefixed\n"
        "                          with \"[N] \", N the job's number from 1)\n"
        "      --follow            schedule nothing: watch the given cgroups, frozen and\n"
        "                          thawed in turns by someone else (Slurm, a script), and\n"
        "                          prefetch the one predicted next\n"
        "      --follow-slurm[=ROOT]\n"
        "                          the same for the jobs Slurm's gang scheduling suspends\n"
        "                          and resumes on this node, found as slurmd makes and\n"
        "                          removes their groups (below ROOT, default: Slurm's\n"
        "                          root in the cgroup freezer's hierarchy), until a\n"
        "                          signal ends it (see specx-share(1): SLURM)\n"
        "  -r, --report            print a table of the jobs and turns to stderr at the end\n"
        "      --json FILE         write the same as JSON to FILE ('-': stdout)\n"
        "  -h, --help              show this help\n"
        "  -V, --version           show the version\n"
        "\n"
        "The exit status is the worst of the jobs' (128+N for a job killed by signal N);\n"
        "2 for bad usage. See specx-share(1).\n");
}

static int parse_choice(const char *arg, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(arg, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return -1;
}

/* The value options; returns -1 with err filled on a bad value. */
static int take_option(int opt, const char *arg, struct share_options *o, char *err,
                       size_t errsize)
{
    static const char *const schedulers[] = { "rr", "mlfq", NULL };
    static const char *const prefetches[] = { "none", "switch", "model", NULL };
    static const char *const releases[] = { "none", "cold", "pageout", NULL };
    int choice;
    switch (opt) {
    case 'q':
        if (!specx_parse_duration(arg, &o->quantum_ns) || o->quantum_ns < 10000000ull)
            return specx_format_error(err, errsize,
                                      "invalid --quantum '%s' (a duration of 10ms or more)", arg);
        return 0;
    case 'm':
        if (!specx_parse_size(arg, &o->memory_bytes) || o->memory_bytes < (4u << 20))
            return specx_format_error(err, errsize,
                                      "invalid --memory '%s' (a size of 4M or more)", arg);
        return 0;
    case 'S':
        if (parse_choice(arg, schedulers, &choice) < 0)
            return specx_format_error(err, errsize, "invalid --scheduler '%s' (rr or mlfq)", arg);
        o->scheduler = (enum share_scheduler)choice;
        return 0;
    case 'P':
        if (parse_choice(arg, prefetches, &choice) < 0)
            return specx_format_error(err, errsize,
                                      "invalid --prefetch '%s' (none, switch or model)", arg);
        o->prefetch = (enum share_prefetch)choice;
        return 0;
    case 'R':
        if (parse_choice(arg, releases, &choice) < 0)
            return specx_format_error(err, errsize,
                                      "invalid --release '%s' (none, cold or pageout)", arg);
        o->release = (enum share_release)choice;
        return 0;
    case 'M':
        if (!specx_parse_double(arg, 0, 1, &o->mispredict))
            return specx_format_error(err, errsize, "invalid --mispredict '%s' (0 to 1)", arg);
        return 0;
    }
    return specx_format_error(err, errsize, "internal error: option %d", opt);
}

static int take_jobs(int argc, char **argv, const char *jobs_file, struct share_options *o,
                     char *err, size_t errsize)
{
    long n;
    if (o->follow_slurm) { /* the jobs are found as they come */
        if (o->follow || jobs_file || argc > 0)
            return specx_format_error(err, errsize, "--follow-slurm finds its jobs: give it no "
                                      "--follow, --jobs, commands or groups");
        return 0;
    }
    if (jobs_file && o->follow)
        return specx_format_error(err, errsize, "--follow takes cgroups, not --jobs");
    if (jobs_file && argc > 0)
        return specx_format_error(err, errsize, "give the jobs after '--' or with --jobs, not both");
    if (jobs_file) {
        n = share_read_jobs_file(jobs_file, &o->jobs);
        if (n < 0)
            return specx_format_error(err, errsize, "cannot read --jobs '%s': %s", jobs_file,
                                      strerror(errno));
    } else if (argc == 0) {
        return specx_format_error(err, errsize, o->follow ? "--follow needs the cgroups to follow"
                                                          : "no jobs; see 'specx share --help'");
    } else if (o->follow) { /* each argument a group */
        n = argc;
        o->jobs = calloc((size_t)argc, sizeof *o->jobs);
        for (int i = 0; o->jobs && i < argc; i++) {
            o->jobs[i].argv = calloc(2, sizeof(char *));
            if (!o->jobs[i].argv)
                return specx_format_error(err, errsize, "out of memory");
            o->jobs[i].argv[0] = argv[i];
        }
        if (!o->jobs)
            return specx_format_error(err, errsize, "out of memory");
    } else {
        n = share_split_commands(argc, argv, &o->jobs);
        if (n < 0)
            return specx_format_error(err, errsize,
                                      "an empty job: ':::' must stand between two commands");
    }
    if (n == 0)
        return specx_format_error(err, errsize, "no jobs in '%s'", jobs_file);
    o->njobs = (size_t)n;
    return 0;
}

int share_options_parse(int argc, char **argv, struct share_options *o, char *err,
                        size_t errsize)
{
    static const struct option long_options[] = {
        { "quantum", required_argument, NULL, 'q' },
        { "memory", required_argument, NULL, 'm' },
        { "scheduler", required_argument, NULL, 'S' },
        { "prefetch", required_argument, NULL, 'P' },
        { "release", required_argument, NULL, 'R' },
        { "mispredict", required_argument, NULL, 'M' },
        { "jobs", required_argument, NULL, 'j' },
        { "output", required_argument, NULL, 'o' },
        { "report", no_argument, NULL, 'r' },
        { "json", required_argument, NULL, 'J' },
        { "follow", no_argument, NULL, 'F' },
        { "follow-slurm", optional_argument, NULL, 'G' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct share_options){ .quantum_ns = DEFAULT_QUANTUM_NS, .prefetch = PREFETCH_MODEL };
    const char *jobs_file = NULL;
    int opt;
    opterr = 0;
    /* '+': options end at the first command word, so a job's own options stay its own. */
    while ((opt = getopt_long(argc, argv, "+:q:m:j:o:rhV", long_options, NULL)) != -1) {
        switch (opt) {
        case 'j': jobs_file = optarg; break;
        case 'o': o->output_dir = optarg; break;
        case 'r': o->report = true; break;
        case 'J': o->json = optarg; break;
        case 'F': o->follow = true; break;
        case 'G':
            o->follow_slurm = true;
            o->slurm_root = optarg;
            break;
        case 'h': o->help = true; break;
        case 'V': o->version = true; break;
        case ':':
            return specx_format_error(err, errsize, "option '%s' needs a value", argv[optind - 1]);
        case '?':
            if (optopt)
                return specx_format_error(err, errsize, "invalid option '-%c'; see 'specx share --help'",
                                          optopt);
            return specx_format_error(err, errsize, "invalid option '%s'; see 'specx share --help'",
                                      argv[optind - 1]);
        default:
            if (take_option(opt, optarg, o, err, errsize) < 0)
                return -1;
        }
    }
    if (o->help || o->version)
        return 0;
    return take_jobs(argc - optind, argv + optind, jobs_file, o, err, errsize);
}

void share_options_free(struct share_options *o)
{
    free(o->jobs); /* the argv of --jobs commands live as long as the process */
    o->jobs = NULL;
}
