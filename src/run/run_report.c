#include "run/run_report.h"

#include <inttypes.h>
#include <string.h>

#include "common/json.h"

static double seconds(uint64_t ns) { return (double)ns / 1e9; }

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* ---- human table ---- */

/* The command, cut short: a command line of thousands of file names is not a title. */
#define COMMAND_SHOWN 100

static void print_command(FILE *out, char *const *argv)
{
    int shown = 0;
    for (size_t i = 0; argv[i]; i++) {
        int room = COMMAND_SHOWN - shown;
        if (room <= 0 || (int)strlen(argv[i]) + (i ? 1 : 0) > room) {
            fputs(" ...", out);
            return;
        }
        shown += fprintf(out, "%s%s", i ? " " : "", argv[i]);
    }
}

static void print_outcome(FILE *out, const struct run_result *r)
{
    if (r->signal)
        fprintf(out, "killed by signal %d (%s)", r->signal, strsignal(r->signal));
    else
        fprintf(out, "exit status %d", r->exit_status);
}

static void print_processes(FILE *out, const struct run_stats *s)
{
    fprintf(out, "  %-8s %-24s %10s %10s %11s %10s %6s\n", "pid", "program", "stalls",
            "stall s", "prefetches", "unused", "syncs");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct specx_stats_slot *p = &s->procs[i];
        const char *name = strrchr(p->argv0, '/') ? strrchr(p->argv0, '/') + 1 : p->argv0;
        fprintf(out, "  %-8d %-24.24s %10" PRIu64 " %10.3f %11" PRIu64 " %10" PRIu64
                " %6" PRIu64 "%s\n", p->pid, name, p->stalls, seconds(p->stall_ns),
                p->spec_prefetches, run_stats_unused(p), p->sync_attempts,
                (p->flags & SPECX_SLOT_THREADED) ? "  (threaded)" : "");
    }
}

static double ms(double s) { return s * 1e3; }

/* Table 3: how often the program reforked its copy, how many of those completed before it
 * went on (a refork is abandoned once its own read is in, §5.1), and what they cost it. */
static void print_reforks(FILE *out, const struct specx_stats_slot *t)
{
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " completed (%.0f%%), %.3f s",
            "reforks (attempts, Table 3)", t->refork_attempts, t->refork_completed,
            100.0 * (t->refork_attempts ? run_stats_refork_completed_share(t) : 0.0),
            seconds(t->refork_ns));
    if (t->refork_attempts)
        fprintf(out, ", mean %.3f ms", ms(run_stats_refork_mean(t)));
    fprintf(out, ", %" PRIu64 " fast\n", t->refork_fast);
    if (t->refork_attempts)
        fprintf(out, "  %-40s %12s  %.3f s, mean %.3f ms\n", "  then waiting for the sandbox", "",
                seconds(t->refork_wait_ns), ms(run_stats_refork_wait_mean(t)));
    if (t->refork_fast)
        fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " zero, %" PRIu64 " swap prefetches, %"
                PRIu64 " dropped\n", "  pages copies pulled from the program", t->lazy_pulled,
                t->lazy_zero, t->lazy_swap_prefetches, t->lazy_dropped);
}

/* The memory control's Table 5 (fraser-chang-2003 §6.2): intervals, threshold crossings,
 * stalls added and removed, and what the copies held. */
static void print_memory_control(FILE *out, const struct run_result *r)
{
    const struct specx_stats_slot *t = &r->stats.total;
    if (!r->memory_control) {
        fprintf(out, "  %-40s %12s  off (--no-memory-control)\n", "memory control (paper 6.1)", "");
        return;
    }
    fprintf(out, "  %-40s %12" PRIu64 "  intervals; stopped speculation %" PRIu64
            " times, allowed it again %" PRIu64 "\n", "memory control (paper 6.1)",
            t->memctl_intervals, t->memctl_disabled, t->memctl_reenabled);
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " removed\n", "  stalls speculation added",
            t->memctl_added, t->memctl_removed);
    fprintf(out, "  %-40s %12.1f  MiB", "  copies' peak private memory",
            (double)t->copy_peak_kb / 1024.0);
    if (t->memctl_disabled)
        fprintf(out, "; given back at most %.3f s after the interval that stopped it began",
                seconds(t->memctl_giveback_ns));
    fputc('\n', out);
}

