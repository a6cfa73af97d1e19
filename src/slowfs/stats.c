/* Rendering the statistics. The JSON field names are an interface (the bench harness reads
 * them): add fields, never rename. */
#include "slowfs/stats.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const class_names[2] = { "regular", "idle" };

void stats_count_read(struct slowfs_stats *s, enum model_class class, uint64_t bytes,
                      double response_s, double service_s)
{
    struct class_stats *c = &s->classes[class];
    c->requests++;
    c->bytes += bytes;
    c->service_s += service_s;
    c->queue_wait_s += response_s > service_s ? response_s - service_s : 0.0;
}

void stats_count_metadata(struct slowfs_stats *s, enum model_metadata_op op, double response_s)
{
    s->metadata_requests++;
    s->metadata_ops[op]++;
    s->metadata_s += response_s;
}

void stats_count_write(struct slowfs_stats *s, uint64_t bytes, double response_s,
                       double service_s)
{
    s->write_requests++;
    s->write_bytes += bytes;
    s->write_queue_wait_s += response_s > service_s ? response_s - service_s : 0.0;
    s->write_service_s += service_s;
}

static uint64_t total_requests(const struct slowfs_stats *s)
{
    return s->classes[MODEL_REGULAR].requests + s->classes[MODEL_IDLE].requests;
}

static uint64_t total_bytes(const struct slowfs_stats *s)
{
    return s->classes[MODEL_REGULAR].bytes + s->classes[MODEL_IDLE].bytes;
}

/* Closes the memory stream and hands over its buffer (only valid after the close). */
static char *finish(FILE *f, char **buf)
{
    if (fclose(f) != 0) {
        free(*buf);
        return NULL;
    }
    return *buf;
}

/* The cost of each metadata operation, as {"lookup": ms, ...}. */
static void json_metadata_costs(FILE *f, const struct slowfs_config *c)
{
    fputs("\"metadata_ms\": {", f);
    for (int op = 0; op < MODEL_METADATA_OPS; op++)
        fprintf(f, "%s\"%s\": %g", op ? ", " : "", model_metadata_name(op), c->metadata_ms[op]);
    fputc('}', f);
}

/* "metadata_latency_ms" stays for readers that know only it: the lookup's cost. */
static void json_model(FILE *f, const struct slowfs_config *c)
{
    fprintf(f,
            "\"model\": {\"disks\": %u, \"stripe_kb\": %llu, \"latency_ms\": %g, "
            "\"jitter_pct\": %g, \"bandwidth_mbps\": %g, \"bus_mbps\": %g, "
            "\"metadata_latency_ms\": %g, \"priority\": %s, \"placement\": \"%s\", "
            "\"seed\": %llu, ",
            c->disks, (unsigned long long)c->stripe_kb, c->latency_ms, c->jitter_pct,
            c->bandwidth_mbps, c->bus_mbps, c->metadata_ms[MODEL_LOOKUP],
            c->priority ? "true" : "false", placement_name(c->placement),
            (unsigned long long)c->seed);
    json_metadata_costs(f, c);
    fprintf(f, ", \"readdir_entries\": %llu, \"attr_timeout_s\": %g}",
            (unsigned long long)c->readdir_entries, c->attr_timeout_s);
}

/* Metadata requests in all and per operation, and their response time. */
static void json_metadata(FILE *f, const struct slowfs_stats *s)
{
    fprintf(f, "\"metadata\": {\"requests\": %llu, \"response_s\": %.6f",
            (unsigned long long)s->metadata_requests, s->metadata_s);
    for (int op = 0; op < MODEL_METADATA_OPS; op++)
        fprintf(f, ", \"%s\": %llu", model_metadata_name(op),
                (unsigned long long)s->metadata_ops[op]);
    fputc('}', f);
}

static void json_classes(FILE *f, const struct slowfs_stats *s)
{
    fputs("\"classes\": {", f);
    for (int i = 0; i < 2; i++) {
        const struct class_stats *c = &s->classes[i];
        fprintf(f,
                "%s\"%s\": {\"requests\": %llu, \"bytes\": %llu, \"queue_wait_s\": %.6f, "
                "\"service_s\": %.6f}",
                i ? ", " : "", class_names[i], (unsigned long long)c->requests,
                (unsigned long long)c->bytes, c->queue_wait_s, c->service_s);
    }
    fputc('}', f);
}

static void json_disks(FILE *f, const struct stats_snapshot *snap)
{
    fputs("\"disks\": [", f);
    for (unsigned i = 0; i < snap->ndisks; i++) {
        const struct model_disk_stats *d = &snap->disks[i];
        fprintf(f, "%s{\"requests\": %llu, \"bytes\": %llu, \"busy_s\": %.6f}", i ? ", " : "",
                (unsigned long long)d->requests, (unsigned long long)d->bytes, d->busy_s);
    }
    fputc(']', f);
}

