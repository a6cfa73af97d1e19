/* specx run: runs an unmodified program under the preload runtime libspecx.so, which lets a
 * sandboxed speculative copy of it run ahead while it waits for the disk and turns the reads
 * the copy would block on into prefetches (Fraser & Chang 2003). Everything the program sees
 * passes through: arguments, environment (plus LD_PRELOAD), standard streams, signals, exit
 * status. Asked for no report, specx run becomes the command (exec), so that its process id,
 * its parent and the way it ends (a core dump included) are the command's own; asked for a
 * report, it waits for the command and reports the statistics its processes kept. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "common/paths.h"
#include "run/history/keeper.h"
#include "run/run.h"
#include "common/history_trace.h"
#include "common/run_env.h"
#include "run/run_oom_guard.h"
#include "run/run_report.h"
#include "run/run_sampler.h"
#include "run/run_stats.h"
#include "run/supervisor/supervisor.h"
#include "common/util.h"

struct options {
    bool report;
    const char *report_file; /* --report=FILE; NULL: stderr */
    const char *json;
    bool speculation;
    bool memory_control;
    unsigned horizon;
    bool verbose;
    const char *refork; /* "basic" or "fast" (--refork, or implied by --cow); NULL: default */
    const char *cow;    /* "basic" or "one-way" as given */
    const char *backend; /* "auto", "preload" or "trace" */
    enum history_mode history;
    bool history_given;  /* --history on the command line */
};

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: specx run [OPTIONS] [--] COMMAND [ARGS...]\n"
        "\n"
        "Run COMMAND with speculative pre-execution: when it is about to wait for data\n"
        "that is not in memory, a sandboxed copy of it runs ahead and prefetches what it\n"
        "will read next.\n"
        "\n"
        "Options:\n"
        "  -r, --report[=FILE]\n"
        "                    print I/O stall and prefetch statistics at the end, to FILE\n"
        "                    or (by default) to stderr\n"
        "  -j, --json FILE   write the same statistics as JSON to FILE ('-': stdout)\n"
        "  -n, --no-spec     interpose and count, but never speculate (a baseline)\n"
        "      --no-memory-control\n"
        "                    never stop speculation for the memory it costs the program\n"
        "                    (the control of fraser-chang-2003 section 6; to show its effect)\n"
        "  -H, --horizon N   at most N prefetches ahead of the program (1-%u, default %u)\n"
        "      --refork=basic|fast\n"
        "                    how a speculative copy is made: a plain clone (basic, the\n"
        "                    default), or one that leaves large anonymous regions out and\n"
        "                    fills them on demand (fast; needs userfaultfd)\n"
        "      --cow=basic|one-way\n"
        "                    copy-on-write between the program and its copy: both ways\n"
        "                    (basic, with --refork=basic) or one way (with --refork=fast)\n"
        "      --backend=auto|preload|trace\n"
        "                    which mechanism speculates: the preload runtime inside the\n"
        "                    program, or a supervisor outside it (trace) that clones the\n"
        "                    program's stalled threads; auto (the default) takes trace for\n"
        "                    statically linked and Go programs, preload for the rest\n"
        "      --history=off|record|replay|auto\n"
        "                    what the command's earlier runs read, brought in ahead of\n"
        "                    it (replay), and what this run reads, kept for the next\n"
        "                    (record); auto (the default) does both; see specx-history(1)\n"
        "  -v, --verbose     the runtime reports speculation events on stderr (and the\n"
        "                    OOM guard each process whose memory it freed)\n"
        "  -h, --help        show this help\n"
        "  -V, --version     show the version\n"
        "\n"
        "The exit status is COMMAND's; 126/127 if it cannot be run. See specx-run(1).\n",
        SPECX_HORIZON_MAX, SPECX_HORIZON_DEFAULT);
}

static const char *refork_mode(const char *arg)
{
    if (strcmp(arg, "basic") != 0 && strcmp(arg, "fast") != 0)
        specx_die(2, "invalid refork mode '%s' (expected basic or fast)", arg);
    return arg;
}