/* Prints PREFIX then TEXT folded at word boundaries to 78 columns, continuation lines indented
 * by 4, and a blank line. */
static void print_wrapped(FILE *out, const char *prefix, const char *text)
{
    int column = fprintf(out, "%s", prefix);
    bool line_start = true;
    while (*text) {
        int word = (int)strcspn(text, " ");
        if (!line_start && column + 1 + word > 78) {
            column = fprintf(out, "\n    ") - 1;
        } else if (!line_start) {
            column += fprintf(out, " ");
        }
        line_start = false;
        column += fprintf(out, "%.*s", word, text);
        text += word + (text[word] == ' ');
    }
    fprintf(out, "\n\n");
}

/* Which mechanism served the run: the preload runtime if any process of the command loaded
 * it; otherwise NULL, with the reason in *WHY (a report of zeros alone would read as "nothing
 * stalled"). */
static const char *mechanism(const struct run_result *r, const char **why)
{
    *why = NULL;
    if (r->supervised && !r->speculation)
        *why = "--no-spec: the supervisor only watched";
    else if (r->supervised && r->supervisor.enabled)
        return "supervisor";
    else if (r->supervised)
        *why = "the supervisor could not compile its copies' seccomp filter: nothing was "
               "speculated";
    else if (r->kind == ELF_GO)
        *why = "the command is a Go program, which makes its own system calls past the C "
               "library whose read functions the runtime interposes: no read was seen and "
               "nothing was speculated";
    else if (r->stats.nprocs > 0 || r->stats.lost > 0)
        return "preload";
    else if (r->kind == ELF_STATIC)
        *why = "the command is statically linked: the dynamic loader, which applies "
               "LD_PRELOAD, never runs, so no read was seen and nothing was speculated";
    else
        *why = "no process of the command loaded libspecx.so (a set-user-ID program, or one "
               "that removed LD_PRELOAD): no read was seen and nothing was speculated";
    return NULL;
}

static size_t processes_with(const struct run_stats *s, uint32_t flag)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        n += (s->procs[i].flags & flag) != 0;
    return n;
}

/* Why speculation stopped helping, where the runtime gave up on it: a plain word rather
 * than counts to interpret. */
static void print_why_not(FILE *out, const struct run_result *r)
{
    static const struct {
        uint32_t flag;
        const char *what;
    } reasons[] = {
        { SPECX_SLOT_SECCOMP, "had a seccomp filter or strict mode (no copy, and no call of "
                              "specx's own at the reads)" },
        { SPECX_SLOT_OOM_GROUP, "in a memory cgroup killed as one (memory.oom.group): no "
                                "copy, which the OOM killer would take the program with" },
        { SPECX_SLOT_PIDS_MAX, "close to their cgroup's pids.max: no copy, which would count "
                               "there and could make their own forks fail" },
    };
    char why[256];
    bool first = true;
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
        size_t n = processes_with(&r->stats, reasons[i].flag);
        if (!n)
            continue;
        snprintf(why, sizeof why, "%zu process%s %s", n, n == 1 ? "" : "es", reasons[i].what);
        if (first)
            fputc('\n', out);
        first = false;
        print_wrapped(out, "  specx stood aside: ", why);
    }
    size_t never = processes_with(&r->stats, SPECX_SLOT_NEVER_PREDICTED);
    if (!never)
        return;
    snprintf(why, sizeof why, "in %zu process%s copies never predicted the next read: no more "
             "copies after %u in a row that predicted none", never, never == 1 ? "" : "es",
             SPECX_RETIRE_AFTER);
    if (first)
        fputc('\n', out);
    print_wrapped(out, "  speculation stopped: ", why);
}

