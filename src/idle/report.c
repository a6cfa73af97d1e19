/* See report.h. */
#include "idle/report.h"

#include <sys/wait.h>

#include "common/json.h"

#define MIB (1024.0 * 1024.0)

static const char *const outcome_names[] = { "unchanged", "committed", "discarded", "conflict",
                                             "incomplete" };

static double seconds(struct timeval tv) { return (double)tv.tv_sec + tv.tv_usec / 1e6; }

static void format_time(char *out, size_t size, time_t t)
{
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, size, "%Y-%m-%d %H:%M:%S", &tm);
}

/* One row of the table: the resource, how it was kept to idle capacity, what happened. */
static void row(FILE *out, const char *resource, const char *how, const char *what)
{
    fprintf(out, "  %-9s %-38s %s\n", resource, how, what);
}

static void memory_row(FILE *out, const struct idle_memory_figures *m)
{
    char what[256];
    int n = snprintf(what, sizeof what, "peak %.1f MiB; ", (double)m->peak_bytes / MIB);
    if (m->shrinks == 0)
        snprintf(what + n, sizeof what - (size_t)n, "never asked to give any back");
    else
        snprintf(what + n, sizeof what - (size_t)n,
                 "gave back %.1f MiB in %u step%s (slowest %.0f ms), frozen %.2f s",
                 (double)m->given_back_bytes / MIB, m->shrinks, m->shrinks == 1 ? "" : "s",
                 (double)m->giveback_max_ns / 1e6, (double)m->frozen_ns / 1e9);
    row(out, "memory", m->psi_usable ? "yields to reclaim, limit hits, PSI"
                                     : "yields to reclaim and limit hits", what);
}

static void disk_row(FILE *out, const struct idle_run *run)
{
    const struct idle_dirty_figures *d = &run->dirty;
    char how[64], what[512];
    int n = snprintf(what, sizeof what, "%ld blocks read, %ld written; unwritten data peak "
                     "%.1f MiB", run->usage.ru_inblock, run->usage.ru_oublock,
                     (double)d->peak_bytes / MIB);
    if (d->files_flushed)
        n += snprintf(what + n, sizeof what - (size_t)n, ", %llu files written back by specx "
                      "idle (%llu after their close)", (unsigned long long)d->files_flushed,
                      (unsigned long long)d->closed_flushed);
    if (d->closed_unwatched)
        n += snprintf(what + n, sizeof what - (size_t)n, ", files it closed left to the "
                      "kernel's flushers (%s)", d->closed_unwatched);
    if (d->holds)
        snprintf(what + n, sizeof what - (size_t)n, ", held %llu time%s (%.2f s)",
                 (unsigned long long)d->holds, d->holds == 1 ? "" : "s",
                 (double)d->held_ns / 1e9);
    if (d->bound)
        snprintf(how, sizeof how, "idle I/O class, dirty data <= %.0f MiB",
                 (double)d->bound / MIB);
    else
        snprintf(how, sizeof how, "idle I/O class");
    row(out, "disk", how, what);
}

/* "eth0 at 100 Mbit/s, wlan0 at 54 Mbit/s" (and what was left alone, and why). */
static void queues_text(char *out, size_t size, const struct idle_network_figures *n)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n->nlinks && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%s at %.0f Mbit/s", i ? ", " : "",
                                n->links[i].name, (double)n->links[i].rate_bps / 1e6);
    if (n->left_alone[0] && len < size)
        snprintf(out + len, size - len, "%sleft alone: %s", len ? "; " : "", n->left_alone);
}

