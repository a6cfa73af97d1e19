/* The status a commit carries from the overlay's upper layer to the real tree besides the
 * data: owner, mode and extended attributes (user.*, trusted.*, POSIX ACLs, file
 * capabilities). The overlay's own attributes (trusted.overlay.*) and the security modules'
 * labels (security.* other than security.capability), which the kernel sets on each file system
 * by its own policy, are neither copied nor compared. */
#ifndef IDLE_FILE_STATUS_H
#define IDLE_FILE_STATUS_H

#include <stdbool.h>

/* Gives the file open at TO the owner, extended attributes and mode of the one open at FROM;
 * attributes TO has and FROM lacks are removed. Best effort, as a copy by root would be: what
 * TO's file system cannot hold (attributes where it has none) is left out. */
void idle_status_copy(int from, int to);

/* The same from directory FROM in directory FROM_DIR to directory TO in TO_DIR (AT_FDCWD for
 * a path; "." for the directory itself). Neither is followed if a symbolic link; those are its
 * last components only, so a caller reaches FROM_DIR and TO_DIR without following links and
 * passes single names, or paths of its own. 0, or -1 with errno if either cannot be opened. */
int idle_dir_status_copy_at(int from_dir, const char *from, int to_dir, const char *to);

/* True if directories A and B differ in owner, mode or extended attributes (false if either
 * cannot be opened: there is nothing to compare). */
bool idle_dir_status_differs(const char *a, const char *b);

#endif
