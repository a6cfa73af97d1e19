/* specx share: memory-hungry jobs run in turns, each turn started warm by prefetching the next
 * job's memory during the current one (Suh et al. 2001). docs/design/share.md says how each part
 * maps to this kernel; specx-share(1) says how to use it. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "share/follow.h"
#include "share/job.h"
#include "share/memory.h"
#include "share/options.h"
#include "share/prefetcher.h"
#include "share/report.h"
#include "share/rotation.h"
#include "common/util.h"

/* How long a freeze may take before the rotation goes on without waiting for it. */
#define FREEZE_TIMEOUT_MS 2000
/* How often the loop looks whether a prefetch has finished (its bandwidth is B of Eq. 11). */
#define PREFETCH_POLL_NS (50ull * 1000000ull)
#define FIRST_SECOND_NS 1000000000ull

struct share {
    struct share_options opt;
    struct share_groups groups;
    struct share_job *jobs;
    struct share_job_figures *figures; /* the jobs' for the report, made when it is written */
    struct share_slot *slots;
    size_t n, current;
    uint64_t run_start, turn_start, turn_end;
    bool first_second_pending;
    size_t prefetched_next; /* the job prefetched for the coming turn (SIZE_MAX: none) */
    /* --prefetch model: the job predicted to run next, and when its prefetch starts; planned
     * once a turn, and again when B changes before that prefetch has begun. */
    bool model_planned;
    size_t predicted;
    uint64_t model_at;
    double bandwidth;       /* B, bytes per second; 0 until measured */
    unsigned switches;
    /* What happened, turn by turn and prefetch by prefetch, for the JSON report; the last
     * turn's record is open (its figures at its start) while TURN_OPEN. */
    struct share_turn *turns;
    size_t nturns, turns_cap;
    bool turn_open;
    struct share_prefetch_record *prefetches;
    size_t nprefetches, prefetches_cap;
    int sigfd;
    int stop_signal;        /* the signal that interrupted the run, 0 if none */
    FILE *json;
};

static bool job_running(const struct share *s, size_t i)
{
    return i < s->n && s->slots[i].runnable;
}

static uint64_t turn_length(const struct share *s, size_t i)
{
    return share_turn_ns(s->opt.scheduler, s->opt.quantum_ns, s->slots[i].level);
}

/* --mispredict P: with probability P the prefetch goes to another runnable job than the next
 * (the paper's "Prefetching 50" curve: predictions right half of the time). */
static size_t prefetch_target(const struct share *s, size_t next)
{
    if (s->opt.mispredict <= 0 || drand48() >= s->opt.mispredict)
        return next;
    size_t others[s->n], k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (i != next && i != s->current && job_running(s, i))
            others[k++] = i;
    return k ? others[(size_t)(drand48() * (double)k) % k] : next;
}

static void prefetch(struct share *s, size_t next)
{
    size_t target = prefetch_target(s, next);
    struct share_prefetch_request r = { .job = &s->jobs[target], .turn = &s->jobs[s->current],
                                        .room_of = &s->groups.mem,
                                        .files_charged_to = &s->groups.fetch };
    /* Room is made from the jobs whose turns are furthest away: in the rotation's order after
     * the next job, the last first. A mispredicted prefetch (--mispredict) evicts by the same
     * order: it never takes the right job's memory away too. */
    for (size_t k = s->n - 1; k > 0 && r.nevict < SHARE_EVICT_MAX; k--) {
        size_t i = (next + k) % s->n;
        if (i != s->current && i != target && job_running(s, i))
            r.evict[r.nevict++] = &s->jobs[i];
    }
    share_prefetcher_request(&r);
    s->prefetched_next = next;
}

/* A prefetch has finished: its record is kept, its bytes count for its job, and its rate is a
 * measurement of B (the prefetch ends when its last read has arrived: memory.c). */
