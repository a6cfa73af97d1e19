/* See pathset.h. */
#include "idle/pathset.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

int idle_pathset_add(struct idle_pathset *s, const char *path)
{
    if (!specx_grow(&s->paths, &s->cap, s->n, sizeof *s->paths, 64))
        return -1;
    if (!(s->paths[s->n] = strdup(path)))
        return -1;
    s->n++;
    s->sorted = false;
    return 0;
}

static int compare(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void idle_pathset_sort(struct idle_pathset *s)
{
    if (s->sorted)
        return;
    qsort(s->paths, s->n, sizeof *s->paths, compare);
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (kept && strcmp(s->paths[kept - 1], s->paths[i]) == 0)
            free(s->paths[i]);
        else
            s->paths[kept++] = s->paths[i];
    }
    s->n = kept;
    s->sorted = true;
}

bool idle_pathset_has(const struct idle_pathset *s, const char *path)
{
    return s->n && bsearch(&path, s->paths, s->n, sizeof *s->paths, compare) != NULL;
}

long idle_path_within(const char *path, char (*dirs)[4096], size_t n, const char **rel)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(dirs[i]);
        if (strncmp(path, dirs[i], len) == 0 && (path[len] == '/' || path[len] == '\0')) {
            *rel = path + len + (path[len] == '/');
            return (long)i;
        }
    }
    return -1;
}

void idle_pathset_free(struct idle_pathset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->paths[i]);
    free(s->paths);
    *s = (struct idle_pathset){ 0 };
}

bool idle_rel_valid(const char *rel)
{
    size_t len = strnlen(rel, PATH_MAX);
    if (len == 0 || len == PATH_MAX)
        return false;
    for (const char *name = rel;;) {
        size_t n = strcspn(name, "/");
        if (n == 0 || (n == 1 && name[0] == '.') || (n == 2 && strncmp(name, "..", 2) == 0))
            return false;
        if (name[n] == '\0')
            return true;
        name += n + 1;
    }
}
