/* See history_cli.h. A history is named by its file's name, or by any prefix of it that names
 * one history alone; or by the command itself, after "--" (run in the working directory). */
#include "run/history/history_cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/json.h"
#include "common/util.h"
#include "run/history/command_key.h"
#include "run/history/store.h"

struct cli {
    const char *json;
    bool all;
    bool command; /* "--": the history is named by its command */
    struct history_store store;
    int refused;
};

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: specx history list [--json FILE]\n"
        "       specx history show [--json FILE] (ID | -- COMMAND [ARGS...])\n"
        "       specx history forget (ID | --all | -- COMMAND [ARGS...])\n"
        "\n"
        "What specx run keeps of a command's earlier runs: the file ranges they read, in\n"
        "the order they read them, which the next run of the command brings in ahead of\n"
        "it. ID is a history's name as 'list' shows it, or a prefix naming one alone;\n"
        "after '--', the command as run in this directory.\n"
        "\n"
        "Options:\n"
        "  -j, --json FILE   write it as JSON to FILE ('-': stdout)\n"
        "  -a, --all         forget every history\n"
        "  -h, --help        show this help\n"
        "\n"
        "See specx-history(1).\n");
}

static void json_field_u64(FILE *out, const char *name, uint64_t v, bool last)
{
    fprintf(out, "\"%s\": %" PRIu64 "%s", name, v, last ? "" : ", ");
}

/* S as the shell would take it back, on one line: bare where it can be, else in single
 * quotes, or in $'...' where it holds control characters (a script given with -c). */
static void print_quoted(FILE *out, const char *s)
{
    bool plain = *s != '\0', control = false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        plain = plain && (isalnum(*p) || strchr("_./=:,+@%-", *p));
        control = control || *p < 0x20 || *p == 0x7f;
    }
    if (plain) {
        fputs(s, out);
    } else if (!control) {
        fputc('\'', out);
        for (const char *p = s; *p; p++) {
            if (*p == '\'')
                fputs("'\\''", out);
            else
                fputc(*p, out);
        }
        fputc('\'', out);
    } else {
        fputs("$'", out);
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
            if (*p == '\n')
                fputs("\\n", out);
            else if (*p < 0x20 || *p == 0x7f)
                fprintf(out, "\\x%02x", *p);
            else if (*p == '\'' || *p == '\\')
                fprintf(out, "\\%c", *p);
            else
                fputc(*p, out);
        }
        fputc('\'', out);
    }
}

static void print_command(FILE *out, const struct history *h)
{
    fprintf(out, "(cd ");
    print_quoted(out, history_cwd(h));
    fprintf(out, " &&");
    for (uint32_t i = 0; i < h->argc; i++) {
        fputc(' ', out);
        print_quoted(out, history_arg(h, i));
    }
    fputc(')', out);
}

static void json_history(FILE *out, const char *name, const struct history *h, bool entries)
{
    fprintf(out, "{\"name\": ");
    specx_json_string(out, name);
    fprintf(out, ", \"cwd\": ");
    specx_json_string(out, history_cwd(h));
    fprintf(out, ", \"argv\": [");
    for (uint32_t i = 0; i < h->argc; i++) {
        fprintf(out, "%s", i ? ", " : "");
        specx_json_string(out, history_arg(h, i));
    }
    fprintf(out, "], ");
    json_field_u64(out, "runs", h->runs, false);
    json_field_u64(out, "files", h->nfiles, false);
    json_field_u64(out, "entries", h->nentries, false);
    json_field_u64(out, "bytes", h->bytes, false);
    json_field_u64(out, "run_ns", h->run_ns, false);
    json_field_u64(out, "last_used", (uint64_t)h->used_sec, !entries);
    if (entries) {
        fprintf(out, "\"ranges\": [");
        for (uint32_t i = 0; i < h->nentries; i++) {
            const struct history_entry *e = &h->entries[i];
            fprintf(out, "%s{\"path\": ", i ? ", " : "");
            specx_json_string(out, history_path_of(h, &h->files[e->file]));
            fprintf(out, ", ");
            json_field_u64(out, "offset", e->off, false);
            json_field_u64(out, "length", e->len, false);
            json_field_u64(out, "t_ns", e->t_ns, false);
            json_field_u64(out, "unused_runs", e->unused_runs, true);
            fputc('}', out);
        }
        fputc(']', out);
    }
    fputc('}', out);
}

static void line_of(FILE *out, const char *name, const struct history *h)
{
    char when[32];
    struct tm tm;
    time_t t = (time_t)h->used_sec;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M", localtime_r(&t, &tm));
    fprintf(out, "%.16s  %s  %3u runs %5u files %6u ranges %9.1f MiB  ", name + 17, when,
            h->runs, h->nfiles, h->nentries, h->bytes / 1048576.0);
    print_command(out, h);
    fputc('\n', out);
}

struct listing {
    struct cli *cli;
    FILE *out;
    int n;
};

static void list_one(const char *name, void *arg)
{
    struct listing *l = arg;
    struct history h;
    char err[PATH_MAX + 128];
    int r = history_load(&l->cli->store, name, &h, err, sizeof err);
    if (r < 0) {
        specx_warn("%s", err);
        l->cli->refused++;
    }
    if (r != 0)
        return;
    if (l->cli->json) {
        fprintf(l->out, "%s\n  ", l->n ? "," : "");
        json_history(l->out, name, &h, false);
    } else {
        line_of(l->out, name, &h);
    }
    l->n++;
    history_free(&h);
}

/* ---- naming one history ---- */

struct search {
    const char *prefix;
    char found[64];
    int matches;
};