static void network_row(FILE *out, const struct idle_network_figures *n)
{
    char what[768];
    if (!n->classified) {
        row(out, "network", "not classified", n->why);
        return;
    }
    queues_text(what, sizeof what, n);
    row(out, "network", "socket priority 1de0:20, HTB prio 7", what);
    if (n->clamps)
        snprintf(what, sizeof what, "clamped %u time%s for %.2f s, held %u time%s for %.2f s",
                 n->clamps, n->clamps == 1 ? "" : "s", (double)n->clamped_ns / 1e9, n->holds,
                 n->holds == 1 ? "" : "s", (double)n->held_ns / 1e9);
    else
        snprintf(what, sizeof what, "%s", n->nlinks ? "never clamped"
                                                    : "left alone (needs --net-rate)");
    row(out, "receive", "window clamp, then hold", what);
}

void idle_report_table(FILE *out, const struct idle_run *run)
{
    const struct idle_options *o = run->opt;
    char how[128], what[256];
    fprintf(out, "specx idle: %s %s after %.2f s\n", o->argv[0],
            run->interrupted ? "was interrupted" : WIFSIGNALED(run->command_status)
                                                       ? "was killed" : "exited",
            run->elapsed_s);
    row(out, "resource", "kept to idle capacity by", "what happened");
    snprintf(how, sizeof how, "SCHED_IDLE%s%s", run->cpu_setting ? ", cgroup " : "",
             run->cpu_setting ? run->cpu_setting : "");
    snprintf(what, sizeof what, "%.2f s user, %.2f s system", seconds(run->usage.ru_utime),
             seconds(run->usage.ru_stime));
    row(out, "CPU", how, what);
    disk_row(out, run);
    memory_row(out, &run->memory);
    network_row(out, &run->network);
    if (o->deadline) {
        format_time(how, sizeof how, o->deadline);
        row(out, "deadline", how, run->promoted_at ? "reached: promoted to normal priority"
                                                   : "not reached");
    }
    if (run->isolation) {
        const struct idle_isolation_figures *iso = run->isolation;
        snprintf(how, sizeof how, "--isolate: %zu overlay%s", iso->ndirs,
                 iso->ndirs == 1 ? "" : "s");
        snprintf(what, sizeof what, "%zu change%s, %s%s", iso->changes,
                 iso->changes == 1 ? "" : "s", outcome_names[iso->outcome],
                 iso->read_set_lost ? " (read set unknown: every change by others counted)"
                                    : "");
        row(out, "files", how, what);
    }
}

static void json_memory(FILE *f, const struct idle_memory_figures *m)
{
    fprintf(f, "  \"memory\": {\"signals\": \"%s\", \"peak_bytes\": %llu, \"shrinks\": %u, "
               "\"thaws\": %u, \"grows\": %u, \"given_back_bytes\": %llu, "
               "\"giveback_max_s\": %.6f, \"giveback_mean_s\": %.6f, \"frozen_s\": %.6f, "
               "\"first_giveback_at\": %.6f},\n",
            m->psi_usable ? "reclaim+limit_hits+psi" : "reclaim+limit_hits",
            (unsigned long long)m->peak_bytes, m->shrinks, m->thaws, m->grows,
            (unsigned long long)m->given_back_bytes, (double)m->giveback_max_ns / 1e9,
            m->shrinks ? (double)m->giveback_sum_ns / 1e9 / m->shrinks : 0.0,
            (double)m->frozen_ns / 1e9, m->first_giveback_at);
}

static void json_network(FILE *f, const struct idle_network_figures *n)
{
    fprintf(f, "  \"network\": {\"classified\": %s, \"why\": ", n->classified ? "true" : "false");
    specx_json_string(f, n->classified ? NULL : n->why);
    fputs(", \"queues\": [", f);
    for (size_t i = 0; i < n->nlinks; i++) {
        fprintf(f, "%s{\"dev\": ", i ? ", " : "");
        specx_json_string(f, n->links[i].name);
        fprintf(f, ", \"rate_bps\": %llu}", (unsigned long long)n->links[i].rate_bps);
    }
    fputs("], \"left_alone\": ", f);
    specx_json_string(f, n->left_alone[0] ? n->left_alone : NULL);
    fprintf(f, ", \"receive\": {\"capacity_bps\": %llu, \"clamps\": %u, \"clamped_s\": %.6f, "
               "\"holds\": %u, \"held_s\": %.6f}},\n", (unsigned long long)n->capacity_bps,
            n->clamps, (double)n->clamped_ns / 1e9, n->holds, (double)n->held_ns / 1e9);
}