/* What sampling from outside saw of a command the runtime could not enter: how much there
 * was to hide (run_sampler.h). */
static void print_outside_view(FILE *out, const struct outside_view *v)
{
    if (!v->sampled)
        return;
    fprintf(out, "  %-40s %12" PRIu64 "  %.3f s, sampled every %.0f ms from outside\n\n",
            "reads of files it was seen blocked in", v->blocked_reads, seconds(v->blocked_ns),
            (double)RUN_SAMPLE_PERIOD_NS / 1e6);
}

/* What the supervisor did (src/run/supervisor/supervisor.h), and in a plain word why it did not
 * help where it could not. */
static void print_supervisor(FILE *out, const struct supervisor_counts *c)
{
    const struct serve_counts *s = &c->served;
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " predicted by a copy, %" PRIu64
            " passed by (back-off)\n", "stalls seen (other than predicted)",
            c->stalls_unpredicted, c->stalls_predicted, c->backed_off);
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " live, %" PRIu64 " ended stuck, %" PRIu64
            " ended or not made for memory\n", "speculative copies made", c->copies, c->live,
            c->stuck_ended, c->memory_ended);
    fprintf(out, "  %-40s %12.3f  ms in all, %.3f ms at most (clone and fd offsets)\n",
            "program's threads held to make them", (double)c->held_ns / 1e6,
            (double)c->held_max_ns / 1e6);
    fprintf(out, "  %-40s %12" PRIu64 "  %.1f MiB; %" PRIu64 " predicted dry\n",
            "speculative prefetches", s->prefetches, (double)s->bytes / (1 << 20),
            s->predictions);
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " opens\n", "copies' calls served",
            s->calls, s->opens);
    char why[256] = "";
    if (c->seccomp)
        snprintf(why, sizeof why, "the program's thread had a seccomp filter or strict mode at %"
                 PRIu64 " stalls: specx stood aside (no clone injected)", c->seccomp);
    else if (c->oom_group)
        snprintf(why, sizeof why, "the program's memory cgroup kills as one (memory.oom.group): "
                 "no copy at %" PRIu64 " stalls", c->oom_group);
    else if (c->pids_max)
        snprintf(why, sizeof why, "a copy would have come close to the program's pids.max: no "
                 "copy at %" PRIu64 " stalls", c->pids_max);
    else if (c->traced)
        snprintf(why, sizeof why, "another tracer (a debugger) held the program's thread at %"
                 PRIu64 " stalls: specx stood aside", c->traced);
    else if (c->shared_memory)
        snprintf(why, sizeof why, "the program maps memory shared with others (a copy could "
                 "write through it): no copy at %" PRIu64 " stalls", c->shared_memory);
    else if (c->retired)
        snprintf(why, sizeof why, "copies never predicted the next read: no more copies after "
                 "%u in a row that predicted none", SPECX_RETIRE_AFTER);
    if (*why)
        print_wrapped(out, "  speculation stopped: ", why);
    else
        fputc('\n', out);
}

