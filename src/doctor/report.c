/* The list of checks and its two forms, a table for people and JSON for scripts; and the child
 * process the probes that change a process run in. */
#include "doctor/doctor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"

static const char *const status_names[] = { "ok", "degraded", "missing" };

struct doctor_check *doctor_add(struct doctor_report *r, const char *used_by,
                                const char *name_fmt, ...)
{
    if (!specx_grow(&r->checks, &r->cap, r->n, sizeof *r->checks, 32))
        specx_die(1, "out of memory");
    struct doctor_check *c = &r->checks[r->n++];
    *c = (struct doctor_check){ .status = DOCTOR_OK, .used_by = used_by };
    va_list ap;
    va_start(ap, name_fmt);
    vsnprintf(c->name, sizeof c->name, name_fmt, ap);
    va_end(ap);
    return c;
}

void doctor_found(struct doctor_check *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->found, sizeof c->found, fmt, ap);
    va_end(ap);
}

void doctor_consequence(struct doctor_check *c, enum doctor_status status, const char *fmt, ...)
{
    c->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->consequence, sizeof c->consequence, fmt, ap);
    va_end(ap);
}

void doctor_fix(struct doctor_check *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->fix, sizeof c->fix, fmt, ap);
    va_end(ap);
}

int doctor_in_child(int (*probe)(void *arg), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0) {
        int rc = probe(arg);
        _exit(rc == 0 ? 0 : (errno > 0 && errno < 256 ? errno : EIO));
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return errno;
    if (!WIFEXITED(status))
        return EINTR; /* killed by a signal: the probe did not finish */
    return WEXITSTATUS(status);
}

/* One line a check: STATUS, NAME, USED BY, then what was found, what it means and the fix. */
void doctor_print_table(const struct doctor_report *r)
{
    printf("%-9s %-20s %-24s %s\n", "STATUS", "CHECK", "USED BY", "FOUND; CONSEQUENCE; FIX");
    for (size_t i = 0; i < r->n; i++) {
        const struct doctor_check *c = &r->checks[i];
        printf("%-9s %-20s %-24s %s", status_names[c->status], c->name, c->used_by, c->found);
        if (*c->consequence)
            printf("; %s", c->consequence);
        if (*c->fix)
            printf("; fix: %s", c->fix);
        putchar('\n');
    }
}

static void json_field(const char *key, const char *value, const char *sep)
{
    printf("\"%s\": ", key);
    specx_json_string(stdout, *value ? value : NULL);
    fputs(sep, stdout);
}

void doctor_print_json(const struct doctor_report *r)
{
    enum doctor_status worst = DOCTOR_OK;
    for (size_t i = 0; i < r->n; i++)
        if (r->checks[i].status > worst)
            worst = r->checks[i].status;
    printf("{\"status\": \"%s\", \"checks\": [", status_names[worst]);
    for (size_t i = 0; i < r->n; i++) {
        const struct doctor_check *c = &r->checks[i];
        printf("%s\n  {", i ? "," : "");
        json_field("name", c->name, ", ");
        printf("\"status\": \"%s\", ", status_names[c->status]);
        json_field("used_by", c->used_by, ", ");
        json_field("found", c->found, ", ");
        json_field("consequence", c->consequence, ", ");
        json_field("fix", c->fix, "}");
    }
    printf("\n]}\n");
}

int doctor_exit_status(const struct doctor_report *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->checks[i].status != DOCTOR_OK)
            return 1;
    return 0;
}
