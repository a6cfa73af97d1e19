/* The history store of specx run (docs/design/history.md): what earlier runs of a command
 * read, one file per command, in a directory only its user can reach: $XDG_CACHE_HOME/specx/
 * history or ~/.cache/specx/history, root's /var/cache/specx/history (whatever root's
 * environment says: sudo may keep a user's). The directory is made or checked without
 * following links (common/private_dir.h); each file is opened below it with O_NOFOLLOW, must
 * be a regular file of ours, open to nobody else, and is validated whole (magic, version,
 * sizes, bounds, checksum) before anything in it is used. The store is bounded: the least
 * recently used histories go first. */
#ifndef SPECX_HISTORY_STORE_H
#define SPECX_HISTORY_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of one history and of the store (each history is a small fraction of what its run
 * read: 32 bytes per range of at least a page). */
#define HISTORY_MAX_ENTRIES 16384u
#define HISTORY_MAX_FILES 4096u
#define HISTORY_MAX_STRINGS (256u * 1024u)
#define HISTORY_FILE_MAX (1024u * 1024u)
#define HISTORY_STORE_MAX (32u * 1024u * 1024u)
#define HISTORY_STORE_FILES 512u

/* A file a history names: valid while it still has this identity. */
struct history_file {
    uint64_t dev, ino, size;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    uint32_t path; /* offset of its path in the strings */
};

/* A range the program read, in the order it first did, T_NS into the run. */
struct history_entry {
    uint32_t file;
    uint32_t unused_runs; /* replays in a row that brought it in and saw it unread */
    uint64_t off, len, t_ns;
};

struct history {
    uint64_t program, key; /* command_key.h */
    uint32_t runs;         /* runs that recorded into it */
    uint32_t argc;
    uint64_t run_ns;       /* how long the last recording run took */
    uint64_t bytes;        /* the bytes its entries cover */
    uint32_t nfiles, nentries, strings_size;
    struct history_file *files;
    struct history_entry *entries;
    char *strings;         /* cwd, argv[0..argc-1], then the files' paths, each NUL-ended */
    int64_t used_sec;      /* when it was last written or replayed (its file's mtime) */
    void *owned;           /* what history_free frees: the buffer of a loaded history */
};

struct history_store {
    int fd;
    char path[PATH_MAX];
};

/* Opens the store, making it where MAKE. 0; -1 with a one-line reason in ERR (errno ENOENT:
 * it does not exist, and !MAKE). */
int history_store_open(struct history_store *s, bool make, char *err, size_t errsize);
void history_store_close(struct history_store *s);

/* The name of a command's history file. */
void history_name(uint64_t program, uint64_t key, char *name, size_t size);

/* A lock on KEY's history (an OFD lock on a byte of the store's lock file): a run holds it
 * EXCLUSIVE from before its command starts until its history is written, so that the next run
 * of the same command, which takes it shared before it loads, finds the newest history, not
 * the one before. Waits up to WAIT_MS for it; the descriptor holding it (close to release),
 * or -1 (not to be had in time: the run goes on without it). */
int history_lock(const struct history_store *s, uint64_t key, bool exclusive, int wait_ms);

/* Loads history NAME. 0; 1 if there is none; -1 with a one-line reason in ERR (refused). */
int history_load(const struct history_store *s, const char *name, struct history *h,
                 char *err, size_t errsize);
/* Loads the most recently used history of PROGRAM (any key but SKIP_KEY): 0, 1 if none. */
int history_load_latest_of(const struct history_store *s, uint64_t program, uint64_t skip_key,
                           struct history *h, char *err, size_t errsize);
/* Frees a loaded history (one the caller built owns its arrays itself). */
void history_free(struct history *h);

/* Writes H under its name (a new file renamed over the old one, so a reader sees one or the
 * other whole), then evicts the least recently used histories beyond the store's bounds.
 * Its size in bytes, or -1. */
int64_t history_save(const struct history_store *s, const struct history *h);
/* Marks a history used now (eviction goes by last use). */
void history_touch(const struct history_store *s, const struct history *h);

/* Calls EACH for every history file's name in the store (in no order). */
void history_each(const struct history_store *s, void (*each)(const char *name, void *arg),
                  void *arg);
/* Removes history NAME. 0, or -1 with errno. */
int history_remove(const struct history_store *s, const char *name);

/* File F (at PATH) opened for reading, if it is still what the history saw: a regular file
 * with the same device, inode, size and modification time. Its status is read before it is
 * opened, without following a link, so that nothing else is ever opened (opening a device
 * or a FIFO can act on it), and again after, so that it was not swapped in between. -1 if it
 * changed (stale) or cannot be opened. */
int history_file_open(const struct history_file *f, const char *path);

/* The path of file F of H, and argument I. */
const char *history_path_of(const struct history *h, const struct history_file *f);
const char *history_cwd(const struct history *h);
const char *history_arg(const struct history *h, uint32_t i);

#endif
