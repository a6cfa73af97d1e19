/* The namespace changes of a volatile-cache device (volatile.h) that are not durable yet, in
 * the order they were made, each with what undoing it needs. A change is durable once every
 * directory it touched has been synced since: then it leaves the log. Pure bookkeeping (the
 * caller does the I/O), so that the rule is unit-tested. */
#ifndef SLOWFS_UNDO_LOG_H
#define SLOWFS_UNDO_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a change is undone. */
enum undo_kind {
    UNDO_REMOVE,   /* it made name[0] (a file, directory, link or node): remove it */
    UNDO_RESTORE,  /* it removed name[0], kept in the shadow as stash: move that back */
    UNDO_RENAME,   /* it renamed name[0] to name[1], replacing stash (0: nothing) */
    UNDO_WHITEOUT_RENAME, /* the same, leaving an overlay whiteout as name[0] */
    UNDO_EXCHANGE, /* it exchanged name[0] and name[1] */
};

struct undo_entry {
    enum undo_kind kind;
    unsigned dir[2];  /* the caller's numbers of the directories of name[0] and name[1] */
    char *name[2];    /* names in them (owned by the log; name[1] NULL if only one) */
    bool pending[2];  /* that directory has not been synced since */
    uint64_t stash;   /* the caller's name for what the change removed, 0 if nothing */
};

struct undo_log {
    struct undo_entry *v;
    size_t n, cap;
};

/* Adds a change of NAME0 in DIR0 (and NAME1 in DIR1 if NAME1 is not NULL); the names are
 * copied. Returns the entry, whose stash the caller may set, or NULL (errno ENOMEM). */
struct undo_entry *undo_log_add(struct undo_log *log, enum undo_kind kind, unsigned dir0,
                                const char *name0, unsigned dir1, const char *name1);

/* Removes the last entry added (its change failed after all). */
void undo_log_drop_last(struct undo_log *log);

/* Directory DIR was synced: every change made in it so far is durable there. The changes now
 * durable everywhere they touched leave the log, each passed to DURABLE first (with ARG), so
 * the caller can let go of what its undo kept. The others keep their order. */
void undo_log_synced(struct undo_log *log, unsigned dir,
                     void (*durable)(const struct undo_entry *, void *), void *arg);

/* Empties the log. */
void undo_log_clear(struct undo_log *log);

#endif
