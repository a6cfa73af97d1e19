/* specx share's pure parsers: the ::: splitter and the command line (src/share/options.c). */
#include <string.h>

#include "check.h"
#include "share/options.h"

static void splitting(void)
{
    char a[] = "a", x[] = "-x", sep1[] = ":::", b[] = "b", sep2[] = ":::", c[] = "c", y[] = "y";
    char *argv[] = { a, x, sep1, b, sep2, c, y, NULL };
    struct share_command *cmds;
    CHECK(share_split_commands(7, argv, &cmds) == 3);
    CHECK(strcmp(cmds[0].argv[0], "a") == 0 && strcmp(cmds[0].argv[1], "-x") == 0 &&
          cmds[0].argv[2] == NULL);
    CHECK(strcmp(cmds[1].argv[0], "b") == 0 && cmds[1].argv[1] == NULL);
    CHECK(strcmp(cmds[2].argv[0], "c") == 0 && strcmp(cmds[2].argv[1], "y") == 0 &&
          cmds[2].argv[2] == NULL);

    char s1[] = ":::", d[] = "d";
    char *leading[] = { s1, d, NULL };
    CHECK(share_split_commands(2, leading, &cmds) == -1);
    char e[] = "e", s2[] = ":::";
    char *trailing[] = { e, s2, NULL };
    CHECK(share_split_commands(2, trailing, &cmds) == -1);
    char f[] = "f", s3[] = ":::", s4[] = ":::", g[] = "g";
    char *twice[] = { f, s3, s4, g, NULL };
    CHECK(share_split_commands(4, twice, &cmds) == -1);
}

/* With nothing said: turns of 5 s, round robin, the model's prefetch (it beat prefetching at
 * the switch in the benchmark's medians: docs/design/share.md), no release hints. */
static void defaults(void)
{
    char prog[] = "specx-share", sep[] = "--", cmd[] = "true";
    char *argv[] = { prog, sep, cmd, NULL };
    struct share_options o;
    char err[256];
    CHECK(share_options_parse(3, argv, &o, err, sizeof err) == 0);
    CHECK(o.quantum_ns == 5000000000ull && o.scheduler == SCHEDULER_RR);
    CHECK(o.prefetch == PREFETCH_MODEL && o.release == RELEASE_NONE);
    CHECK(o.njobs == 1);
    share_options_free(&o);
}

int main(void)
{
    splitting();
    defaults();
    return check_status();
}