static void collect_prefetch(struct share *s)
{
    struct share_prefetch_done d;
    if (!share_prefetcher_collect(&d))
        return;
    if (specx_grow(&s->prefetches, &s->prefetches_cap, s->nprefetches, sizeof *s->prefetches,
                   64))
        s->prefetches[s->nprefetches++] = (struct share_prefetch_record){
            d.job->number, d.start_ns - s->run_start, d.ns, d.room_ns, d.bytes, d.file_bytes };
    d.job->prefetched_bytes += d.bytes;
    d.job->prefetched_file_bytes += d.file_bytes;
    double was = s->bandwidth;
    s->bandwidth = share_bandwidth_update(was, &d);
    s->model_planned = s->model_planned && s->bandwidth == was; /* a new B: plan again */
}

/* Eq. 11 of the paper: the prefetch of the next job's S_PF bytes (swapped out, and its file
 * pages evicted) starts at T - S_PF / B, T the end of the current turn, B the bandwidth
 * measured on earlier prefetches. Until B is
 * known the prefetch happens at the switch, where it is measured. */
static uint64_t model_start(const struct share *s, size_t next)
{
    if (s->bandwidth <= 0)
        return UINT64_MAX;
    uint64_t bytes = share_memory_swapped(&s->jobs[next]) +
                     share_files_missing(&s->jobs[next].files);
    uint64_t lead = (uint64_t)((double)bytes / s->bandwidth * 1e9);
    return lead >= s->turn_end - s->turn_start ? s->turn_start : s->turn_end - lead;
}

/* The model's plan for this turn: which job comes next, and when its prefetch starts. */
static void plan_model(struct share *s)
{
    s->model_planned = true;
    s->predicted = SIZE_MAX;
    s->model_at = UINT64_MAX;
    if (!job_running(s, s->current))
        return;
    size_t next = share_next_job(s->opt.scheduler, s->slots, s->n, s->current);
    if (next == SIZE_MAX || next == s->current || s->prefetched_next == next)
        return;
    s->predicted = next;
    s->model_at = model_start(s, next);
}

/* Job I's turn begins: its record opens with the job's counts now. */
static void open_turn_record(struct share *s, size_t i, uint64_t now)
{
    const struct share_job *j = &s->jobs[i];
    s->turn_open = specx_grow(&s->turns, &s->turns_cap, s->nturns, sizeof *s->turns, 64);
    if (s->turn_open)
        s->turns[s->nturns++] = (struct share_turn){
            .job = j->number, .start_ns = now - s->run_start,
            .major_faults = j->majflt_at_turn, .cpu_ns = share_job_cpu_ns(j) };
}

/* The current turn is over: its record gets what the job did since the turn began. */
static void close_turn_record(struct share *s, uint64_t now)
{
    if (!s->turn_open)
        return;
    s->turn_open = false;
    struct share_turn *t = &s->turns[s->nturns - 1];
    const struct share_job *j = &s->jobs[s->current];
    uint64_t faults = share_job_major_faults(j), cpu = share_job_cpu_ns(j);
    t->end_ns = now - s->run_start;
    t->major_faults = faults > t->major_faults ? faults - t->major_faults : 0;
    /* v1 counts only processes alive in the group: one that ended takes its time along. */
    t->cpu_ns = cpu > t->cpu_ns ? cpu - t->cpu_ns : 0;
}

/* What the turn of running job I used: which of its prefetched pages it never touched, and
 * its file pages in the page cache, which its next turn starts with. */
static void note_turn_used(struct share *s, size_t i)
{
    s->jobs[i].unused_bytes += share_memory_unused(&s->jobs[i]);
    share_files_capture(&s->jobs[i].files, &s->jobs[i].mem);
}

static void start_turn(struct share *s, size_t next, uint64_t now)
{
    struct share_job *j = &s->jobs[next];
    /* The job whose turn just ended is frozen now, and its next turn is the furthest away:
     * a prefetch at the switch makes its room from that job first. With the model, what its
     * prefetch during the last turn had no room for is brought in now. */
    s->current = next;
    if (s->opt.prefetch != PREFETCH_NONE)
        prefetch(s, next);
    j->majflt_at_turn = share_job_major_faults(j);
    open_turn_record(s, next, now);
    share_job_freeze(j, false, FREEZE_TIMEOUT_MS);
    j->turns++;
    s->turn_start = now;
    s->turn_end = now + turn_length(s, next);
    s->first_second_pending = true;
    s->prefetched_next = SIZE_MAX;
    s->model_planned = false;
}

