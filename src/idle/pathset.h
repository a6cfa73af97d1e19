/* A set of paths relative to an isolated directory: what the command read, what it changed,
 * what a snapshot holds. Appended to freely, then sorted once for lookups. */
#ifndef IDLE_PATHSET_H
#define IDLE_PATHSET_H

#include <stdbool.h>
#include <stddef.h>

struct idle_pathset {
    char **paths;
    size_t n, cap;
    bool sorted;
};

/* Adds a copy of PATH. 0, or -1 with ENOMEM. */
int idle_pathset_add(struct idle_pathset *s, const char *path);
/* Sorts and removes duplicates: lookups need it. */
void idle_pathset_sort(struct idle_pathset *s);
/* True if PATH is in the (sorted) set. */
bool idle_pathset_has(const struct idle_pathset *s, const char *path);
void idle_pathset_free(struct idle_pathset *s);

/* The index of the directory of DIRS[0..N) that PATH is in (or is), and in *REL the rest of PATH
 * ("" for the directory itself); -1 if none. */
long idle_path_within(const char *path, char (*dirs)[4096], size_t n, const char **rel);

/* True if REL names something below a directory by plain names alone: not empty, shorter than
 * PATH_MAX, no leading '/', and no empty, "." or ".." component. */
bool idle_rel_valid(const char *rel);

#endif
