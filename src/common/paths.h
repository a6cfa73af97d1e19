/* Finding specx's own components (helper programs, the preload runtime, the bench harness)
 * from a build tree or an installed tree, so that `build/specx` and `/usr/local/bin/specx`
 * both work without configuration. */
#ifndef SPECX_PATHS_H
#define SPECX_PATHS_H

#include <stddef.h>

/* Environment variable holding a ':'-separated list of directories to search; the dispatcher
 * sets it for its components, and a user may set it to override. */
#define SPECX_PATH_ENV "SPECX_LIBEXEC_PATH"
/* Environment variable holding the absolute path of the `specx` dispatcher. */
#define SPECX_EXE_ENV "SPECX_EXE"

/* Writes the search list for this installation or build tree into buf (':'-separated).
 * Returns 0, or -1 if it does not fit. */
int specx_search_path(char *buf, size_t size);

/* Finds component NAME (e.g. "specx-slowfs", "libspecx.so") on the search list.
 * Returns 0 and the absolute path in out, or -1 if none is found. */
int specx_find_component(const char *name, char *out, size_t size);

#endif
