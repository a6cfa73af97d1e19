/* /proc/self/maps, read and parsed with system calls only: used in the freshly cloned
 * speculative process (privatize.c), where malloc and stdio may be unusable, and by the
 * program around a speculative clone (lazy_regions.c). */
#ifndef SPECX_MAPS_H
#define SPECX_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct specx_mapping {
    unsigned long start, end, offset, inode;
    dev_t dev;
    int prot;
    bool shared;
    const char *path; /* inside the maps buffer, NUL-terminated; "" for anonymous */
};

/* Reads all of /proc/self/maps into a fresh anonymous mapping (*BUF of *SIZE bytes, for
 * munmap) at once, so that remapping while parsing cannot shift the text under the caller.
 * Returns the length or -errno. */
long specx_maps_read(char **buf, size_t *size);

/* The same for process PID's maps (the supervisor's look at its copy). */
long specx_maps_read_of(int pid, char **buf, size_t *size);

/* Parses one line ("start-end perms offset maj:min inode   path"), which it NUL-terminates
 * in place. Returns the start of the next line. */
char *specx_maps_parse_line(char *line, struct specx_mapping *m);

#endif
