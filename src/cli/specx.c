/* specx: the command people type. Like git, it dispatches `specx COMMAND ARGS...` to the
 * program `specx-COMMAND`, found next to it in the build tree or in the install's libexec
 * directory, so that each command is one small program with one job. `run` is the one
 * built-in: its start-up cost is part of every program it runs (run.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/paths.h"
#include "run/history/history_cli.h"
#include "run/run.h"
#include "common/util.h"

static const struct command {
    const char *name;
    const char *summary;
    int (*builtin)(int argc, char **argv); /* NULL: the component specx-NAME */
} commands[] = {
    { "run",    "run a program with speculative pre-execution for I/O prefetching",
      specx_run_main },
    { "history", "see and forget what specx run keeps of commands' earlier runs",
      specx_history_main },
    { "share",  "run memory-hungry jobs in turns, prefetching the next one's memory", NULL },
    { "idle",   "run a command on idle CPU, disk and memory only, its file changes isolated",
      NULL },
    { "slowfs", "mount an emulated slow storage device (FUSE)", NULL },
    { "bench",  "run the paper's experiments on real programs over slowfs", NULL },
    { "doctor", "say what this machine gives specx and what it lacks, with the fixes", NULL },
    { NULL, NULL, NULL },
};

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: specx [--version] [--help] COMMAND [ARGS...]\n"
        "\n"
        "Make I/O-bound programs faster on slow storage by running a sandboxed\n"
        "speculative copy of them ahead, turning their future reads into prefetches.\n"
        "\n"
        "Commands:\n");
    for (const struct command *c = commands; c->name; c++)
        fprintf(out, "  %-8s %s\n", c->name, c->summary);
    fprintf(out,
        "\n"
        "'specx COMMAND --help' describes a command; see also specx(1).\n");
}

static const struct command *lookup(const char *name)
{
    for (const struct command *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* Tells the component where the dispatcher and its siblings are. */
static void export_paths(void)
{
    char exe[PATH_MAX], list[4 * PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        setenv(SPECX_EXE_ENV, exe, 1);
    }
    if (specx_search_path(list, sizeof list) == 0)
        setenv(SPECX_PATH_ENV, list, 1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("specx %s\n", SPECX_VERSION);
        return 0;
    }
    if (argv[1][0] == '-')
        specx_die(2, "unknown option '%s'; see 'specx --help'", argv[1]);
    const struct command *command = lookup(argv[1]);
    if (!command)
        specx_die(2, "'%s' is not a specx command; see 'specx --help'", argv[1]);
    if (command->builtin)
        return command->builtin(argc - 1, argv + 1);

    char name[64], path[PATH_MAX];
    snprintf(name, sizeof name, "specx-%s", argv[1]);
    if (specx_find_component(name, path, sizeof path) < 0)
        specx_die(127, "%s is not installed (searched %s)", name,
                  getenv(SPECX_PATH_ENV) ? getenv(SPECX_PATH_ENV) : "the specx directories");
    export_paths();
    argv[1] = name;
    execv(path, argv + 1);
    specx_die(126, "cannot run %s: %s", path, strerror(errno));
}