static void json_isolation(FILE *f, const struct idle_isolation_figures *iso)
{
    fputs("  \"isolation\": {\"directories\": [", f);
    for (size_t i = 0; i < iso->ndirs; i++) {
        fputs(i ? ", " : "", f);
        specx_json_string(f, iso->dirs[i]);
    }
    fprintf(f, "], \"outcome\": \"%s\", \"changes\": %zu, \"read_set_known\": %s, "
               "\"conflicts\": [", outcome_names[iso->outcome], iso->changes,
            iso->read_set_lost ? "false" : "true");
    for (size_t i = 0; i < iso->nconflicts; i++) {
        fputs(i ? ", " : "", f);
        specx_json_string(f, iso->conflicts[i]);
    }
    fputs("]},\n", f);
}

int idle_report_json(const char *file, const struct idle_run *run)
{
    const struct idle_options *o = run->opt;
    FILE *f = specx_json_open(file);
    if (!f)
        return -1;
    fputs("{\n  \"command\": ", f);
    specx_json_argv(f, o->argv);
    fprintf(f, ",\n  \"exit_code\": %d, \"signal\": ", run->exit_code);
    if (WIFSIGNALED(run->command_status))
        fprintf(f, "%d", WTERMSIG(run->command_status));
    else
        fputs("null", f);
    fprintf(f, ", \"interrupted\": %s, \"elapsed_s\": %.6f,\n",
            run->interrupted ? "true" : "false", run->elapsed_s);
    fprintf(f, "  \"cpu\": {\"policy\": \"SCHED_IDLE\", \"cgroup\": ");
    specx_json_string(f, run->cpu_setting);
    fprintf(f, ", \"user_s\": %.6f, \"system_s\": %.6f},\n", seconds(run->usage.ru_utime),
            seconds(run->usage.ru_stime));
    const struct idle_dirty_figures *d = &run->dirty;
    fprintf(f, "  \"disk\": {\"class\": \"idle\", \"blocks_read\": %ld, \"blocks_written\": %ld, "
               "\"dirty_bound_bytes\": %llu, \"dirty_peak_bytes\": %llu, \"dirty_holds\": %llu, "
               "\"dirty_held_s\": %.6f, \"files_flushed\": %llu, \"closed_files_watched\": %s, "
               "\"closed_files_flushed\": %llu, \"closed_files_dropped\": %llu, "
               "\"dirty_samples\": %llu, \"closed_files_unwatched\": ",
            run->usage.ru_inblock, run->usage.ru_oublock, (unsigned long long)d->bound,
            (unsigned long long)d->peak_bytes, (unsigned long long)d->holds,
            (double)d->held_ns / 1e9, (unsigned long long)d->files_flushed,
            d->closed_watched ? "true" : "false", (unsigned long long)d->closed_flushed,
            (unsigned long long)d->closed_dropped, (unsigned long long)d->samples);
    specx_json_string(f, d->closed_unwatched);
    fputs("},\n", f);
    json_memory(f, &run->memory);
    json_network(f, &run->network);
    if (run->isolation)
        json_isolation(f, run->isolation);
    fprintf(f, "  \"deadline\": ");
    if (o->deadline)
        fprintf(f, "{\"at\": %lld, \"promoted\": %s, \"promoted_at\": %lld, "
                   "\"threads_promoted\": %u}\n}\n", (long long)o->deadline,
                run->promoted_at ? "true" : "false", (long long)run->promoted_at,
                run->promoted_threads);
    else
        fputs("null\n}\n", f);
    return specx_json_close(f);
}
