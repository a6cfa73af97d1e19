/* specx share --follow: where something else already time-shares the machine (Slurm's gang
 * scheduling suspends and resumes jobs in turns; a script freezes Kubernetes pods), specx share
 * schedules nothing. It watches which of the given cgroups are frozen, learns their rotation
 * (who ran after whom, how long a turn lasts), and prefetches the job it predicts next as the
 * rotation itself would (docs/design/share.md). It never freezes or thaws anything. */
#include "share/follow.h"

#include <errno.h>
#include <signal.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "kernel/freezer.h"
#include "kernel/kfile.h"
#include "common/json.h"
#include "share/memory.h"
#include "share/prefetcher.h"
#include "share/slurm.h"
#include "common/util.h"

#define WATCH_NS (20ull * 1000000ull)
/* --follow-slurm looks at the whole tree this often besides when inotify says it changed. */
#define RESCAN_NS (2000ull * 1000000ull)

struct followed {
    struct share_job job; /* job.mem is the followed group */
    bool frozen, gone;
    bool found_late; /* Slurm started it after our first look */
    uint64_t turn_start, turn_ns_total;
    unsigned turns_ended;
    struct followed *successor; /* thawed after this one last time (NULL: not seen) */
};

/* What is kept of a Slurm job once its group is gone (its entry is freed: a node's daemon
 * sees jobs without end). */
struct ended {
    char *group;
    unsigned number;
    unsigned turns, turns_ended;
    uint64_t turn_ns_total, prefetched, unused;
};

/* A turn seen, for the JSON report: its job, when it began, the job predicted for it (0:
 * none) and whether the prediction counted. */
struct seen_turn {
    unsigned job, predicted;
    bool counted;
    uint64_t start_ns;
    uint64_t faults_first_second; /* major faults of its job's processes (UINT64_MAX: unknown) */
};
/* A daemon's report keeps the first this many turns. */
#define SEEN_TURNS_MAX 100000

struct follow {
    const struct share_options *opt;
    uint64_t start_ns;
    struct seen_turn *turns;
    size_t nturns, turns_cap;
    struct followed **g;   /* each allocated on its own: the prefetcher holds their jobs */
    size_t n, cap;
    struct followed *current, *predicted;
    uint64_t model_at;
    double bandwidth;
    unsigned right, wrong;
    struct share_slurm *slurm; /* --follow-slurm: the groups come and go; NULL: a fixed list */
    bool scanned;              /* the first scan is done: jobs found later are new */
    uint64_t scanned_at;
    struct ended *ended;
    size_t nended, ended_cap;
    /* The turn whose first second is being counted (NULL: none), its record, its job's major
     * faults when it began, and when the second is over. */
    struct followed *first_second_of;
    size_t first_second_turn;
    uint64_t first_second_faults, first_second_end;
};

/* PATH as a group: v1 if it has the v1 freezer's file, v2 if it has cgroup.freeze. */
static int open_group(const char *path, struct specx_cgroup *cg)
{
    char file[PATH_MAX + 32];
    struct stat st;
    snprintf(cg->dir, sizeof cg->dir, "%s", path);
    snprintf(file, sizeof file, "%s/freezer.state", path);
    if (stat(file, &st) == 0) {
        cg->version = SPECX_CG_V1;
        return 0;
    }
    snprintf(file, sizeof file, "%s/cgroup.freeze", path);
    if (stat(file, &st) == 0) {
        cg->version = SPECX_CG_V2;
        return 0;
    }
    return -1;
}

/* Whether the group's job is out of its turn now. A Slurm job without a process (starting, or
 * ending) is as it was, IF_UNKNOWN at first. */
static bool is_suspended(const struct follow *f, const struct followed *g, bool if_unknown)
{
    if (!f->slurm)
        return specx_freezer_is_frozen(&g->job.mem);
    int state = share_slurm_job_state(&g->job.mem);
    return state < 0 ? if_unknown : state == 1;
}

static size_t index_of(const struct follow *f, const struct followed *g)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->g[i] == g)
            return i;
    return SIZE_MAX;
}

/* The job predicted after G: who followed it last time, else the next group in the order
 * given (or found) that is still there. */
