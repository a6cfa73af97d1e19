/* See snapshot.h. */
#include "idle/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* nftw passes no argument of ours: the walk in progress. */
static struct idle_snapshot *walking;
static size_t walking_root_len;

static int record(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)type;
    (void)ftw;
    struct idle_snapshot *s = walking;
    if (!specx_grow(&s->entries, &s->cap, s->n, sizeof *s->entries, 256))
        return -1;
    const char *rel = path + walking_root_len;
    rel += *rel == '/';
    if (!(s->entries[s->n].rel = strdup(rel)))
        return -1;
    s->entries[s->n++].st = *st;
    return 0;
}

static int by_rel(const void *a, const void *b)
{
    return strcmp(((const struct idle_entry *)a)->rel, ((const struct idle_entry *)b)->rel);
}

int idle_snapshot_take(struct idle_snapshot *s, const char *dir)
{
    *s = (struct idle_snapshot){ 0 };
    walking = s;
    walking_root_len = strlen(dir);
    if (nftw(dir, record, 64, FTW_PHYS | FTW_MOUNT) != 0) {
        int e = errno ? errno : ENOMEM;
        idle_snapshot_free(s);
        errno = e;
        return -1;
    }
    qsort(s->entries, s->n, sizeof *s->entries, by_rel);
    return 0;
}

static bool same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool idle_snapshot_changed(const struct idle_snapshot *s, const char *dir, const char *rel)
{
    struct idle_entry key = { .rel = (char *)rel };
    const struct idle_entry *was = s->n ? bsearch(&key, s->entries, s->n, sizeof key, by_rel)
                                        : NULL;
    char path[PATH_MAX];
    struct stat now;
    snprintf(path, sizeof path, "%s%s%s", dir, *rel ? "/" : "", rel);
    bool exists = lstat(path, &now) == 0;
    if (!was || !exists)
        return (was != NULL) != exists;
    /* ctime moves with every change of data or status, and cannot be set back by anyone. */
    return now.st_ino != was->st.st_ino || now.st_mode != was->st.st_mode ||
           now.st_size != was->st.st_size || !same_time(now.st_mtim, was->st.st_mtim) ||
           !same_time(now.st_ctim, was->st.st_ctim);
}

void idle_snapshot_free(struct idle_snapshot *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->entries[i].rel);
    free(s->entries);
    *s = (struct idle_snapshot){ 0 };
}
