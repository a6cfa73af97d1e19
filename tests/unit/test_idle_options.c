/* specx idle's command line (src/idle/options.c): times, deadlines, what is refused. */
#include <string.h>

#include "check.h"
#include "idle/dirty_policy.h"
#include "idle/options.h"

/* 2026-11-25 12:00:00 local, whatever the time zone the test runs in. */
static time_t noon(void)
{
    struct tm tm = { .tm_year = 126, .tm_mon = 10, .tm_mday = 25, .tm_hour = 12, .tm_isdst = -1 };
    return mktime(&tm);
}

static void times(void)
{
    time_t now = noon(), t;
    CHECK(idle_parse_time("13:30", now, &t) && t == now + 5400);
    CHECK(idle_parse_time("12:00:30", now, &t) && t == now + 30);
    CHECK(idle_parse_time("2026-11-26 12:00", now, &t) && t == now + 86400);
    CHECK(idle_parse_time("2026-11-26T12:00:00", now, &t) && t == now + 86400);
    CHECK(idle_parse_time("@1000", now, &t) && t == 1000);
    CHECK(!idle_parse_time("25:00", now, &t));
    CHECK(!idle_parse_time("12:60", now, &t));
    CHECK(!idle_parse_time("2026-02-31 10:00", now, &t));
    CHECK(!idle_parse_time("tomorrow", now, &t));
    CHECK(!idle_parse_time("12:00 ", now, &t));
    CHECK(!idle_parse_time("@", now, &t));
}

/* Parses WORDS (NULL-terminated) as specx idle's argv; returns what idle_options_parse did. */
static int parse(struct idle_options *o, char *err, const char **words)
{
    static char *argv[16]; /* o->argv points into it */
    int argc = 0;
    argv[argc++] = "specx-idle";
    while (*words)
        argv[argc++] = (char *)*words++;
    argv[argc] = NULL;
    extern int optind;
    optind = 0;
    return idle_options_parse(argc, argv, noon(), o, err, 256);
}

static void command_lines(void)
{
    struct idle_options o;
    char err[256];
    CHECK(parse(&o, err, (const char *[]){ "--", "make", "-j2", NULL }) == 0);
    CHECK(strcmp(o.argv[0], "make") == 0 && strcmp(o.argv[1], "-j2") == 0);
    CHECK(o.commit == COMMIT_AUTO && o.net && o.deadline == 0);
    CHECK(parse(&o, err, (const char *[]){ "-i", "/a", "-i", "/b", "-c", "never", "make", NULL })
          == 0);
    CHECK(o.nisolate == 2 && o.commit == COMMIT_NEVER);
    CHECK(parse(&o, err, (const char *[]){ "--within", "90s", "x", NULL }) == 0);
    CHECK(o.deadline == noon() + 90);
    CHECK(parse(&o, err, (const char *[]){ "--deadline", "13:00", "x", NULL }) == 0);
    CHECK(o.deadline == noon() + 3600);
    CHECK(parse(&o, err, (const char *[]){ "--recover", NULL }) == 0 && o.recover);
    /* The dirty-data bound: 32 MiB unless told, 0 for none. */
    CHECK(parse(&o, err, (const char *[]){ "x", NULL }) == 0 &&
          o.dirty_max_bytes == IDLE_DIRTY_DEFAULT_BYTES);
    CHECK(parse(&o, err, (const char *[]){ "--dirty-max", "64M", "x", NULL }) == 0 &&
          o.dirty_max_bytes == 64ull << 20);
    CHECK(parse(&o, err, (const char *[]){ "--dirty-max", "0", "x", NULL }) == 0 &&
          o.dirty_max_bytes == 0);
    /* An asymmetric link: 20 Mbit/s out, 100 in; the same both ways unless told. */
    CHECK(parse(&o, err, (const char *[]){ "--net-rate", "20mbit", "--net-rate-down", "100mbit",
                                           "x", NULL }) == 0 &&
          o.net_rate_bps == 20000000 && o.net_rate_down_bps == 100000000);
    CHECK(parse(&o, err, (const char *[]){ "--net-rate", "20mbit", "x", NULL }) == 0 &&
          o.net_rate_down_bps == 0);
}

static void refusals(void)
{
    struct idle_options o;
    char err[256];
    CHECK(parse(&o, err, (const char *[]){ NULL }) < 0 && strstr(err, "no command"));
    CHECK(parse(&o, err, (const char *[]){ "--deadline", "11:00", "x", NULL }) < 0 &&
          strstr(err, "in the past"));
    CHECK(parse(&o, err, (const char *[]){ "--within", "0", "x", NULL }) < 0);
    CHECK(parse(&o, err, (const char *[]){ "--within", "1m", "--deadline", "13:00", "x", NULL })
          < 0);
    CHECK(parse(&o, err, (const char *[]){ "--commit", "sometimes", "-i", "/a", "x", NULL }) < 0);
    CHECK(parse(&o, err, (const char *[]){ "--commit", "never", "x", NULL }) < 0 &&
          strstr(err, "--isolate"));
    CHECK(parse(&o, err, (const char *[]){ "--bogus", "x", NULL }) < 0 &&
          strstr(err, "--bogus"));
    CHECK(parse(&o, err, (const char *[]){ "--isolate", NULL }) < 0 && strstr(err, "needs"));
    CHECK(parse(&o, err, (const char *[]){ "--recover", "x", NULL }) < 0);
    CHECK(parse(&o, err, (const char *[]){ "--net-rate", "lots", "x", NULL }) < 0 &&
          strstr(err, "--net-rate"));
    CHECK(parse(&o, err, (const char *[]){ "--net-rate-down", "fast", "x", NULL }) < 0 &&
          strstr(err, "--net-rate-down"));
    CHECK(parse(&o, err, (const char *[]){ "--net-rate-down", "1gbit", "x", NULL }) < 0 &&
          strstr(err, "needs --net-rate"));
    CHECK(parse(&o, err, (const char *[]){ "--dirty-max", "much", "x", NULL }) < 0 &&
          strstr(err, "--dirty-max"));
}

int main(void)
{
    times();
    command_lines();
    refusals();
    return check_status();
}