/* What the command's history did in this run (docs/design/history.md). */
static void print_history(FILE *out, const struct history_counts *h)
{
    if (!h->active)
        return;
    if (h->replayed) {
        fprintf(out, "  %-40s %12u  ranges of %u files%s%s\n", "history replayed", h->entries,
                h->files, h->near ? ", another run's start-up (same program)" : "",
                h->stopped ? "; stopped: it did not pay" : "");
        fprintf(out, "  %-40s %12.1f  MiB; %.1f MiB in memory already\n",
                "  brought in ahead of the program", (double)h->prefetched_bytes / 1048576.0,
                (double)h->cached_bytes / 1048576.0);
        if (h->asked_bytes)
            fprintf(out, "  %-40s %12.1f  MiB; others' files: whether in memory is hidden\n",
                    "  asked for, not judged", (double)h->asked_bytes / 1048576.0);
        if (h->outside)
            fprintf(out, "  %-40s %12.1f  MiB; seen from outside: only reads that waited\n",
                    "  read by the program (history served)", (double)h->used_bytes / 1048576.0);
        else
            fprintf(out, "  %-40s %12.1f  MiB; ranges read: %" PRIu64 " in memory, %" PRIu64
                    " still arriving\n", "  read by the program (history served)",
                    (double)h->used_bytes / 1048576.0, h->served_reads, h->late_reads);
        fprintf(out, "  %-40s %12.1f  MiB\n", "  brought in and unused",
                (double)h->unused_bytes / 1048576.0);
        if (h->stale_files)
            fprintf(out, "  %-40s %12u  changed since: their ranges dropped\n",
                    "  stale files", h->stale_files);
    }
    if (h->saved)
        fprintf(out, "  %-40s %12" PRIu64 "  ranges, %.1f MiB read; kept in %.1f KiB\n",
                "history recorded", h->recorded_entries,
                (double)h->recorded_bytes / 1048576.0, (double)h->recorded_size / 1024.0);
}

void run_report_table(FILE *out, const struct run_result *r)
{
    const char *why;
    const char *served_by = mechanism(r, &why);
    const struct specx_stats_slot *t = &r->stats.total;
    double share = run_stats_complete_share(t);
    fprintf(out, "specx run: ");
    print_command(out, r->argv);
    fprintf(out, "\n  ");
    print_outcome(out, r);
    fprintf(out, ", speculation %s, horizon %u, refork %s (%s copy-on-write)\n",
            r->speculation ? "on" : "off", r->horizon, r->fast_refork ? "fast" : "basic",
            r->fast_refork ? "one-way" : "basic");
    if (served_by && strcmp(served_by, "supervisor") == 0)
        fprintf(out, "  served by the supervisor (from outside the program: it is %s)\n\n",
                r->kind == ELF_GO ? "a Go program" : r->kind == ELF_STATIC ?
                "statically linked" : "--backend=trace");
    else if (served_by)
        fprintf(out, "  served by the preload runtime (libspecx.so)\n\n");
    else
        print_wrapped(out, "  not served: ", why);
    print_outside_view(out, &r->outside);
    if (served_by && strcmp(served_by, "supervisor") == 0) {
        print_supervisor(out, &r->supervisor);
        print_history(out, &r->history);
        return;
    }
    fprintf(out, "  %-40s %12s  %s\n", "", "count", "");
    fprintf(out, "  %-40s %12" PRIu64 "  %.3f s\n", "I/O stalls of normal execution",
            t->stalls + t->inflight_waits, seconds(t->stall_ns + t->inflight_wait_ns));
    fprintf(out, "  %-40s %12" PRIu64 "  %.3f s\n", "  on data nobody had asked for",
            t->stalls, seconds(t->stall_ns));
    fprintf(out, "  %-40s %12" PRIu64 "  %.3f s\n", "  on data still arriving",
            t->inflight_waits, seconds(t->inflight_wait_ns));
    if (t->residency_denied)
        fprintf(out, "  %-40s %12" PRIu64 "  not owned, not writable: cachestat says EPERM\n",
                "reads whose residency the kernel hides", t->residency_denied);
    fprintf(out, "  %-40s %12" PRIu64 "  getrusage: faults that read the disk\n",
            "major page faults of normal execution", t->majflt);
    fprintf(out, "  %-40s %12" PRIu64 "  %.1f MiB, %" PRIu64 " touched by the program, "
            "%" PRIu64 " predicted dry\n", "page-fault prefetches (file mappings)",
            t->fault_prefetches, (double)t->fault_bytes / 1048576.0, t->fault_used,
            t->fault_predictions);
    fprintf(out, "  %-40s %12" PRIu64 "  %.1f MiB", "speculative prefetches",
            t->spec_prefetches, (double)t->spec_bytes / 1048576.0);
    if (share >= 0)
        fprintf(out, ", %.1f%% complete before the program asked", 100.0 * share);
    fprintf(out, "\n  %-40s %12" PRIu64 "  %.1f%% (%" PRIu64 " evicted before use)\n",
            "unused speculative prefetches", run_stats_unused(t),
            percent(run_stats_unused(t), t->spec_prefetches), t->spec_evicted);
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " completed, %.3f s\n",
            "synchronizations (attempts)", t->sync_attempts, t->sync_completed,
            seconds(t->sync_ns));
    print_reforks(out, t);
    fprintf(out, "  %-40s %12" PRIu64 "  minor faults (getrusage), an upper bound (Table 4)\n",
            "copy-on-write faults of the program", t->minflt);
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " ended, %" PRIu64 " could not be sandboxed\n",
            "speculative processes created", t->spec_created, t->spec_ended, t->spec_failed);
    fprintf(out, "  %-40s %12" PRIu64 "  for threads with reads of their own; at most %" PRIu64
            " at once in a process\n", "  beside another thread's copy", t->stream_copies,
            t->copies_peak);
    fprintf(out, "  %-40s %12" PRIu64 "  ran %.1f ms of CPU time without reaching I/O\n",
            "  ended themselves, idle", t->spec_idle_ended,
            (double)SPECX_COPY_IDLE_CPU_NS / 1e6);
    fprintf(out, "  %-40s %12" PRIu64 "  waited %.1f s of wall time without reaching I/O\n",
            "  ended themselves, stuck", t->spec_stuck_ended,
            (double)SPECX_COPY_STUCK_NS / 1e9);
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " predictions logged, kept from the disk\n",
            "  dry (predicting only, until trusted)", t->spec_dry, t->spec_predictions);
    fprintf(out, "  %-40s %12" PRIu64 "  the program read one of their predictions at least\n",
            "  useful", t->spec_judged_useful);
    print_memory_control(out, r);
    fprintf(out, "  %-40s %12" PRIu64 "  %" PRIu64 " to RANDOM, %" PRIu64 " back to NORMAL\n",
            "readahead switches", t->fadv_random + t->fadv_normal, t->fadv_random,
            t->fadv_normal);
    size_t threaded = processes_with(&r->stats, SPECX_SLOT_THREADED);
    fprintf(out, "  %-40s %12zu", "processes", r->stats.nprocs);
    if (threaded)
        fprintf(out, "  %zu with copies of one thread of several", threaded);
    fputc('\n', out);
    if (r->stats.lost)
        fprintf(out, "  %-40s %12u\n", "processes not counted (table full)", r->stats.lost);
    print_history(out, &r->history);
    fprintf(out, "  %-40s %12s  %.3f s\n", "elapsed", "", seconds(r->elapsed_ns));
    print_why_not(out, r);
    if (r->stats.nprocs > 1) {
        fputc('\n', out);
        print_processes(out, &r->stats);
    }
}

