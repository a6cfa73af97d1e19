/* Unit tests of the undo log of slowfs's volatile cache (src/slowfs/undo_log.c): which name
 * changes a directory sync makes durable, and the order the rest keep for undoing. */
#include <stdio.h>
#include <string.h>

#include "slowfs/undo_log.h"

#include "check.h"

/* Records the changes a sync made durable, by their first name. */
static char durable[256];

static void note_durable(const struct undo_entry *e, void *arg)
{
    (void)arg;
    strcat(durable, e->name[0]);
    strcat(durable, " ");
}

static void sync_dir(struct undo_log *log, unsigned dir)
{
    durable[0] = '\0';
    undo_log_synced(log, dir, note_durable, NULL);
}

static void test_a_sync_makes_its_directory_durable_only(void)
{
    struct undo_log log = { 0 };
    CHECK(undo_log_add(&log, UNDO_REMOVE, 1, "a", 0, NULL));
    CHECK(undo_log_add(&log, UNDO_REMOVE, 2, "b", 0, NULL));
    CHECK(undo_log_add(&log, UNDO_RESTORE, 1, "c", 0, NULL));
    sync_dir(&log, 1);
    CHECK(strcmp(durable, "a c ") == 0);
    CHECK(log.n == 1 && strcmp(log.v[0].name[0], "b") == 0);
    sync_dir(&log, 1); /* nothing new there */
    CHECK(durable[0] == '\0' && log.n == 1);
    undo_log_clear(&log);
    CHECK(log.n == 0 && log.v == NULL);
}

static void test_a_rename_needs_both_directories(void)
{
    struct undo_log log = { 0 };
    struct undo_entry *e = undo_log_add(&log, UNDO_RENAME, 1, "from", 2, "to");
    CHECK(e && e->dir[0] == 1 && e->dir[1] == 2 && strcmp(e->name[1], "to") == 0);
    e->stash = 7;
    CHECK(undo_log_add(&log, UNDO_REMOVE, 2, "later", 0, NULL));
    sync_dir(&log, 2);
    CHECK(strcmp(durable, "later ") == 0); /* the rename waits for its source directory */
    CHECK(log.n == 1 && log.v[0].stash == 7 && !log.v[0].pending[1] && log.v[0].pending[0]);
    sync_dir(&log, 1);
    CHECK(strcmp(durable, "from ") == 0 && log.n == 0);
    undo_log_clear(&log);
}

static void test_a_rename_within_one_directory(void)
{
    struct undo_log log = { 0 };
    CHECK(undo_log_add(&log, UNDO_RENAME, 3, "tmp", 3, "file"));
    sync_dir(&log, 4);
    CHECK(durable[0] == '\0' && log.n == 1);
    sync_dir(&log, 3);
    CHECK(strcmp(durable, "tmp ") == 0 && log.n == 0);
    undo_log_clear(&log);
}

static void test_the_rest_keep_their_order(void)
{
    struct undo_log log = { 0 };
    const char *names[] = { "a", "b", "c", "d", "e", "f" };
    for (unsigned i = 0; i < 6; i++)
        CHECK(undo_log_add(&log, UNDO_REMOVE, i % 2, names[i], 0, NULL));
    sync_dir(&log, 0);
    CHECK(strcmp(durable, "a c e ") == 0);
    CHECK(log.n == 3 && strcmp(log.v[0].name[0], "b") == 0 &&
          strcmp(log.v[1].name[0], "d") == 0 && strcmp(log.v[2].name[0], "f") == 0);
    undo_log_drop_last(&log);
    CHECK(log.n == 2 && strcmp(log.v[1].name[0], "d") == 0);
    undo_log_clear(&log);
}

int main(void)
{
    test_a_sync_makes_its_directory_durable_only();
    test_a_rename_needs_both_directories();
    test_a_rename_within_one_directory();
    test_the_rest_keep_their_order();
    return check_status();
}