static const char *backend_name(const char *arg)
{
    if (strcmp(arg, "auto") != 0 && strcmp(arg, "preload") != 0 && strcmp(arg, "trace") != 0)
        specx_die(2, "invalid backend '%s' (expected auto, preload or trace)", arg);
    return arg;
}

static const char *cow_mode(const char *arg)
{
    if (strcmp(arg, "basic") != 0 && strcmp(arg, "one-way") != 0)
        specx_die(2, "invalid copy-on-write mode '%s' (expected basic or one-way)", arg);
    return arg;
}

/* The fast refork and one-way copy-on-write are one mechanism (lazy_memory.h): the regions
 * a fast refork leaves out are exactly those the program no longer shares with its copy. So
 * either switch decides both, and only the two consistent pairs exist. */
static const char *combined_refork_mode(const char *refork, const char *cow)
{
    if (!cow)
        return refork;
    const char *implied = strcmp(cow, "one-way") == 0 ? "fast" : "basic";
    if (refork && strcmp(refork, implied) != 0)
        specx_die(2, "--refork=%s and --cow=%s cannot be combined: a fast refork is one-way "
                  "copy-on-write (use --refork=fast with --cow=one-way, or basic with basic)",
                  refork, cow);
    return implied;
}

/* auto, unless SPECX_RUN_HISTORY names another mode (a test suite's or a benchmark's runs
 * that must not learn from each other). */
static enum history_mode default_history(void)
{
    enum history_mode mode = HISTORY_AUTO;
    const char *s = getenv("SPECX_RUN_HISTORY");
    if (s && !history_mode_parse(s, &mode))
        specx_die(2, "invalid history mode '%s' in SPECX_RUN_HISTORY", s);
    return mode;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        { "report", optional_argument, NULL, 'r' }, { "json", required_argument, NULL, 'j' },
        { "no-spec", no_argument, NULL, 'n' },  { "horizon", required_argument, NULL, 'H' },
        { "verbose", no_argument, NULL, 'v' },  { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },  { "refork", required_argument, NULL, 'R' },
        { "cow", required_argument, NULL, 'C' }, { "backend", required_argument, NULL, 'B' },
        { "no-memory-control", no_argument, NULL, 'M' },
        { "history", required_argument, NULL, 'Y' }, { NULL, 0, NULL, 0 },
    };
    *o = (struct options){ .speculation = true, .memory_control = true,
                           .horizon = SPECX_HORIZON_DEFAULT, .backend = "auto",
                           .history = default_history() };
    int c;
    uint64_t v;
    /* '+': options end at COMMAND, whose own options are its business; ':': errors are ours
     * to report, in one line. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:rj:nH:vhV", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            o->report = true;
            o->report_file = optarg;
            break;
        case 'j': o->json = optarg; break;
        case 'n': o->speculation = false; break;
        case 'M': o->memory_control = false; break;
        case 'v': o->verbose = true; break;
        case 'H':
            if (!specx_parse_u64(optarg, 1, SPECX_HORIZON_MAX, &v))
                specx_die(2, "invalid horizon '%s' (expected 1-%u)", optarg, SPECX_HORIZON_MAX);
            o->horizon = (unsigned)v;
            break;
        case 'R': o->refork = refork_mode(optarg); break;
        case 'C': o->cow = cow_mode(optarg); break;
        case 'B': o->backend = backend_name(optarg); break;
        case 'Y':
            if (!history_mode_parse(optarg, &o->history))
                specx_die(2, "invalid history mode '%s' (expected off, record, replay or auto)",
                          optarg);
            o->history_given = true;
            break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("specx run %s\n", SPECX_VERSION); exit(0);
        case ':':
            specx_die(2, "option '%s' needs a value; see 'specx run --help'", argv[optind - 1]);
        default:
            if (optopt > 0 && optopt < 256)
                specx_die(2, "invalid option '-%c'; see 'specx run --help'", optopt);
            specx_die(2, "invalid option '%s'; see 'specx run --help'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        specx_die(2, "no command given; see 'specx run --help'");
    o->refork = combined_refork_mode(o->refork, o->cow);
    return optind;
}

/* ---- the command's environment ---- */