/* "modelled" says whether the times can be non-zero, so a harness need not guess it from
 * zeros (a boolean: the bench harness's snapshot difference skips it). */
static void json_writes(FILE *f, const struct stats_snapshot *snap)
{
    const struct slowfs_stats *s = &snap->counters;
    fprintf(f,
            "\"writes\": {\"requests\": %llu, \"bytes\": %llu, \"modelled\": %s, "
            "\"queue_wait_s\": %.6f, \"service_s\": %.6f}",
            (unsigned long long)s->write_requests, (unsigned long long)s->write_bytes,
            snap->config.model_writes ? "true" : "false", s->write_queue_wait_s, s->write_service_s);
}

char *stats_json(const struct stats_snapshot *snap)
{
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    const struct slowfs_stats *s = &snap->counters;
    fprintf(f, "{\"preset\": \"%s\", ", snap->preset);
    json_model(f, &snap->config);
    fprintf(f,
            ", \"pid\": %ld, \"uptime_s\": %.6f, \"wake_early_us\": %.0f, "
            "\"requests\": %llu, \"bytes\": %llu, ",
            (long)snap->pid, snap->uptime_s, snap->wake_early_s * 1e6,
            (unsigned long long)total_requests(s),
            (unsigned long long)total_bytes(s));
    json_classes(f, s);
    fputs(", ", f);
    json_disks(f, snap);
    fputs(", ", f);
    json_metadata(f, s);
    fputs(", ", f);
    json_writes(f, snap);
    fputs("}\n", f);
    return finish(f, &buf);
}

static double per_request_ms(double total_s, uint64_t n) { return n ? total_s * 1e3 / n : 0.0; }

/* The last line; without --model-writes it reads as it always has. */
static void table_writes(FILE *f, const struct stats_snapshot *snap)
{
    const struct slowfs_stats *s = &snap->counters;
    fprintf(f, "\nmetadata %llu requests (", (unsigned long long)s->metadata_requests);
    for (int op = 0; op < MODEL_METADATA_OPS; op++)
        fprintf(f, "%s%s %llu", op ? ", " : "", model_metadata_name(op),
                (unsigned long long)s->metadata_ops[op]);
    fprintf(f, "); writes %llu requests, %llu bytes", (unsigned long long)s->write_requests,
            (unsigned long long)s->write_bytes);
    if (!snap->config.model_writes) {
        fputs(" (not modelled)\n", f);
        return;
    }
    fprintf(f, ", wait %.3f ms/req, service %.3f ms/req (modelled)\n",
            per_request_ms(s->write_queue_wait_s, s->write_requests),
            per_request_ms(s->write_service_s, s->write_requests));
}

char *stats_table(const struct stats_snapshot *snap)
{
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    const struct slowfs_config *c = &snap->config;
    const struct slowfs_stats *s = &snap->counters;
    char bus[32] = "unlimited";
    if (c->bus_mbps > 0)
        snprintf(bus, sizeof bus, "%g MB/s", c->bus_mbps);
    fprintf(f, "device   %s: %u disk%s (%s), %llu KiB stripe, %g ms latency (jitter %g %%), "
               "%g MB/s per disk, bus %s, priority %s%s\n",
            snap->preset, c->disks, c->disks == 1 ? "" : "s", placement_name(c->placement),
            (unsigned long long)c->stripe_kb, c->latency_ms, c->jitter_pct, c->bandwidth_mbps,
            bus, c->priority ? "on" : "off", c->model_writes ? ", writes modelled" : "");
    fprintf(f, "uptime   %.1f s, server pid %ld, wakes %.0f us early for timer lateness\n\n",
            snap->uptime_s, (long)snap->pid, snap->wake_early_s * 1e6);
    fprintf(f, "%-8s %10s %14s %12s %12s\n", "class", "requests", "bytes", "wait ms/req",
            "service ms");
    for (int i = 0; i < 2; i++) {
        const struct class_stats *k = &s->classes[i];
        fprintf(f, "%-8s %10llu %14llu %12.3f %12.3f\n", class_names[i],
                (unsigned long long)k->requests, (unsigned long long)k->bytes,
                per_request_ms(k->queue_wait_s, k->requests),
                per_request_ms(k->service_s, k->requests));
    }
    fprintf(f, "\n%-8s %10s %14s %12s %12s\n", "disk", "requests", "bytes", "busy s",
            "busy %");
    for (unsigned i = 0; i < snap->ndisks; i++) {
        const struct model_disk_stats *d = &snap->disks[i];
        fprintf(f, "%-8u %10llu %14llu %12.3f %12.1f\n", i, (unsigned long long)d->requests,
                (unsigned long long)d->bytes, d->busy_s,
                snap->uptime_s > 0 ? 100.0 * d->busy_s / snap->uptime_s : 0.0);
    }
    table_writes(f, snap);
    return finish(f, &buf);
}
