/* specx share's pure parsers: durations, sizes, the ::: splitter (src/share/options.c). */
#include <string.h>

#include "check.h"
#include "options.h"

static void durations(void)
{
    uint64_t ns;
    CHECK(share_parse_duration("5", &ns) && ns == 5000000000ull);
    CHECK(share_parse_duration("500ms", &ns) && ns == 500000000ull);
    CHECK(share_parse_duration("2.5s", &ns) && ns == 2500000000ull);
    CHECK(share_parse_duration("1m", &ns) && ns == 60000000000ull);
    CHECK(share_parse_duration("1h", &ns) && ns == 3600000000000ull);
    CHECK(!share_parse_duration("0", &ns));
    CHECK(!share_parse_duration("-1s", &ns));
    CHECK(!share_parse_duration("5 s", &ns));
    CHECK(!share_parse_duration("5x", &ns));
    CHECK(!share_parse_duration("", &ns));
    CHECK(!share_parse_duration("nan", &ns));
}

static void sizes(void)
{
    uint64_t b;
    CHECK(share_parse_size("4096", &b) && b == 4096);
    CHECK(share_parse_size("512M", &b) && b == 512ull << 20);
    CHECK(share_parse_size("1.5G", &b) && b == 3ull << 29);
    CHECK(share_parse_size("64K", &b) && b == 64ull << 10);
    CHECK(share_parse_size("2T", &b) && b == 2ull << 40);
    CHECK(!share_parse_size("0", &b));
    CHECK(!share_parse_size("12Q", &b));
    CHECK(!share_parse_size("M", &b));
    CHECK(!share_parse_size("99999999999T", &b));
}

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

int main(void)
{
    durations();
    sizes();
    splitting();
    return check_status();
}
