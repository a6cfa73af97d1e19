/* See report.h. */
#include "share/report.h"

#include <string.h>
#include <sys/wait.h>

#include "common/json.h"

static const char *const prefetch_names[] = { "none", "switch", "model" };
static const char *const release_names[] = { "none", "cold", "pageout" };
static const char *const scheduler_names[] = { "rr", "mlfq" };

static double job_seconds(const struct share_job_figures *j)
{
    return j->ended_ns > j->started_ns ? (double)(j->ended_ns - j->started_ns) / 1e9 : 0;
}

/* The job's command line, shortened to fit a column of WIDTH. */
static void command_text(const struct share_job_figures *j, char *out, size_t width)
{
    size_t len = 0;
    out[0] = '\0';
    for (char *const *a = j->argv; *a && len < width; a++)
        len += (size_t)snprintf(out + len, width - len, "%s%s", a == j->argv ? "" : " ", *a);
    if (len >= width - 1 && width > 4)
        strcpy(out + width - 4, "...");
    for (char *c = out; *c; c++) /* a shell script's newlines would break the table */
        if ((unsigned char)*c < ' ')
            *c = ' ';
}

/* The share of the turns' time their jobs spent on a CPU. */
static double turns_cpu_share(const struct share_run *run)
{
    uint64_t cpu = 0, wall = 0;
    for (size_t i = 0; i < run->nturns; i++) {
        cpu += run->turns[i].cpu_ns;
        wall += run->turns[i].end_ns - run->turns[i].start_ns;
    }
    return wall ? (double)cpu / (double)wall : 0.0;
}

void share_report_table(FILE *out, const struct share_run *run)
{
    const struct share_options *o = run->opt;
    fprintf(out, "specx share: %zu jobs, quantum %.3g s, scheduler %s, prefetch %s, release %s\n",
            run->njobs, (double)o->quantum_ns / 1e9, scheduler_names[o->scheduler],
            prefetch_names[o->prefetch], release_names[o->release]);
    fprintf(out, "  makespan %.2f s, %u switches%s; the jobs were on a CPU for %.0f %% of their "
                 "turns\n", run->makespan_s, run->switches,
            run->interrupted ? " (interrupted)" : "", 100 * turns_cpu_share(run));
    fprintf(out, "  %-3s %-32s %5s %9s %6s %12s %15s %12s\n", "job", "command", "exit", "wall s",
            "turns", "major faults", "in 1st seconds", "prefetched");
    for (size_t i = 0; i < run->njobs; i++) {
        const struct share_job_figures *j = &run->jobs[i];
        char cmd[33];
        command_text(j, cmd, sizeof cmd);
        fprintf(out, "  %-3u %-32s %5d %9.2f %6u %12llu %15llu %9.1f MiB\n", j->number, cmd,
                j->exit_code, job_seconds(j), j->turns,
                (unsigned long long)j->major_faults, (unsigned long long)j->majflt_first_second,
                (double)j->prefetched_bytes / (1 << 20));
    }
}

static void json_job(FILE *f, const struct share_job_figures *j)
{
    fprintf(f, "    {\"job\": %u, \"command\": ", j->number);
    specx_json_argv(f, j->argv);
    fprintf(f, ", \"exit_code\": %d, \"signal\": ", j->exit_code);
    if (j->exited && WIFSIGNALED(j->status))
        fprintf(f, "%d", WTERMSIG(j->status));
    else
        fputs("null", f);
    fprintf(f, ", \"wall_s\": %.6f, \"turns\": %u, \"major_faults\": %llu, "
               "\"major_faults_first_second\": %llu, \"peak_bytes\": %llu, "
               "\"prefetched_bytes\": %llu, \"prefetched_file_bytes\": %llu, "
               "\"prefetched_unused_bytes\": %llu}",
            job_seconds(j), j->turns, (unsigned long long)j->major_faults,
            (unsigned long long)j->majflt_first_second, (unsigned long long)j->peak_bytes,
            (unsigned long long)j->prefetched_bytes,
            (unsigned long long)j->prefetched_file_bytes,
            (unsigned long long)j->unused_bytes);
}

int share_report_json(const char *file, const struct share_run *run)
{
    const struct share_options *o = run->opt;
    FILE *f = specx_json_open(file);
    if (!f)
        return -1;
    fprintf(f, "{\n  \"quantum_s\": %.6f, \"memory_bytes\": %llu, \"scheduler\": \"%s\", "
               "\"prefetch\": \"%s\", \"release\": \"%s\", \"mispredict\": %.3f,\n",
            (double)o->quantum_ns / 1e9, (unsigned long long)o->memory_bytes,
            scheduler_names[o->scheduler], prefetch_names[o->prefetch],
            release_names[o->release], o->mispredict);
    fprintf(f, "  \"makespan_s\": %.6f, \"switches\": %u, \"exit_code\": %d, "
               "\"interrupted\": %s,\n  \"jobs\": [\n",
            run->makespan_s, run->switches, run->exit_code, run->interrupted ? "true" : "false");
    for (size_t i = 0; i < run->njobs; i++) {
        json_job(f, &run->jobs[i]);
        fputs(i + 1 < run->njobs ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"turns\": [\n", f);
    for (size_t i = 0; i < run->nturns; i++) {
        const struct share_turn *t = &run->turns[i];
        fprintf(f, "    {\"job\": %u, \"start_s\": %.6f, \"seconds\": %.6f, \"cpu_s\": %.3f, "
                   "\"major_faults\": %llu, \"major_faults_first_second\": %llu}%s\n",
                t->job, (double)t->start_ns / 1e9, (double)(t->end_ns - t->start_ns) / 1e9,
                (double)t->cpu_ns / 1e9, (unsigned long long)t->major_faults,
                (unsigned long long)t->major_faults_first_second, i + 1 < run->nturns ? "," : "");
    }
    fputs("  ],\n  \"prefetches\": [\n", f);
    for (size_t i = 0; i < run->nprefetches; i++) {
        const struct share_prefetch_record *p = &run->prefetches[i];
        fprintf(f, "    {\"job\": %u, \"start_s\": %.6f, \"seconds\": %.6f, "
                   "\"making_room_s\": %.6f, \"bytes\": %llu, \"file_bytes\": %llu}%s\n",
                p->job, (double)p->start_ns / 1e9, (double)p->ns / 1e9, (double)p->room_ns / 1e9,
                (unsigned long long)p->bytes, (unsigned long long)p->file_bytes,
                i + 1 < run->nprefetches ? "," : "");
    }
    fputs("  ]\n}\n", f);
    return specx_json_close(f);
}