static void set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old || !*old) {
        setenv("LD_PRELOAD", lib, 1);
        return;
    }
    size_t n = strlen(lib) + strlen(old) + 2;
    char *both = malloc(n);
    if (!both)
        _exit(126);
    snprintf(both, n, "%s:%s", lib, old); /* ours first; an existing preload is kept */
    setenv("LD_PRELOAD", both, 1);
}

/* Whether this run's trace is named in the environment (history_keeper_export). */
static bool history_exported;
static struct history_keeper keeper;

/* STATS: where the runtime keeps its counters, or NULL when nobody will read them. LIB:
 * the runtime to preload, or NULL (--backend=trace: the supervisor alone speculates). */
static void prepare_environment(const struct options *o, const char *lib, const char *stats)
{
    char horizon[16];
    snprintf(horizon, sizeof horizon, "%u", o->horizon);
    /* The dispatcher's variables are for specx's own components, not the command. */
    unsetenv(SPECX_EXE_ENV);
    unsetenv(SPECX_PATH_ENV);
    if (!history_exported)
        unsetenv(SPECX_HISTORY_TRACE_ENV); /* an outer run's trace is not this run's */
    if (lib)
        set_preload(lib);
    if (stats)
        setenv(SPECX_STATS_ENV, stats, 1);
    else
        unsetenv(SPECX_STATS_ENV);
    setenv(SPECX_HORIZON_ENV, horizon, 1);
    if (!o->speculation)
        setenv(SPECX_DISABLE_ENV, "1", 1);
    if (!o->memory_control)
        setenv(SPECX_NO_MEMORY_CONTROL_ENV, "1", 1);
    else
        unsetenv(SPECX_NO_MEMORY_CONTROL_ENV); /* only this run's options count */
    if (o->verbose)
        setenv(SPECX_VERBOSE_ENV, "1", 1);
    if (o->refork)
        setenv(SPECX_REFORK_ENV, o->refork, 1);
    else
        unsetenv(SPECX_REFORK_ENV); /* only this run's options count */
}

/* ---- running the command ---- */

static volatile sig_atomic_t command_pid;

/* Signals someone sent to specx run go to the command. Those the terminal generates
 * (si_code > 0) reached the command already: it is in the same process group. */
static void forward_signal(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    if (command_pid > 0 && info->si_code <= 0)
        kill(command_pid, sig);
}