static struct followed *predict_after(const struct follow *f, const struct followed *g)
{
    if (g->successor && !g->successor->gone)
        return g->successor;
    size_t i = index_of(f, g);
    for (size_t k = 1; k < f->n; k++) {
        struct followed *next = f->g[(i + k) % f->n];
        if (!next->gone)
            return next;
    }
    return NULL;
}

/* Eq. 11 with T the end of G's turn as learned from its past turns (unknown before its first
 * turn ended: no model prefetch then). */
static uint64_t model_start(const struct follow *f, const struct followed *g,
                            const struct followed *next)
{
    if (f->opt->prefetch != PREFETCH_MODEL || !g->turns_ended || f->bandwidth <= 0)
        return UINT64_MAX;
    uint64_t turn = g->turn_ns_total / g->turns_ended;
    uint64_t lead = (uint64_t)((double)share_memory_swapped(&next->job) / f->bandwidth * 1e9);
    return lead >= turn ? g->turn_start : g->turn_start + turn - lead;
}

/* The major faults of the job's processes so far (/proc/PID/stat majflt, and cmajflt of the
 * children they have waited for): a Slurm job has no memory group of its own to ask. */
static uint64_t major_faults(const struct share_job *j)
{
    pid_t pids[SPECX_CGROUP_PROCS_MAX];
    long n = share_memory_processes(j, pids);
    uint64_t faults = 0;
    for (long i = 0; i < n; i++) {
        char path[64], text[1024];
        unsigned long long own, children;
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pids[i]);
        const char *p = specx_kfile_read(path, text, sizeof text) > 0 ? strrchr(text, ')') : NULL;
        /* After ") ": state (field 3), ..., minflt (10), cminflt, majflt (12), cmajflt. */
        if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %llu %llu", &own,
                        &children) == 2)
            faults += own + children;
    }
    return faults;
}

/* The first second of the turn being counted is over (or its turn is): its faults. */
static void end_first_second(struct follow *f)
{
    if (!f->first_second_of)
        return;
    uint64_t faults = major_faults(&f->first_second_of->job);
    f->turns[f->first_second_turn].faults_first_second =
        faults > f->first_second_faults ? faults - f->first_second_faults : 0;
    f->first_second_of = NULL;
}

static void note_turn(struct follow *f, struct followed *g, uint64_t now, bool counted)
{
    if (f->nturns >= SEEN_TURNS_MAX ||
        !specx_grow(&f->turns, &f->turns_cap, f->nturns, sizeof *f->turns, 64))
        return;
    end_first_second(f);
    f->turns[f->nturns] = (struct seen_turn){
        .job = g->job.number, .predicted = f->predicted ? f->predicted->job.number : 0,
        .counted = counted && f->predicted, .start_ns = now - f->start_ns,
        .faults_first_second = UINT64_MAX };
    f->first_second_of = g;
    f->first_second_turn = f->nturns++;
    f->first_second_faults = major_faults(&g->job);
    f->first_second_end = now + 1000000000ull;
}

/* G's turn begins. The first turn of a job Slurm started after ours was no one's to predict,
 * and need not follow a turn that ended (gang scheduling may let a new job run beside the one
 * whose turn it is, and suspend one of them once it has looked): it counts neither way, and
 * teaches who comes next only if the turn before it had ended. */
static void turn_begins(struct follow *f, struct followed *g, uint64_t now)
{
    g->turn_start = now;
    g->job.turns++;
    bool first_of_new = g->found_late && g->job.turns == 1;
    bool followed_ended = f->current && f->current != g &&
                          (f->current->frozen || f->current->gone);
    if (first_of_new && !followed_ended && f->current) {
        note_turn(f, g, now, false);
        return;
    }
    if (followed_ended)
        f->current->successor = g;
    if (f->predicted && !first_of_new)
        f->predicted == g ? f->right++ : f->wrong++;
    note_turn(f, g, now, !first_of_new);
    f->current = g;
    /* With the model, until B is known (measured on a prefetch) the prefetch happens at the
     * switch, as in specx share's own rotation. */
    if (f->opt->prefetch == PREFETCH_SWITCH ||
        (f->opt->prefetch == PREFETCH_MODEL && f->bandwidth <= 0))
        share_prefetcher_request(&(struct share_prefetch_request){ .job = &g->job,
                                                                   .turn = &g->job });
    f->predicted = predict_after(f, g);
    f->model_at = f->predicted ? model_start(f, g, f->predicted) : UINT64_MAX;
}