/* ---- JSON ---- */

static const struct {
    uint32_t flag;
    const char *name;
} flag_names[] = {
    { SPECX_SLOT_NO_SPEC, "no_spec" },
    { SPECX_SLOT_THREADED, "threaded" },
    { SPECX_SLOT_NEVER_PREDICTED, "never_predicted" },
    { SPECX_SLOT_SANDBOX_FAILED, "sandbox_failed" },
    { SPECX_SLOT_NO_CACHESTAT, "no_cachestat" },
    { SPECX_SLOT_ENDED, "ended" },
    { SPECX_SLOT_SECCOMP, "seccomp" },
    { SPECX_SLOT_OOM_GROUP, "oom_group" },
    { SPECX_SLOT_PIDS_MAX, "pids_max" },
};

static void json_flags(FILE *out, uint32_t flags)
{
    fprintf(out, "\"flags\": [");
    const char *sep = "";
    for (size_t i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++)
        if (flags & flag_names[i].flag) {
            fprintf(out, "%s\"%s\"", sep, flag_names[i].name);
            sep = ", ";
        }
    fputc(']', out);
}

/* A derived figure, or null when it is undefined (negative). */
static void json_share(FILE *out, const char *indent, const char *name, double value)
{
    if (value >= 0)
        fprintf(out, "%s\"%s\": %.6g,\n", indent, name, value);
    else
        fprintf(out, "%s\"%s\": null,\n", indent, name);
}

