/* sqlite-lookup: random point lookups over a large SQLite database, the access pattern of a
 * key-value service whose table is far larger than memory: every lookup walks the B-tree from
 * the root, and the leaf it lands on is almost never resident. The keys follow from the seed
 * alone, so every run reads the same pages in the same order.
 *
 * The database (written by `specx bench`'s generator) holds one table
 *   items(id INTEGER PRIMARY KEY, payload BLOB)
 * with ids 1..N. The program prints how many keys it found and a checksum of their payloads. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "checksum.h"
#include "common/util.h"

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: sqlite-lookup [--seed S] DATABASE COUNT\n"
        "\n"
        "Looks up COUNT random ids in table 'items' of DATABASE (opened read-only)\n"
        "and prints the number found and a checksum of their payloads.\n"
        "The ids follow from the seed (default 1): runs are repeatable.\n");
}

/* splitmix64: the id sequence is a pure function of the seed on every platform. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *stmt;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
        specx_die(1, "cannot prepare '%s': %s", sql, sqlite3_errmsg(db));
    return stmt;
}

/* The largest id, read from the rightmost path of the table's B-tree. */
static int64_t max_id(sqlite3 *db)
{
    sqlite3_stmt *stmt = prepare(db, "SELECT max(id) FROM items");
    if (sqlite3_step(stmt) != SQLITE_ROW)
        specx_die(1, "cannot read the table size: %s", sqlite3_errmsg(db));
    int64_t n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    if (n <= 0)
        specx_die(1, "table 'items' is empty");
    return n;
}

int main(int argc, char **argv)
{
    specx_set_progname("sqlite-lookup");
    uint64_t seed = 1, count;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            if (!specx_parse_u64(argv[++i], 0, UINT64_MAX, &seed))
                specx_die(2, "--seed needs a non-negative integer, not '%s'", argv[i]);
        } else {
            specx_die(2, "unknown option '%s'; see 'sqlite-lookup --help'", argv[i]);
        }
    }
    if (argc - i != 2) {
        usage(stderr);
        return 2;
    }
    if (!specx_parse_u64(argv[i + 1], 1, UINT32_MAX, &count))
        specx_die(2, "COUNT must be a positive integer, not '%s'", argv[i + 1]);

    sqlite3 *db;
    if (sqlite3_open_v2(argv[i], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        specx_die(1, "cannot open %s: %s", argv[i], sqlite3_errmsg(db));
    int64_t rows = max_id(db);
    sqlite3_stmt *lookup = prepare(db, "SELECT payload FROM items WHERE id = ?");
    uint64_t state = seed, found = 0, sum = CHECKSUM_INIT;
    for (uint64_t k = 0; k < count; k++) {
        sqlite3_bind_int64(lookup, 1, (int64_t)(next_random(&state) % (uint64_t)rows) + 1);
        int rc = sqlite3_step(lookup);
        if (rc == SQLITE_ROW) {
            found++;
            sum = checksum_add(sum, sqlite3_column_blob(lookup, 0),
                                   (size_t)sqlite3_column_bytes(lookup, 0));
        } else if (rc != SQLITE_DONE) {
            specx_die(1, "lookup failed: %s", sqlite3_errmsg(db));
        }
        sqlite3_reset(lookup);
    }
    sqlite3_finalize(lookup);
    sqlite3_close(db);
    printf("lookups %" PRIu64 " found %" PRIu64 " checksum %016" PRIx64 "\n", count, found, sum);
    return 0;
}