static void forward_signals(void)
{
    static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM,
                                SIGWINCH, SIGCONT };
    struct sigaction sa = { .sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* In the forked child: exec the command; report errno through the close-on-exec pipe. */
static _Noreturn void exec_command(char **argv, int report_fd)
{
    execvp(argv[0], argv);
    int err = errno;
    if (write(report_fd, &err, sizeof err) < 0)
        _exit(127);
    _exit(127);
}

/* Like a shell: 127 when the command is not found, 126 when it cannot be executed. */
static int exec_failure(const char *cmd, int err)
{
    if (err == ENOENT && !strchr(cmd, '/')) {
        specx_warn("%s: command not found", cmd);
        return 127;
    }
    specx_warn("%s: %s", cmd, strerror(err));
    return err == ENOENT ? 127 : 126;
}

/* Without a report nothing is left to do after the command: become it. */
static int become_command(char **argv, const struct options *o, const char *lib)
{
    if (history_keeper_prepare(&keeper, o->history, argv))
        history_exported = history_keeper_detach(&keeper);
    prepare_environment(o, lib, NULL);
    if (o->speculation)
        run_oom_guard_start(getpid(), o->verbose);
    execvp(argv[0], argv);
    return exec_failure(argv[0], errno);
}

/* Watches the started command from outside: with the supervisor (which speculates) when
 * SUPERVISE, else with the sampler alone. False if no thread could be started. */
static struct supervisor sup;

/* Waits for the command to end and returns its wait status. A thread of specx run may be
 * tracing a thread of the command (the supervisor), and a wait of its real parent's process
 * would then take the tracer's stops (wait(2) treats a tracee of the parent's own process as
 * traced by the waiter): so the end is awaited on a pidfd, which is readable only once the
 * whole command has exited, and only then is it reaped. */
static int wait_command(pid_t pid)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
    while (pidfd >= 0 && poll(&pfd, 1, -1) < 0 && errno == EINTR)
        ;
    if (pidfd >= 0)
        close(pidfd);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

static bool watch_from_outside(struct run_sampler *sampler, pid_t pid, bool supervise,
                               unsigned horizon)
{
    static const struct sampler_hooks hooks = {
        .ctx = &sup, .wait_until = supervisor_wait_until, .sampled = supervisor_sampled,
        .ended = supervisor_ended,
    };
    if (!supervise)
        return run_sampler_start(sampler, pid, NULL);
    supervisor_init(&sup, pid, horizon);
    return run_sampler_start(sampler, pid, &hooks);
}

/* What specx run keeps of the descriptors the command inherited, once the command has them.
 * A parent that held on to them would be one more user of the command's files: the reader of
 * a pipe the command closed would wait for specx run's end to see end of file, a TCP peer for
 * its FIN, a writer to the command's standard input for its EPIPE. specx run's own
 * descriptors are close-on-exec; every other one above 2 is the command's and is closed here.
 * Standard input becomes /dev/null, and standard output too unless a report goes there;
 * standard error stays, for specx run's own messages. */
static void let_go_of_inherited(bool keep_stdout)
{
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        if (!keep_stdout)
            dup2(null, STDOUT_FILENO);
        close(null);
    }
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        int fd = atoi(e->d_name);
        int flags = e->d_name[0] == '.' || fd <= STDERR_FILENO || fd == dirfd(d)
                        ? FD_CLOEXEC
                        : fcntl(fd, F_GETFD);
        if (flags >= 0 && !(flags & FD_CLOEXEC))
            close(fd);
    }
    closedir(d);
}

/* Runs the command; fills exit status or signal. Returns -1 if it could not be started
 * (after saying why), with the status a shell would give in *failure. */
static int run_command(char **argv, const struct options *o, const char *lib,
                       const char *stats, struct run_result *r, int *failure)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        specx_die(126, "cannot create a pipe: %s", strerror(errno));
    bool keeping = history_keeper_prepare(&keeper, o->history, argv);
    if (keeping && lib) {
        history_keeper_export(&keeper, getpid());
        history_exported = true;
    }
    keeper.outside = !lib; /* no runtime in the command to note its reads: sample them */
    uint64_t t0 = specx_now_ns();
    pid_t pid = fork();
    if (pid < 0)
        specx_die(126, "cannot fork: %s", strerror(errno));
    if (pid == 0) {
        close(pipefd[0]);
        prepare_environment(o, lib, stats);
        exec_command(argv, pipefd[1]);
    }
    command_pid = pid;
    close(pipefd[1]);
    if (keeping)
        history_keeper_start_thread(&keeper, pid);
    let_go_of_inherited(o->json && strcmp(o->json, "-") == 0);
    if (o->speculation)
        run_oom_guard_start(pid, o->verbose);
    int err = 0;
    ssize_t n;
    while ((n = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR)
        ;
    close(pipefd[0]);
    /* The runtime cannot enter a static or Go program: watch it from outside instead. Static:
     * a sampler stuck in a file system is left behind still pointing at it. */
    static struct run_sampler sampler;
    bool sampling = n == 0 && (r->supervised || r->kind == ELF_STATIC || r->kind == ELF_GO) &&
                    watch_from_outside(&sampler, pid, r->supervised && o->speculation,
                                       o->horizon);
    int status = wait_command(pid);
    r->elapsed_ns = specx_now_ns() - t0;
    history_keeper_finish_thread(&keeper);
    r->history = keeper.counts;
    if (sampling)
        r->outside = run_sampler_stop(&sampler);
    if (sampling && r->supervised && o->speculation)
        r->supervisor = sup.counts; /* the sampler's thread, its only writer, has ended */
    command_pid = 0;
    if (n == (ssize_t)sizeof err) {
        *failure = exec_failure(argv[0], err);
        return -1;
    }
    r->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return 0;
}

