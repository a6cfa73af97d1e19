/* Durations, sizes and rates on command lines (src/common/units.c). */
#include "check.h"
#include "common/units.h"

static void durations(void)
{
    uint64_t ns;
    CHECK(specx_parse_duration("5", &ns) && ns == 5000000000ull);
    CHECK(specx_parse_duration("500ms", &ns) && ns == 500000000ull);
    CHECK(specx_parse_duration("2.5s", &ns) && ns == 2500000000ull);
    CHECK(specx_parse_duration("1m", &ns) && ns == 60000000000ull);
    CHECK(specx_parse_duration("1h", &ns) && ns == 3600000000000ull);
    CHECK(!specx_parse_duration("0", &ns));
    CHECK(!specx_parse_duration("-1s", &ns));
    CHECK(!specx_parse_duration("5 s", &ns));
    CHECK(!specx_parse_duration("5x", &ns));
    CHECK(!specx_parse_duration("", &ns));
    CHECK(!specx_parse_duration("nan", &ns));
}

static void sizes(void)
{
    uint64_t b;
    CHECK(specx_parse_size("4096", &b) && b == 4096);
    CHECK(specx_parse_size("512M", &b) && b == 512ull << 20);
    CHECK(specx_parse_size("1.5G", &b) && b == 3ull << 29);
    CHECK(specx_parse_size("64K", &b) && b == 64ull << 10);
    CHECK(specx_parse_size("2T", &b) && b == 2ull << 40);
    CHECK(!specx_parse_size("0", &b));
    CHECK(!specx_parse_size("12Q", &b));
    CHECK(!specx_parse_size("M", &b));
    CHECK(!specx_parse_size("99999999999T", &b));
}

static void rates(void)
{
    uint64_t bps;
    CHECK(specx_parse_rate("100mbit", &bps) && bps == 100000000ull);
    CHECK(specx_parse_rate("1gbit", &bps) && bps == 1000000000ull);
    CHECK(specx_parse_rate("512kbit", &bps) && bps == 512000ull);
    CHECK(specx_parse_rate("9600", &bps) && bps == 9600);
    CHECK(!specx_parse_rate("0mbit", &bps));
    CHECK(!specx_parse_rate("fast", &bps));
    CHECK(!specx_parse_rate("10 mbit", &bps));
    CHECK(!specx_parse_rate("-5mbit", &bps));
    CHECK(specx_parse_rate("1.5gbit", &bps) && bps == 1500000000ull);
    CHECK(!specx_parse_rate("99999999999999gbit", &bps));
}

int main(void)
{
    durations();
    sizes();
    rates();
    return check_status();
}
