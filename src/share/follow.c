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
#include "common/json.h"
#include "share/memory.h"
#include "share/prefetcher.h"
#include "common/util.h"

#define WATCH_NS (20ull * 1000000ull)

struct followed {
    struct share_job job; /* job.mem is the followed group */
    bool frozen, gone;
    uint64_t turn_start, turn_ns_total;
    unsigned turns_ended;
    size_t successor;     /* the group thawed after this one last time (SIZE_MAX: not seen) */
};

struct follow {
    const struct share_options *opt;
    struct followed *g;
    size_t n, current, predicted;
    uint64_t model_at;
    double bandwidth;
    unsigned right, wrong;
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

/* The job predicted after I: who followed it last time, else the next group in the order
 * given that is still there. */
static size_t predict_after(const struct follow *f, size_t i)
{
    if (f->g[i].successor != SIZE_MAX && !f->g[f->g[i].successor].gone)
        return f->g[i].successor;
    for (size_t k = 1; k < f->n; k++) {
        size_t j = (i + k) % f->n;
        if (!f->g[j].gone)
            return j;
    }
    return SIZE_MAX;
}

/* Eq. 11 with T the end of I's turn as learned from its past turns (unknown before its first
 * turn ended: no model prefetch then). */
static uint64_t model_start(const struct follow *f, size_t i, size_t next)
{
    const struct followed *g = &f->g[i];
    if (f->opt->prefetch != PREFETCH_MODEL || !g->turns_ended || f->bandwidth <= 0)
        return UINT64_MAX;
    uint64_t turn = g->turn_ns_total / g->turns_ended;
    uint64_t lead = (uint64_t)((double)share_memory_swapped(&f->g[next].job) / f->bandwidth * 1e9);
    return lead >= turn ? g->turn_start : g->turn_start + turn - lead;
}

static void turn_begins(struct follow *f, size_t i, uint64_t now)
{
    if (f->current != SIZE_MAX && f->current != i)
        f->g[f->current].successor = i;
    if (f->predicted != SIZE_MAX)
        f->predicted == i ? f->right++ : f->wrong++;
    f->g[i].turn_start = now;
    f->g[i].job.turns++;
    f->current = i;
    if (f->opt->prefetch == PREFETCH_SWITCH)
        share_prefetcher_request(&(struct share_prefetch_request){ .job = &f->g[i].job,
                                                                   .turn = &f->g[i].job });
    f->predicted = predict_after(f, i);
    f->model_at = f->predicted == SIZE_MAX ? UINT64_MAX : model_start(f, i, f->predicted);
}

static void turn_ends(struct follow *f, size_t i, uint64_t now)
{
    struct followed *g = &f->g[i];
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

/* One look at every group: turns that began or ended since the last. */
static bool watch(struct follow *f, uint64_t now)
{
    bool any = false;
    for (size_t i = 0; i < f->n; i++) {
        struct followed *g = &f->g[i];
        if (g->gone)
            continue;
        if (access(g->job.mem.dir, F_OK) < 0) {
            g->gone = true;
            g->job.ended_ns = now;
            continue;
        }
        any = true;
        bool frozen = specx_freezer_is_frozen(&g->job.mem);
        if (g->frozen && !frozen)
            turn_begins(f, i, now);
        else if (!g->frozen && frozen)
            turn_ends(f, i, now);
        g->frozen = frozen;
    }
    return any;
}

static void collect(struct follow *f)
{
    struct share_prefetch_done d;
    if (!share_prefetcher_collect(&d))
        return;
    d.job->prefetched_bytes += d.bytes;
    f->bandwidth = share_bandwidth_update(f->bandwidth, &d);
}

static void report(const struct follow *f, FILE *out)
{
    fprintf(out, "specx share --follow: %zu groups; predictions of the next turn: %u right, "
                 "%u wrong\n", f->n, f->right, f->wrong);
    fprintf(out, "  %-3s %-50s %6s %12s %12s %12s\n", "n", "group", "turns", "mean turn s",
            "prefetched", "unused");
    for (size_t i = 0; i < f->n; i++) {
        const struct followed *g = &f->g[i];
        fprintf(out, "  %-3zu %-50.50s %6u %12.2f %8.1f MiB %8.1f MiB\n", i + 1,
                g->job.mem.dir, g->job.turns,
                g->turns_ended ? (double)g->turn_ns_total / g->turns_ended / 1e9 : 0.0,
                (double)g->job.prefetched_bytes / (1 << 20),
                (double)g->job.unused_bytes / (1 << 20));
    }
}

static int write_json(const struct follow *f, const char *file)
{
    FILE *out = strcmp(file, "-") == 0 ? stdout : fopen(file, "w");
    if (!out)
        return -1;
    fprintf(out, "{\n  \"follow\": true, \"predicted_right\": %u, \"predicted_wrong\": %u,\n"
                 "  \"groups\": [\n", f->right, f->wrong);
    for (size_t i = 0; i < f->n; i++) {
        const struct followed *g = &f->g[i];
        fputs("    {\"group\": ", out);
        specx_json_string(out, g->job.mem.dir);
        fprintf(out, ", \"turns\": %u, \"mean_turn_s\": %.6f, \"prefetched_bytes\": %llu, "
                     "\"prefetched_unused_bytes\": %llu}%s\n", g->job.turns,
                g->turns_ended ? (double)g->turn_ns_total / g->turns_ended / 1e9 : 0.0,
                (unsigned long long)g->job.prefetched_bytes,
                (unsigned long long)g->job.unused_bytes, i + 1 < f->n ? "," : "");
    }
    fputs("  ]\n}\n", out);
    return out == stdout ? fflush(out) : fclose(out);
}

int share_follow(const struct share_options *o, int sigfd)
{
    struct follow f = { .opt = o, .n = o->njobs, .current = SIZE_MAX, .predicted = SIZE_MAX,
                        .model_at = UINT64_MAX };
    f.g = calloc(f.n, sizeof *f.g);
    if (!f.g)
        specx_die(1, "out of memory");
    for (size_t i = 0; i < f.n; i++) {
        const char *path = o->jobs[i].argv[0];
        if (o->jobs[i].argv[1] || open_group(path, &f.g[i].job.mem) < 0)
            specx_die(2, "--follow: '%s' is no cgroup with a freezer", path);
        f.g[i].job.number = (unsigned)i + 1;
        f.g[i].job.argv = o->jobs[i].argv;
        f.g[i].successor = SIZE_MAX;
        f.g[i].frozen = specx_freezer_is_frozen(&f.g[i].job.mem);
    }
    if (o->prefetch != PREFETCH_NONE && share_prefetcher_start() < 0)
        specx_die(1, "cannot start the prefetching thread: %s", strerror(errno));
    int stop = 0;
    while (!stop && watch(&f, specx_now_ns())) {
        struct pollfd p = { .fd = sigfd, .events = POLLIN };
        struct signalfd_siginfo si;
        if (poll(&p, 1, (int)(WATCH_NS / 1000000)) > 0 &&
            read(sigfd, &si, sizeof si) == sizeof si && si.ssi_signo != SIGCHLD)
            stop = (int)si.ssi_signo;
        collect(&f);
        if (f.predicted != SIZE_MAX && specx_now_ns() >= f.model_at) {
            struct share_prefetch_request next = { .job = &f.g[f.predicted].job,
                                                   .turn = &f.g[f.current].job };
            share_prefetcher_request(&next);
            f.model_at = UINT64_MAX;
        }
    }
    if (o->report)
        report(&f, stderr);
    if (o->json && write_json(&f, o->json) < 0)
        specx_warn("cannot write %s: %s", o->json, strerror(errno));
    free(f.g);
    return stop ? 128 + stop : 0;
}