static void match_prefix(const char *name, void *arg)
{
    struct search *s = arg;
    /* The key's half is what `list` shows: a prefix of it names a history too. */
    if (strncmp(name, s->prefix, strlen(s->prefix)) == 0 ||
        strncmp(name + 17, s->prefix, strlen(s->prefix)) == 0) {
        snprintf(s->found, sizeof s->found, "%s", name);
        s->matches++;
    }
}

/* The file name of the history ARGS name (ID, or "--" COMMAND...); exits 2 on bad usage. */
static void name_of(struct cli *c, char **args, int nargs, char *name, size_t size)
{
    if (c->command && nargs >= 1) {
        char cwd[PATH_MAX];
        struct command_key k;
        if (!getcwd(cwd, sizeof cwd) || command_key_of(args, cwd, &k) < 0)
            specx_die(1, "%s: command not found", args[0]);
        history_name(k.program, k.key, name, size);
        return;
    }
    if (nargs != 1 || !args[0][0])
        specx_die(2, "name one history (an ID from 'specx history list', or -- COMMAND)");
    struct search s = { .prefix = args[0] };
    history_each(&c->store, match_prefix, &s);
    if (s.matches != 1)
        specx_die(1, "%s: %s", args[0], s.matches ? "names more than one history"
                                                   : "no such history");
    snprintf(name, size, "%s", s.found);
}

static int show(struct cli *c, char **args, int nargs, FILE *out)
{
    char name[64], err[PATH_MAX + 128];
    name_of(c, args, nargs, name, sizeof name);
    struct history h;
    int r = history_load(&c->store, name, &h, err, sizeof err);
    if (r < 0)
        specx_die(1, "%s", err);
    if (r > 0)
        specx_die(1, "no history of that command");
    if (c->json) {
        json_history(out, name, &h, true);
        fputc('\n', out);
    } else {
        line_of(out, name, &h);
        for (uint32_t i = 0; i < h.nentries; i++) {
            const struct history_entry *e = &h.entries[i];
            fprintf(out, "%10.3f ms  %12" PRIu64 " +%-10" PRIu64 " %s\n", e->t_ns / 1e6, e->off,
                    e->len, history_path_of(&h, &h.files[e->file]));
        }
    }
    history_free(&h);
    return 0;
}

static void forget_one(const char *name, void *arg)
{
    history_remove(arg, name);
}

static int forget(struct cli *c, char **args, int nargs)
{
    if (c->all) {
        if (nargs)
            specx_die(2, "--all names every history: no ID with it");
        history_each(&c->store, forget_one, &c->store);
        return 0;
    }
    char name[64];
    name_of(c, args, nargs, name, sizeof name);
    if (history_remove(&c->store, name) < 0)
        specx_die(1, "%s: %s", name, errno == ENOENT ? "no such history" : strerror(errno));
    return 0;
}

static int parse(int argc, char **argv, struct cli *c)
{
    static const struct option longopts[] = {
        { "json", required_argument, NULL, 'j' }, { "all", no_argument, NULL, 'a' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, "+:j:ah", longopts, NULL)) != -1) {
        switch (o) {
        case 'j': c->json = optarg; break;
        case 'a': c->all = true; break;
        case 'h': usage(stdout); exit(0);
        case ':': specx_die(2, "option '%s' needs a value; see 'specx history --help'",
                            argv[optind - 1]);
        default: specx_die(2, "invalid option '%s'; see 'specx history --help'",
                           argv[optind - 1]);
        }
    }
    c->command = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
    return optind;
}

int specx_history_main(int argc, char **argv)
{
    specx_set_progname("specx history");
    if (argc < 2)
        specx_die(2, "no subcommand given (list, show or forget); see 'specx history --help'");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "list") != 0 && strcmp(sub, "show") != 0 && strcmp(sub, "forget") != 0)
        specx_die(2, "'%s' is no subcommand (list, show or forget); see 'specx history --help'",
                  sub);
    struct cli c = { 0 };
    int first = parse(argc - 1, argv + 1, &c) + 1;
    if ((c.all && strcmp(sub, "forget") != 0) || (c.json && strcmp(sub, "forget") == 0))
        specx_die(2, "%s is not an option of 'specx history %s'", c.all ? "--all" : "--json",
                  sub);
    if (strcmp(sub, "list") == 0 && first < argc)
        specx_die(2, "'specx history list' takes no arguments");
    char err[PATH_MAX + 128];
    if (history_store_open(&c.store, false, err, sizeof err) < 0) {
        if (errno != ENOENT || strcmp(sub, "list") != 0)
            specx_die(1, "%s", errno == ENOENT ? "no history kept yet" : err);
        if (c.json)
            printf("[]\n");
        return 0; /* nothing kept yet */
    }
    FILE *out = stdout;
    if (c.json && !(out = specx_json_open(c.json)))
        specx_die(2, "cannot write %s: %s", c.json, strerror(errno));
    int status;
    if (strcmp(sub, "list") == 0) {
        struct listing l = { .cli = &c, .out = out };
        if (c.json)
            fputc('[', out);
        history_each(&c.store, list_one, &l);
        if (c.json)
            fprintf(out, "%s]\n", l.n ? "\n" : "");
        status = c.refused ? 1 : 0;
    } else if (strcmp(sub, "show") == 0) {
        status = show(&c, argv + first, argc - first, out);
    } else {
        status = forget(&c, argv + first, argc - first);
    }
    if (c.json && specx_json_close(out) < 0)
        specx_die(1, "cannot write %s: %s", c.json, strerror(errno));
    history_store_close(&c.store);
    return status;
}
