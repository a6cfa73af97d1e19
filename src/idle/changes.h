/* The command's changes to an isolated directory, read from the overlay's upper directory, and
 * their crash-safe application: a journal of the changes is made durable first, then each file
 * is replaced by a rename, so that a crash at any point leaves every file old or new, and
 * applying the journal again finishes the commit (Eggert 2002 ch. 8). */
#ifndef IDLE_CHANGES_H
#define IDLE_CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

enum idle_change_type {
    CHANGE_MKDIR = 'M',  /* a directory the command made */
    CHANGE_CLEAR = 'C',  /* a directory it emptied and refilled (overlay "opaque") */
    CHANGE_WRITE = 'W',  /* a file it wrote or made */
    CHANGE_LINK = 'L',   /* a symbolic link it made */
    CHANGE_DELETE = 'D', /* something it removed (an overlay whiteout) */
    CHANGE_STATUS = 'S', /* a directory that was there whose owner, mode or attributes it set */
};

struct idle_change {
    char type;
    unsigned dir;        /* which isolated directory */
    char *rel;
};

struct idle_changes {
    struct idle_change *v;
    size_t n, cap;
};

/* Adds the changes recorded in UPPER, the upper directory of isolated directory DIR (number
 * INDEX), parents before what they hold. 0, or -1 with errno. */
int idle_changes_scan(struct idle_changes *c, unsigned index, const char *upper, const char *dir);

/* One line per change ("  changed  DIR/REL"), at most LIMIT of them then a count. */
void idle_changes_print(FILE *out, const struct idle_changes *c, char (*dirs)[4096],
                        size_t limit);

/* Makes the journal of C durable in the run's state directory STATE_FD (written aside,
 * synced, renamed into place), once all of that state and its name are durable: the journal
 * refers to them. */
int idle_journal_write(int state_fd, const struct idle_changes *c);
/* Reads the journal in STATE_FD into C: 0; -1 with ENOENT if there is none, EINVAL if it does
 * not check out (an entry that is not a known change to a path by plain names below one of
 * the NDIRS directories, or not whole). */
int idle_journal_read(int state_fd, size_t ndirs, struct idle_changes *c);

/* What an isolated directory was when its run began: a commit goes to it only. */
struct idle_dir_id {
    dev_t dev;
    ino_t ino;
};

/* Opens the isolated directory PATH, not followed if a link: still the directory ID the run
 * isolated, else -1 with errno ESTALE. */
int idle_open_isolated(const char *path, const struct idle_dir_id *id);

/* Applies C to DIRS (still IDS) from the upper directories in STATE_FD; each path is reached
 * below both without following links, and each file goes in by a rename from a name fixed by
 * (RUN, the run's name, and its place in C), so that a repeated application first removes what
 * an interrupted one left. 0, or -1 with a one-line reason in err. */
int idle_changes_apply(const struct idle_changes *c, char (*dirs)[4096],
                       const struct idle_dir_id *ids, int state_fd, const char *run, char *err,
                       size_t errsize);

void idle_changes_free(struct idle_changes *c);

/* A copy of the file NAME in directory FROM (neither followed if a link, nor waited on if a
 * FIFO: a regular file only) at TO in directory TO_DIR (made, not replaced), with its status
 * (file_status.h) and times, synced: a rename that follows publishes it whole. 0, or -1 with
 * errno (EINVAL where NAME is not a regular file). */
int idle_copy_file(int from, const char *name, int to_dir, const char *to);

/* The upper and work directories of isolated directory INDEX in STATE. */
void idle_upper_dir(char *out, size_t size, const char *state, unsigned index);
void idle_work_dir(char *out, size_t size, const char *state, unsigned index);

#endif
