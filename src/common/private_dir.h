/* A directory only its owner can make, read or change, reached from a fixed starting place
 * without following links: where specx keeps what it must trust again later (specx idle's
 * runs' state, specx run's history). Each directory on the way is checked: owned by us (the
 * starting place may be root's), writable by nobody else, the last one unreadable to others
 * too (0700), none a link. */
#ifndef SPECX_COMMON_PRIVATE_DIR_H
#define SPECX_COMMON_PRIVATE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Opens BASE/BELOW (BELOW relative, "a/b/c"), making what is missing of it where MAKE (each
 * directory made is synced into its parent). PATH (SIZE bytes) receives the path reached.
 * WHAT names the contents in errors ("the runs' state"). The directory's descriptor; or -1
 * with a one-line reason in ERR and errno: ENOENT if a part does not exist and !MAKE, EPERM
 * if a part is someone else's or open to others, ELOOP or ENOTDIR if one is a link or no
 * directory. */
int specx_private_dir_open(const char *base, const char *below, bool make, const char *what,
                           char *path, size_t size, char *err, size_t errsize);

#endif
