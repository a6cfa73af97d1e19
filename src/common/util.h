/* Small helpers shared by specx's programs: consistent one-line errors, number parsing, and
 * listing a directory without following a link. */
#ifndef SPECX_UTIL_H
#define SPECX_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The name errors are reported under, e.g. "specx slowfs". */
void specx_set_progname(const char *name);
const char *specx_progname(void);

/* Prints "PROGNAME: message" to stderr. */
void specx_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "PROGNAME: message" to stderr and exits with status. */
_Noreturn void specx_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Formats a one-line error message into err (for callers that report it themselves) and
 * returns -1, so that `return specx_format_error(err, size, ...)` ends a failing check. */
int specx_format_error(char *err, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Makes room for one more element in the array *ITEMS (N in use, *CAP allocated, each SIZE
 * bytes), doubling it (FIRST elements the first time). False (the array as it was) if memory
 * runs out. */
bool specx_grow(void *items, size_t *cap, size_t n, size_t size, size_t first);

/* Strict parsers: the whole string must be a number in [min, max]. Return false otherwise. */
bool specx_parse_double(const char *s, double min, double max, double *out);
bool specx_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Directory NAME of DIRFD (AT_FDCWD: of the working directory; "." for DIRFD itself), opened
 * for reading with no link followed in its last component. NULL with errno. */
DIR *specx_opendir_at(int dirfd, const char *name);

#endif