/* ---- reports and the final status ---- */

/* Where the reports go, opened before the command starts: a path that cannot be written is
 * refused before the command runs, not found out after it has done its work. */
struct report_files {
    FILE *table; /* NULL: no --report */
    FILE *json;  /* NULL: no --json */
};

/* PATH opened for a report ('-': stdout), or exit 2 with one line. */
static FILE *open_report(const char *path, FILE *standard)
{
    if (!path || strcmp(path, "-") == 0)
        return standard;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        specx_die(2, "cannot write %s: %s", path, strerror(errno));
    return f;
}

static struct report_files open_reports(const struct options *o)
{
    return (struct report_files){
        .table = o->report ? open_report(o->report_file, stderr) : NULL,
        .json = o->json ? open_report(o->json, stdout) : NULL,
    };
}

static void close_report(FILE *f, const char *path)
{
    if (f == stdout || f == stderr) {
        fflush(f);
        return;
    }
    if (fclose(f) != 0)
        specx_warn("cannot write %s: %s", path, strerror(errno));
}

static void write_reports(const struct options *o, const struct report_files *files,
                          const struct run_result *r)
{
    if (files->table) {
        run_report_table(files->table, r);
        close_report(files->table, o->report_file);
    }
    if (files->json) {
        run_report_json(files->json, r);
        close_report(files->json, o->json);
    }
}

/* specx run dies of the signal that killed the command, without a core dump of its own. */
static _Noreturn void die_like(int sig)
{
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

int specx_run_main(int argc, char **argv)
{
    specx_set_progname("specx run");
    struct options o;
    int first = parse_options(argc, argv, &o);
    char **cmd = argv + first;

    char lib[PATH_MAX], stats[PATH_MAX];
    if (specx_find_component("libspecx.so", lib, sizeof lib) < 0)
        specx_die(127, "libspecx.so is not installed");
    enum elf_kind kind = elf_kind_of(cmd[0]);
    /* The supervisor runs in specx run, which must then stay the command's parent. */
    bool supervised = strcmp(o.backend, "trace") == 0 ||
                      (strcmp(o.backend, "auto") == 0 && (kind == ELF_STATIC || kind == ELF_GO));
    /* Not both: the runtime loaded into a program the supervisor serves would only map its
     * statistics into it, shared memory the supervisor's copies may not have. */
    const char *preload = supervised ? NULL : lib;
    /* --no-spec is the baseline without prefetching of any kind, unless history is asked
     * for by name. */
    if (!o.speculation && !o.history_given)
        o.history = HISTORY_OFF;
    if (!o.report && !o.json && !supervised)
        return become_command(cmd, &o, preload);
    struct report_files files = open_reports(&o);
    int stats_fd = run_stats_create(stats, sizeof stats);
    if (stats_fd < 0)
        specx_die(126, "cannot create the statistics file: %s", strerror(errno));

    forward_signals();
    struct run_result r = { .argv = cmd, .speculation = o.speculation,
                            .memory_control = o.memory_control, .horizon = o.horizon,
                            .fast_refork = o.refork && strcmp(o.refork, "fast") == 0,
                            .kind = kind, .supervised = supervised };
    int failure;
    if (run_command(cmd, &o, preload, stats, &r, &failure) < 0) {
        run_stats_remove(stats, stats_fd);
        return failure;
    }
    if (run_stats_load(stats, &r.stats) < 0)
        specx_warn("cannot read the statistics: %s", strerror(errno));
    run_stats_remove(stats, stats_fd);
    write_reports(&o, &files, &r);
    run_stats_free(&r.stats);
    if (r.signal)
        die_like(r.signal);
    return r.exit_status;
}
