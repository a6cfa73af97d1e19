/* specx doctor: what this machine gives specx and what it does not. Each group of checks
 * (kernel features, control groups, block I/O, network) adds its findings to one list, which
 * main.c prints as a table or as JSON. Every check probes the kernel for real (it opens the
 * trigger, makes the group, mounts the overlay) rather than guessing from a version. */
#ifndef DOCTOR_DOCTOR_H
#define DOCTOR_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>

enum doctor_status {
    DOCTOR_OK,       /* specx has what it uses here */
    DOCTOR_DEGRADED, /* specx runs, with less than it could */
    DOCTOR_MISSING,  /* a command or feature cannot work here */
};

/* One line of the report. */
struct doctor_check {
    char name[32];         /* short and stable, for scripts: "cachestat", "io-sched vda" */
    enum doctor_status status;
    const char *used_by;   /* the commands and features that depend on it */
    char found[256];       /* what the probe saw */
    char consequence[256]; /* what that means for specx ("" when nothing) */
    char fix[256];         /* how to get it ("" when nothing to do) */
};

struct doctor_report {
    struct doctor_check *checks;
    size_t n, cap;
};

/* Adds a check named NAME (printf format) used by USED_BY, status OK; returns it for the
 * caller to fill in. Exits with a one-line error if memory runs out. */
struct doctor_check *doctor_add(struct doctor_report *r, const char *used_by,
                                const char *name_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets CHECK's found, consequence and fix texts (printf formats; NULL leaves one empty). */
void doctor_found(struct doctor_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void doctor_consequence(struct doctor_check *c, enum doctor_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void doctor_fix(struct doctor_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Runs PROBE(ARG) in a child process (for probes that change the process itself: namespaces,
 * seccomp filters, ptrace). Returns 0 if PROBE returned 0, else the errno it failed with. */
int doctor_in_child(int (*probe)(void *arg), void *arg);

/* The groups of checks. */
void doctor_check_kernel(struct doctor_report *r);     /* kernel_features.c */
void doctor_check_cgroups(struct doctor_report *r);    /* cgroups.c */
void doctor_check_io(struct doctor_report *r);         /* io.c: schedulers, swap, zram */
void doctor_check_network(struct doctor_report *r);    /* network.c: HTB */

/* The cgroup discovery alone, as JSON on standard output (cgroups.c). */
void doctor_print_cgroup_json(void);
/* ... and for people. */
void doctor_print_cgroup_text(void);

/* The report as a table or as JSON on standard output (report.c). */
void doctor_print_table(const struct doctor_report *r);
void doctor_print_json(const struct doctor_report *r);
/* 0 if every check is OK, else 1. */
int doctor_exit_status(const struct doctor_report *r);

#endif
