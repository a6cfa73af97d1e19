/* The command line of specx share: the jobs, and how they share memory. */
#ifndef SHARE_OPTIONS_H
#define SHARE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum share_prefetch { PREFETCH_NONE, PREFETCH_SWITCH, PREFETCH_MODEL };
enum share_release { RELEASE_NONE, RELEASE_COLD, RELEASE_PAGEOUT };
enum share_scheduler { SCHEDULER_RR, SCHEDULER_MLFQ };

/* One job: a command line (argv, NULL-terminated), or a shell command from --jobs. */
struct share_command {
    char **argv;
};

struct share_options {
    uint64_t quantum_ns;
    uint64_t memory_bytes;          /* 0: no limit of ours */
    enum share_scheduler scheduler;
    enum share_prefetch prefetch;
    enum share_release release;
    double mispredict;              /* --mispredict P: prefetch a wrong job with probability P */
    const char *output_dir;         /* NULL: lines prefixed "[N] " on our stdout/stderr */
    bool report;
    const char *json;               /* NULL, "-" for stdout, or a path */
    bool follow;                    /* --follow: the jobs are cgroups someone else rotates */
    bool follow_slurm;              /* --follow-slurm: the jobs are Slurm's on this node */
    const char *slurm_root;         /* --follow-slurm=ROOT; NULL: found (slurm.h) */
    bool help, version;
    struct share_command *jobs;     /* malloc'd */
    size_t njobs;
};

/* Parses argv (getopt_long, stops at "--"). On bad input returns -1 with a one-line reason
 * (without the program name) in err; otherwise 0. */
int share_options_parse(int argc, char **argv, struct share_options *out, char *err,
                        size_t errsize);

void share_options_usage(FILE *out);
void share_options_free(struct share_options *o);

/* Splits ARGV[0..ARGC) at ":::" into commands; each gets a NULL-terminated argv pointing into
 * ARGV. Returns the number of commands, or -1 if one is empty (":::" first, last or twice). */
long share_split_commands(int argc, char **argv, struct share_command **out);

/* Reads FILE: one shell command per line (blank lines and lines starting with '#' skipped),
 * each run as sh -c LINE. Returns the number of commands or -1 with errno. */
long share_read_jobs_file(const char *file, struct share_command **out);

#endif