static void turn_ends(struct follow *f, struct followed *g, uint64_t now)
{
    if (f->first_second_of == g)
        end_first_second(f);
    if (g->turn_start) {
        g->turn_ns_total += now - g->turn_start;
        g->turns_ended++;
    }
    /* What was asked for before this turn is the job's own now (and a list that only grew
     * would keep its pages from ever being asked for again). */
    g->job.unused_bytes += share_memory_unused(&g->job);
    if (f->opt->release == RELEASE_COLD)
        share_memory_release(&g->job, MADV_COLD, UINT64_MAX);
    else if (f->opt->release == RELEASE_PAGEOUT)
        share_memory_release(&g->job, MADV_PAGEOUT, UINT64_MAX);
}

/* A Slurm job's id, from its group's name (job_J). */
static unsigned long job_id(const struct followed *g)
{
    const char *name = strrchr(g->job.mem.dir, '/');
    return name && strncmp(name, "/job_", 5) == 0 ? strtoul(name + 5, NULL, 10) : 0;
}

/* Where G goes in the list: at the end, or for Slurm's jobs in the order of their ids (the
 * order gang scheduling gives them turns in, the guess before a successor was seen). */
static size_t place_of(const struct follow *f, const struct followed *g)
{
    size_t at = f->n;
    while (f->slurm && at > 0 && job_id(f->g[at - 1]) > job_id(g))
        at--;
    return at;
}

static struct followed *add_group(struct follow *f, const struct specx_cgroup *cg)
{
    struct followed *g = calloc(1, sizeof *g);
    if (!g || !specx_grow(&f->g, &f->cap, f->n, sizeof *f->g, 16))
        specx_die(1, "out of memory");
    g->job.mem = *cg;
    g->job.tasks_below = f->slurm != NULL;
    g->job.number = (unsigned)(f->n + f->nended) + 1;
    size_t at = place_of(f, g);
    memmove(&f->g[at + 1], &f->g[at], (f->n - at) * sizeof *f->g);
    f->g[at] = g;
    f->n++;
    /* One found later has had no turn: its first begins when it is first seen running. */
    g->found_late = f->scanned;
    g->frozen = g->found_late || is_suspended(f, g, true);
    return g;
}

/* share_slurm_scan found the job group CG: new ones are followed from now on. */
static void found_job(void *ctx, const struct specx_cgroup *cg)
{
    struct follow *f = ctx;
    for (size_t i = 0; i < f->n; i++)
        if (!f->g[i]->gone && strcmp(f->g[i]->job.mem.dir, cg->dir) == 0)
            return;
    add_group(f, cg);
}

/* G's figures, in the form an ended job's are kept (its group's name G's own). */
static struct ended summary(const struct followed *g)
{
    return (struct ended){ .group = (char *)g->job.mem.dir, .number = g->job.number,
                           .turns = g->job.turns,
                           .turns_ended = g->turns_ended, .turn_ns_total = g->turn_ns_total,
                           .prefetched = g->job.prefetched_bytes, .unused = g->job.unused_bytes };
}

/* Slurm jobs whose groups are gone are forgotten, but for a line of the report, once no
 * prefetch can still refer to them. */
static void forget_gone(struct follow *f)
{
    if (share_prefetcher_busy())
        return;
    size_t kept = 0;
    for (size_t i = 0; i < f->n; i++) {
        struct followed *g = f->g[i];
        if (!g->gone) {
            f->g[kept++] = g;
            continue;
        }
        for (size_t k = 0; k < f->n; k++)
            if (f->g[k]->successor == g)
                f->g[k]->successor = NULL;
        if (f->current == g)
            f->current = NULL;
        if (f->predicted == g)
            f->predicted = NULL;
        if (f->first_second_of == g)
            f->first_second_of = NULL; /* its processes are gone: the count stays unknown */
        struct ended e = summary(g);
        if ((e.group = strdup(e.group)) &&
            specx_grow(&f->ended, &f->ended_cap, f->nended, sizeof *f->ended, 16))
            f->ended[f->nended++] = e;
        else
            free(e.group);
        free(g);
    }
    f->n = kept;
}

/* The current job's turn has ended, and a job that began beside it (a new job's first turn,
 * which Slurm let run while the current one still ran or had not yet stopped: a job faulting
 * its pages in stops at a SIGTSTP only once the fault is done) runs on: its turn is the one
 * that followed. Of several, the one that began last. */
