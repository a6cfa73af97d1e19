/* See units.h. */
#include "common/units.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A non-negative decimal number followed by one of UNITS (each with its multiplier); a bare
 * number takes BARE. */
struct unit {
    const char *suffix;
    double multiplier;
};

static bool parse_with_units(const char *s, const struct unit *units, double bare,
                             uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0) || !isfinite(v) || *s == '-' || *s == '+')
        return false;
    double m = 0;
    if (*end == '\0')
        m = bare;
    for (const struct unit *u = units; m == 0 && u->suffix; u++)
        if (strcmp(end, u->suffix) == 0)
            m = u->multiplier;
    if (m == 0 || v * m >= 1.8e19 || v * m < 1)
        return false;
    *out = (uint64_t)(v * m);
    return true;
}

bool specx_parse_duration(const char *s, uint64_t *ns)
{
    static const struct unit units[] = {
        { "ms", 1e6 }, { "s", 1e9 }, { "m", 60e9 }, { "h", 3600e9 }, { NULL, 0 } };
    return parse_with_units(s, units, 1e9, ns);
}

bool specx_parse_rate(const char *s, uint64_t *bps)
{
    static const struct unit units[] = {
        { "kbit", 1e3 }, { "mbit", 1e6 }, { "gbit", 1e9 }, { NULL, 0 } };
    return parse_with_units(s, units, 1, bps);
}

bool specx_parse_size(const char *s, uint64_t *bytes)
{
    static const struct unit units[] = {
        { "K", 1024.0 }, { "M", 1024.0 * 1024 }, { "G", 1024.0 * 1024 * 1024 },
        { "T", 1024.0 * 1024 * 1024 * 1024 }, { "k", 1024.0 }, { NULL, 0 } };
    return parse_with_units(s, units, 1, bytes);
}
