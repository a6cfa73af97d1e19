/* The overlay's upper layer made a complete record of what the command left, as the commit
 * reads it: a file or directory whole wherever the command changed it. Two of the overlay's
 * records are not:
 * - a directory of the lower layer the command renamed (redirect_dir on) is, at its new name,
 *   a directory holding only what changed in it, the lower one's path in
 *   trusted.overlay.redirect (from the root, or a name beside its parent's lower directory),
 *   with a whiteout at the old name. It is filled in from the lower layer and marked opaque, its
 *   redirect dropped: the upper layer then reads as if the command had copied the directory
 *   and removed the old one (as mv does across file systems);
 * - with the index on, every name of a lower file with several shows the one copy once any
 *   name is copied up (the copy is linked in the index, named after the lower file's handle):
 *   a write through one name is seen through all, as it would be without the overlay, but the
 *   upper layer holds only the names the command reached. The copy is linked at the others.
 * A file with several names copied in by the first is linked at its others too. */
#ifndef IDLE_UPPER_COMPLETE_H
#define IDLE_UPPER_COMPLETE_H

#include "idle/pathset.h"
#include "idle/snapshot.h"

/* Completes UPPER, the upper directory over DIR (the isolated directory, open), whose overlay
 * kept its index in INDEX. BEFORE is DIR's snapshot, whose names are the lower files'; what is
 * copied in from DIR is added to READ (relative to DIR), since the commit carries it as it is
 * now. What is read from DIR is reached below it without following links (beneath.h): names
 * outside DIR are not reached. 0, or -1 with errno. */
int idle_upper_complete(const char *upper, const char *index, int dir,
                        const struct idle_snapshot *before, struct idle_pathset *read);

#endif