/* The major faults of the current job's turn so far count as its first second's: the second
 * is over, or the turn ends before it is. */
static void end_first_second(struct share *s)
{
    if (!s->first_second_pending || !job_running(s, s->current))
        return;
    struct share_job *j = &s->jobs[s->current];
    uint64_t faults = share_job_major_faults(j) - j->majflt_at_turn;
    j->majflt_first_second += faults;
    if (s->turn_open)
        s->turns[s->nturns - 1].major_faults_first_second = faults;
    s->first_second_pending = false;
}

/* The current turn is over (its time is up, or its job ended): the next job's begins. */
static void switch_turn(struct share *s, bool time_up)
{
    uint64_t now = specx_now_ns();
    size_t cur = s->current;
    if (job_running(s, cur))
        share_after_turn(s->opt.scheduler, &s->slots[cur], time_up);
    size_t next = share_next_job(s->opt.scheduler, s->slots, s->n, cur);
    if (next == cur) { /* the only job left (or the only one of its level): it goes on */
        s->turn_start = now;
        s->turn_end = now + turn_length(s, cur);
        return;
    }
    if (job_running(s, cur)) {
        /* Noted in the last milliseconds of its turn, while it still runs: it walks the job's
         * page tables and the page cache of its files, which between the turns would keep
         * both jobs waiting, and after the next job's thaw would race with that job's
         * evictions (a job dropping the other's file pages found none to prefetch, in the v2
         * VM where the walk is slow). */
        if (s->opt.prefetch != PREFETCH_NONE)
            note_turn_used(s, cur);
        share_job_freeze(&s->jobs[cur], true, FREEZE_TIMEOUT_MS);
        end_first_second(s);
        now = specx_now_ns(); /* it ran until frozen; the next turn starts from here */
    }
    close_turn_record(s, now);
    if (next == SIZE_MAX)
        return;
    if (job_running(s, cur)) {
        /* Frozen, the job's memory is the group's least recently used, whatever the accessed
         * bits its turn left say: marked cold before the next job runs, it is what the
         * kernel's reclaim at the group's limit takes first, in one pass. Left on the active
         * list, it was found too late: the reclaim gave up and the OOM killer took a job
         * (docs/design/share.md). --release pageout pushes it out at once. */
        share_memory_release(&s->jobs[cur],
                             s->opt.release == RELEASE_PAGEOUT ? MADV_PAGEOUT : MADV_COLD,
                             UINT64_MAX);
    }
    start_turn(s, next, now);
    s->switches++;
}

static struct share_job *job_of(struct share *s, pid_t pid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->jobs[i].pid == pid)
            return &s->jobs[i];
    return NULL;
}

static uint64_t rusage_cpu_ns(const struct rusage *ru)
{
    return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000000ull +
           (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1000ull;
}

static void reap(struct share *s)
{
    int status;
    pid_t pid;
    struct rusage ru;
    while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
        struct share_job *j = job_of(s, pid);
        if (!j)
            continue;
        j->exited = true;
        j->status = status;
        j->cpu_at_exit_ns = rusage_cpu_ns(&ru);
        j->ended_ns = specx_now_ns();
        s->slots[j - s->jobs].runnable = false;
        if ((size_t)(j - s->jobs) == s->current)
            switch_turn(s, false);
    }
}

static void on_signal(struct share *s)
{
    struct signalfd_siginfo si;
    while (read(s->sigfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGCHLD)
            reap(s);
        else
            s->stop_signal = (int)si.ssi_signo;
    }
}

static bool any_running(const struct share *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->slots[i].runnable)
            return true;
    return false;
}

/* The next moment something is due: the turn's end, its first second's end, the model's
 * prefetch, a bandwidth measurement. */