static void adopt_running(struct follow *f)
{
    if (!f->current || !(f->current->frozen || f->current->gone))
        return;
    struct followed *running = NULL;
    for (size_t i = 0; i < f->n; i++) {
        struct followed *g = f->g[i];
        if (g != f->current && !g->gone && !g->frozen && g->job.turns &&
            (!running || g->turn_start > running->turn_start))
            running = g;
    }
    if (!running)
        return;
    f->current->successor = running;
    f->current = running;
    f->predicted = predict_after(f, running);
    f->model_at = f->predicted ? model_start(f, running, f->predicted) : UINT64_MAX;
}

/* One look at every group: turns that ended since the last, then turns that began (so that
 * a turn that begins knows the one before it ended, wherever the two stand in the list). */
static bool watch(struct follow *f, uint64_t now)
{
    bool any = false, began[f->n + 1]; /* + 1: none of size 0 */
    for (size_t i = 0; i < f->n; i++) {
        struct followed *g = f->g[i];
        began[i] = false;
        if (g->gone)
            continue;
        if (access(g->job.mem.dir, F_OK) < 0) {
            g->gone = true;
            g->job.ended_ns = now;
            continue;
        }
        any = true;
        bool frozen = is_suspended(f, g, g->frozen);
        began[i] = g->frozen && !frozen;
        if (!g->frozen && frozen)
            turn_ends(f, g, now);
        g->frozen = frozen;
    }
    for (size_t i = 0; i < f->n; i++)
        if (began[i])
            turn_begins(f, f->g[i], now);
    adopt_running(f);
    return any;
}

/* --follow-slurm: the jobs Slurm made or removed since the last look. */
static void rescan(struct follow *f, bool changed, uint64_t now)
{
    if (!changed && now - f->scanned_at < RESCAN_NS)
        return;
    share_slurm_scan(f->slurm, found_job, f);
    f->scanned = true;
    f->scanned_at = now;
    forget_gone(f);
}

static void collect(struct follow *f)
{
    struct share_prefetch_done d;
    if (!share_prefetcher_collect(&d))
        return;
    d.job->prefetched_bytes += d.bytes;
    f->bandwidth = share_bandwidth_update(f->bandwidth, &d);
}

/* The report's rows: the jobs forgotten first (found first), then those still followed. */
static struct ended row(const struct follow *f, size_t i)
{
    return i < f->nended ? f->ended[i] : summary(f->g[i - f->nended]);
}

static double mean_turn_s(const struct ended *e)
{
    return e->turns_ended ? (double)e->turn_ns_total / e->turns_ended / 1e9 : 0.0;
}

static void report(const struct follow *f, FILE *out)
{
    size_t rows = f->nended + f->n;
    fprintf(out, "specx share --follow: %zu groups; predictions of the next turn: %u right, "
                 "%u wrong\n", rows, f->right, f->wrong);
    fprintf(out, "  %-3s %-50s %6s %12s %12s %12s\n", "n", "group", "turns", "mean turn s",
            "prefetched", "unused");
    for (size_t i = 0; i < rows; i++) {
        struct ended e = row(f, i);
        fprintf(out, "  %-3zu %-50.50s %6u %12.2f %8.1f MiB %8.1f MiB\n", i + 1, e.group,
                e.turns, mean_turn_s(&e), (double)e.prefetched / (1 << 20),
                (double)e.unused / (1 << 20));
    }
}

