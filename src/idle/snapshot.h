/* What an isolated directory held when the command started: enough of each entry's status to
 * tell at commit time whether anyone else changed it since (Eggert 2002 ch. 8: optimistic
 * validation of the background's read and write sets). */
#ifndef IDLE_SNAPSHOT_H
#define IDLE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

struct idle_entry {
    char *rel;              /* relative to the directory; "" is the directory itself */
    struct stat st;
};

struct idle_snapshot {
    struct idle_entry *entries; /* sorted by rel */
    size_t n, cap;
};

/* Records every entry under DIR (symbolic links not followed, other file systems not
 * entered). 0, or -1 with errno. */
int idle_snapshot_take(struct idle_snapshot *s, const char *dir);

/* True if REL under DIR is not now what the snapshot says it was: created, removed, replaced,
 * or its data or status changed. */
bool idle_snapshot_changed(const struct idle_snapshot *s, const char *dir, const char *rel);

void idle_snapshot_free(struct idle_snapshot *s);

#endif