static int poll_timeout_ms(const struct share *s, uint64_t now, uint64_t model_at)
{
    uint64_t due = s->turn_end;
    if (s->first_second_pending && s->turn_start + FIRST_SECOND_NS < due)
        due = s->turn_start + FIRST_SECOND_NS;
    if (model_at < due)
        due = model_at;
    if (share_prefetcher_busy() && now + PREFETCH_POLL_NS < due)
        due = now + PREFETCH_POLL_NS;
    return due <= now ? 0 : (int)((due - now + 999999) / 1000000);
}

static void relay_output(struct share *s, const struct pollfd *fds, size_t nfds)
{
    for (size_t k = 1; k < nfds; k++) {
        if (!fds[k].revents)
            continue;
        for (size_t i = 0; i < s->n; i++) {
            struct share_job *j = &s->jobs[i];
            if (j->out.fd == fds[k].fd)
                share_stream_relay(&j->out, j->number);
            else if (j->err.fd == fds[k].fd)
                share_stream_relay(&j->err, j->number);
        }
    }
}

static bool output_open(const struct share *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->jobs[i].out.fd >= 0 || s->jobs[i].err.fd >= 0)
            return true;
    return false;
}

/* Things due at NOW besides output and signals. */
static void on_time(struct share *s, uint64_t now)
{
    if (now >= s->turn_start + FIRST_SECOND_NS)
        end_first_second(s);
    collect_prefetch(s);
    if (s->predicted != SIZE_MAX && now >= s->model_at && s->prefetched_next != s->predicted)
        prefetch(s, s->predicted);
    if (now >= s->turn_end && job_running(s, s->current))
        switch_turn(s, true);
}