static int write_json(const struct follow *f, const char *file)
{
    FILE *out = strcmp(file, "-") == 0 ? stdout : fopen(file, "w");
    if (!out)
        return -1;
    size_t rows = f->nended + f->n;
    fprintf(out, "{\n  \"follow\": true, \"slurm\": %s, \"predicted_right\": %u, "
                 "\"predicted_wrong\": %u,\n  \"groups\": [\n", f->slurm ? "true" : "false",
            f->right, f->wrong);
    for (size_t i = 0; i < rows; i++) {
        struct ended e = row(f, i);
        fprintf(out, "    {\"job\": %u, \"group\": ", e.number);
        specx_json_string(out, e.group);
        fprintf(out, ", \"turns\": %u, \"mean_turn_s\": %.6f, \"prefetched_bytes\": %llu, "
                     "\"prefetched_unused_bytes\": %llu}%s\n", e.turns, mean_turn_s(&e),
                (unsigned long long)e.prefetched, (unsigned long long)e.unused,
                i + 1 < rows ? "," : "");
    }
    fputs("  ],\n  \"turns\": [\n", out);
    for (size_t i = 0; i < f->nturns; i++) {
        const struct seen_turn *t = &f->turns[i];
        fprintf(out, "    {\"job\": %u, \"start_s\": %.3f, \"predicted\": ", t->job,
                (double)t->start_ns / 1e9);
        fprintf(out, t->predicted ? "%u" : "null", t->predicted);
        fprintf(out, ", \"counted\": %s, \"major_faults_first_second\": ",
                t->counted ? "true" : "false");
        fprintf(out, t->faults_first_second == UINT64_MAX ? "null" : "%llu",
                (unsigned long long)t->faults_first_second);
        fprintf(out, "}%s\n", i + 1 < f->nturns ? "," : "");
    }
    fputs("  ]\n}\n", out);
    return out == stdout ? fflush(out) : fclose(out);
}

/* The groups of --follow, as given: each must be a group with a freezer. */
static void add_given(struct follow *f)
{
    for (size_t i = 0; i < f->opt->njobs; i++) {
        const char *path = f->opt->jobs[i].argv[0];
        struct specx_cgroup cg;
        if (f->opt->jobs[i].argv[1] || open_group(path, &cg) < 0)
            specx_die(2, "--follow: '%s' is no cgroup with a freezer", path);
        add_group(f, &cg)->job.argv = f->opt->jobs[i].argv;
    }
}

/* Waits up to WATCH_NS for a signal (its number into *STOP) or, with --follow-slurm, a change
 * of Slurm's tree (true). */
static bool wait_a_little(struct follow *f, int sigfd, int *stop)
{
    struct pollfd p[2] = { { .fd = sigfd, .events = POLLIN },
                           { .fd = f->slurm ? share_slurm_fd(f->slurm) : -1, .events = POLLIN } };
    struct signalfd_siginfo si;
    if (poll(p, 2, (int)(WATCH_NS / 1000000)) <= 0)
        return false;
    if ((p[0].revents & POLLIN) && read(sigfd, &si, sizeof si) == sizeof si &&
        si.ssi_signo != SIGCHLD)
        *stop = (int)si.ssi_signo;
    return p[1].revents & POLLIN;
}

int share_follow(const struct share_options *o, int sigfd)
{
    struct follow f = { .opt = o, .model_at = UINT64_MAX, .start_ns = specx_now_ns() };
    struct share_slurm slurm;
    char err[512];
    if (o->follow_slurm) {
        if (share_slurm_open(&slurm, o->slurm_root, err, sizeof err) < 0)
            specx_die(2, "%s", err);
        f.slurm = &slurm;
        rescan(&f, true, specx_now_ns());
    } else {
        add_given(&f);
    }
    if (o->prefetch != PREFETCH_NONE && share_prefetcher_start() < 0)
        specx_die(1, "cannot start the prefetching thread: %s", strerror(errno));
    int stop = 0;
    bool changed = false;
    while (!stop && (watch(&f, specx_now_ns()) || f.slurm)) {
        changed = wait_a_little(&f, sigfd, &stop);
        collect(&f);
        if (f.slurm)
            rescan(&f, changed, specx_now_ns());
        if (f.first_second_of && specx_now_ns() >= f.first_second_end)
            end_first_second(&f);
        if (f.predicted && f.current && specx_now_ns() >= f.model_at) {
            struct share_prefetch_request next = { .job = &f.predicted->job,
                                                   .turn = &f.current->job };
            share_prefetcher_request(&next);
            f.model_at = UINT64_MAX;
        }
    }
    if (o->report)
        report(&f, stderr);
    if (o->json && write_json(&f, o->json) < 0)
        specx_warn("cannot write %s: %s", o->json, strerror(errno));
    if (f.slurm)
        share_slurm_close(f.slurm);
    for (size_t i = 0; i < f.n; i++)
        free(f.g[i]);
    free(f.g);
    for (size_t i = 0; i < f.nended; i++)
        free(f.ended[i].group);
    free(f.ended);
    free(f.turns);
    return stop ? 128 + stop : 0;
}