/* Every counter, then the derived figures of Tables 2 and 3. */
static void json_counters(FILE *out, const struct specx_stats_slot *s, const char *indent)
{
#define SPECX_JSON(name, doc) fprintf(out, "%s\"" #name "\": %" PRIu64 ",\n", indent, s->name);
    SPECX_COUNTERS(SPECX_JSON)
#undef SPECX_JSON
    double share = run_stats_complete_share(s);
    fprintf(out, "%s\"unused_prefetches\": %" PRIu64 ",\n", indent, run_stats_unused(s));
    json_share(out, indent, "complete_share", share);
    json_share(out, indent, "refork_completed_share", run_stats_refork_completed_share(s));
    json_share(out, indent, "refork_mean_s", run_stats_refork_mean(s));
    json_share(out, indent, "refork_wait_mean_s", run_stats_refork_wait_mean(s));
}

static void json_process(FILE *out, const struct specx_stats_slot *p)
{
    fprintf(out, "    {\n      \"pid\": %d,\n      \"ppid\": %d,\n      \"argv0\": ", p->pid,
            p->ppid);
    specx_json_string(out, p->argv0);
    fprintf(out, ",\n");
    json_counters(out, p, "      ");
    fprintf(out, "      \"elapsed_ns\": %" PRIu64 ",\n      ",
            p->end_ns > p->start_ns ? p->end_ns - p->start_ns : 0);
    json_flags(out, p->flags);
    fprintf(out, "\n    }");
}

static void json_supervisor(FILE *out, const struct run_result *r)
{
    const struct supervisor_counts *c = &r->supervisor;
    const struct serve_counts *s = &c->served;
    if (!r->supervised || !r->speculation) {
        fprintf(out, "null");
        return;
    }
    fprintf(out, "{\"stalls_unpredicted\": %" PRIu64 ", \"stalls_predicted\": %" PRIu64
            ", \"backed_off\": %" PRIu64 ", \"copies\": %" PRIu64 ", \"live\": %" PRIu64
            ", \"stuck_ended\": %" PRIu64 ", \"memory_ended\": %" PRIu64
            ", \"not_made\": %" PRIu64
            ", \"shared_memory\": %" PRIu64 ", \"traced\": %" PRIu64
            ", \"seccomp\": %" PRIu64 ", \"oom_group\": %" PRIu64 ", \"pids_max\": %" PRIu64
            ", \"held_s\": %.6f, \"held_max_s\": %.6f, \"prefetches\": %" PRIu64
            ", \"prefetch_bytes\": %" PRIu64 ", \"predictions\": %" PRIu64
            ", \"calls_served\": %" PRIu64 ", \"opens\": %" PRIu64 ", \"retired\": %s}",
            c->stalls_unpredicted, c->stalls_predicted, c->backed_off, c->copies, c->live,
            c->stuck_ended, c->memory_ended, c->not_made, c->shared_memory, c->traced,
            c->seccomp, c->oom_group, c->pids_max, seconds(c->held_ns),
            seconds(c->held_max_ns), s->prefetches, s->bytes, s->predictions, s->calls,
            s->opens, c->retired ? "true" : "false");
}