static void run_loop(struct share *s)
{
    struct pollfd fds[1 + 2 * s->n];
    while ((any_running(s) || output_open(s)) && !s->stop_signal) {
        uint64_t now = specx_now_ns();
        if (s->opt.prefetch == PREFETCH_MODEL && !s->model_planned)
            plan_model(s);
        size_t nfds = 0;
        fds[nfds++] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
        for (size_t i = 0; i < s->n; i++) {
            if (s->jobs[i].out.fd >= 0)
                fds[nfds++] = (struct pollfd){ .fd = s->jobs[i].out.fd, .events = POLLIN };
            if (s->jobs[i].err.fd >= 0)
                fds[nfds++] = (struct pollfd){ .fd = s->jobs[i].err.fd, .events = POLLIN };
        }
        int timeout = any_running(s) ? poll_timeout_ms(s, now, s->model_at) : -1;
        if (poll(fds, nfds, timeout) < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            on_signal(s);
        relay_output(s, fds, nfds);
        if (any_running(s))
            on_time(s, specx_now_ns());
    }
}

static int worst_exit_code(const struct share *s)
{
    int worst = 0;
    for (size_t i = 0; i < s->n; i++) {
        int code = s->jobs[i].exited ? share_job_exit_code(&s->jobs[i]) : 128 + SIGKILL;
        if (code > worst)
            worst = code;
    }
    return worst;
}

static void end_all(struct share *s)
{
    for (size_t i = 0; i < s->n; i++) {
        share_job_end(&s->jobs[i]);
        share_memory_unused(&s->jobs[i]); /* forgets what was asked for: no next turn */
        if (!s->jobs[i].ended_ns)
            s->jobs[i].ended_ns = specx_now_ns();
        for (struct share_stream *st = &s->jobs[i].out; st; st = st == &s->jobs[i].out ? &s->jobs[i].err : NULL)
            while (share_stream_relay(st, s->jobs[i].number))
                ;
    }
    share_groups_remove(&s->groups);
}

/* Signals arrive through a descriptor, read in the loop: no work in handlers. Jobs unblock
 * them before they run (job.c). */
static int open_signalfd(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* Everything that can be refused is checked before any job starts: nothing half-made. */
static void check_paths(struct share *s)
{
    struct stat st;
    if (s->opt.output_dir && (stat(s->opt.output_dir, &st) < 0 || !S_ISDIR(st.st_mode)))
        specx_die(2, "--output '%s' is not a directory", s->opt.output_dir);
    if (s->opt.json && strcmp(s->opt.json, "-") != 0 && !(s->json = fopen(s->opt.json, "w")))
        specx_die(2, "cannot write %s: %s", s->opt.json, strerror(errno));
}

static void start_all(struct share *s)
{
    char err[512];
    if (share_groups_make(&s->groups, s->opt.memory_bytes, err, sizeof err) < 0)
        specx_die(1, "%s", err);
    s->run_start = specx_now_ns();
    for (size_t i = 0; i < s->n; i++) {
        s->jobs[i].number = (unsigned)i + 1;
        s->jobs[i].argv = s->opt.jobs[i].argv;
        /* Job 1's turn starts at once; the others start frozen, before their first
         * instruction. */
        if (share_job_start(&s->jobs[i], &s->groups, i == 0, s->opt.output_dir, err,
                            sizeof err) < 0) {
            specx_warn("%s", err);
            s->n = i + 1;
            end_all(s);
            exit(1);
        }
        s->slots[i].runnable = true;
    }
    s->current = 0;
    s->turn_start = specx_now_ns();
    open_turn_record(s, 0, s->turn_start);
    s->turn_end = s->turn_start + turn_length(s, 0);
    s->first_second_pending = true;
}

static void write_reports(struct share *s, int exit_code)
{
    for (size_t i = 0; i < s->n; i++)
        s->figures[i] = share_job_figures(&s->jobs[i]);
    struct share_run run = {
        .opt = &s->opt, .jobs = s->figures, .njobs = s->n, .switches = s->switches,
        .makespan_s = (double)(specx_now_ns() - s->run_start) / 1e9, .exit_code = exit_code,
        .interrupted = s->stop_signal != 0, .turns = s->turns, .nturns = s->nturns,
        .prefetches = s->prefetches, .nprefetches = s->nprefetches,
    };
    if (s->opt.report)
        share_report_table(stderr, &run);
    if (s->opt.json) {
        int rc = 0;
        if (s->json) {
            fclose(s->json); /* opened at the start to check it; written whole now */
            rc = share_report_json(s->opt.json, &run);
        } else {
            rc = share_report_json("-", &run);
        }
        if (rc < 0)
            specx_warn("cannot write %s: %s", s->opt.json, strerror(errno));
    }
}

int main(int argc, char **argv)
{
    specx_set_progname("specx share");
    struct share s = { .prefetched_next = SIZE_MAX, .predicted = SIZE_MAX, .model_at = UINT64_MAX };
    char err[512];
    if (share_options_parse(argc, argv, &s.opt, err, sizeof err) < 0)
        specx_die(2, "%s", err);
    if (s.opt.help) {
        share_options_usage(stdout);
        return 0;
    }
    if (s.opt.version) {
        printf("specx share %s\n", SPECX_VERSION);
        return 0;
    }
    s.n = s.opt.njobs;
    s.jobs = calloc(s.n, sizeof *s.jobs);
    s.slots = calloc(s.n, sizeof *s.slots);
    s.figures = calloc(s.n, sizeof *s.figures);
    if (!s.jobs || !s.slots || !s.figures)
        specx_die(1, "out of memory");
    /* Before anything is made (the --json file, the groups): a SIGTERM during the start
     * waits for the loop, which ends the jobs and still writes the report. */
    if ((s.sigfd = open_signalfd()) < 0)
        specx_die(1, "signalfd: %s", strerror(errno));
    check_paths(&s);
    if (s.opt.follow || s.opt.follow_slurm) {
        int code = share_follow(&s.opt, s.sigfd);
        share_options_free(&s.opt);
        return code;
    }
    srand48((long)specx_now_ns());
    share_groups_sweep_stale();
    start_all(&s);
    if (s.opt.prefetch != PREFETCH_NONE && share_prefetcher_start() < 0)
        specx_die(1, "cannot start the prefetching thread: %s", strerror(errno));
    run_loop(&s);
    close_turn_record(&s, specx_now_ns()); /* interrupted: the turn under way ends here */
    end_all(&s);
    int code = s.stop_signal ? 128 + s.stop_signal : worst_exit_code(&s);
    write_reports(&s, code);
    share_options_free(&s.opt);
    return code;
}
