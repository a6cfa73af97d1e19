/* Hard links of the isolated directory as the command saw them. With its index on, the overlay
 * shows every name of a file with several links as the one copy once any name is copied up
 * (the copy is linked in its index, named after the lower file's handle): a write through one
 * name is seen through all, as it would be without the overlay. The upper layer holds only the
 * names the command reached, so the commit would part the others from it. */
#ifndef IDLE_UPPER_LINKS_H
#define IDLE_UPPER_LINKS_H

#include "snapshot.h"

/* Links into UPPER (the upper directory over DIR) each name of a copied-up file listed in
 * INDEX (the overlay's index directory) that the command still saw as that file: a name BEFORE
 * (DIR's snapshot) has for the lower file, with nothing of the upper layer over it or over a
 * directory above it. Names outside DIR cannot be reached. 0, or -1 with errno. */
int idle_upper_links_complete(const char *upper, const char *index, const char *dir,
                              const struct idle_snapshot *before);

#endif