static void json_history(FILE *out, const struct history_counts *h)
{
    if (!h->active) {
        fprintf(out, "null");
        return;
    }
    fprintf(out, "{\"replayed\": %s, \"near\": %s, \"stopped\": %s, \"outside\": %s"
            ", \"entries\": %u"
            ", \"files\": %u, \"stale_files\": %u, \"prefetched_bytes\": %" PRIu64
            ", \"cached_bytes\": %" PRIu64 ", \"asked_bytes\": %" PRIu64
            ", \"used_bytes\": %" PRIu64
            ", \"unused_bytes\": %" PRIu64 ", \"served_reads\": %" PRIu64
            ", \"late_reads\": %" PRIu64 ", \"saved\": %s, \"recorded_entries\": %" PRIu64
            ", \"recorded_bytes\": %" PRIu64 ", \"recorded_size\": %" PRIu64 "}",
            h->replayed ? "true" : "false", h->near ? "true" : "false",
            h->stopped ? "true" : "false", h->outside ? "true" : "false", h->entries, h->files, h->stale_files,
            h->prefetched_bytes, h->cached_bytes, h->asked_bytes, h->used_bytes, h->unused_bytes,
            h->served_reads, h->late_reads, h->saved ? "true" : "false", h->recorded_entries,
            h->recorded_bytes, h->recorded_size);
}

void run_report_json(FILE *out, const struct run_result *r)
{
    fprintf(out, "{\n  \"command\": ");
    specx_json_argv(out, r->argv);
    fprintf(out, ",\n");
    if (r->signal)
        fprintf(out, "  \"exit_status\": null,\n  \"signal\": %d,\n", r->signal);
    else
        fprintf(out, "  \"exit_status\": %d,\n  \"signal\": null,\n", r->exit_status);
    const char *why;
    const char *served_by = mechanism(r, &why);
    fprintf(out, "  \"mechanism\": ");
    specx_json_string(out, served_by);
    fprintf(out, ",\n  \"not_served_because\": ");
    specx_json_string(out, why);
    fprintf(out, ",\n  \"seen_from_outside\": ");
    if (r->outside.sampled)
        fprintf(out, "{\"sample_period_s\": %.3f, \"samples\": %" PRIu64
                ", \"blocked_reads\": %" PRIu64 ", \"blocked_s\": %.6f}",
                (double)RUN_SAMPLE_PERIOD_NS / 1e9, r->outside.samples,
                r->outside.blocked_reads, seconds(r->outside.blocked_ns));
    else
        fprintf(out, "null");
    fprintf(out, ",\n  \"supervisor\": ");
    json_supervisor(out, r);
    fprintf(out, ",\n  \"history\": ");
    json_history(out, &r->history);
    fprintf(out, ",\n");
    fprintf(out, "  \"speculation\": %s,\n  \"horizon\": %u,\n",
            r->speculation ? "true" : "false", r->horizon);
    fprintf(out, "  \"memory_control\": %s,\n", r->memory_control ? "true" : "false");
    fprintf(out, "  \"refork\": \"%s\",\n  \"cow\": \"%s\",\n",
            r->fast_refork ? "fast" : "basic", r->fast_refork ? "one-way" : "basic");
    fprintf(out, "  \"elapsed_ns\": %" PRIu64 ",\n  \"elapsed_s\": %.6f,\n", r->elapsed_ns,
            seconds(r->elapsed_ns));
    /* The figures a benchmark wants first: how often and how long the program waited for
     * its data, whether nobody had asked for it yet or it was still arriving. */
    const struct specx_stats_slot *t = &r->stats.total;
    fprintf(out, "  \"stalls\": {\"count\": %" PRIu64 ", \"time_s\": %.6f},\n",
            t->stalls + t->inflight_waits, seconds(t->stall_ns + t->inflight_wait_ns));
    fprintf(out, "  \"processes_not_counted\": %u,\n", r->stats.lost);
    fprintf(out, "  \"total\": {\n    \"processes\": %zu,\n", r->stats.nprocs);
    json_counters(out, &r->stats.total, "    ");
    fprintf(out, "    ");
    json_flags(out, r->stats.total.flags);
    fprintf(out, "\n  },\n  \"processes\": [\n");
    for (size_t i = 0; i < r->stats.nprocs; i++) {
        json_process(out, &r->stats.procs[i]);
        fprintf(out, "%s\n", i + 1 < r->stats.nprocs ? "," : "");
    }
    fprintf(out, "  ]\n}\n");
}
