/* Per-file counts of what reaches the file system through a file's open descriptions
 * (--count-flushes): FLUSH requests, those sent by another thread than the one that opened the
 * description, and writes. They let a test see from outside whether anyone but the program
 * closed or wrote through the program's descriptions (a speculative copy must not). */
#ifndef SLOWFS_FILE_COUNTS_H
#define SLOWFS_FILE_COUNTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct file_counts {
    uint64_t flushes;         /* FLUSH requests: one per close(2) of a descriptor of it */
    uint64_t foreign_flushes; /* of those, sent by another thread than the opener's */
    uint64_t writes;          /* write requests */
};

/* Adds one FLUSH of inode INO (FOREIGN: not from the thread that opened the description). */
void file_counts_flush(ino_t ino, bool foreign);

/* Adds one write request to inode INO. */
void file_counts_write(ino_t ino);

/* The counts of inode INO so far (zeros if none). */
struct file_counts file_counts_of(ino_t ino);

/* As JSON ({"flushes":N,"foreign_flushes":N,"writes":N}), malloc'd; NULL if out of memory. */
char *file_counts_json(ino_t ino);

#endif
