/* See upper_complete.h. */
#include "idle/upper_complete.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "idle/beneath.h"
#include "idle/changes.h"
#include "idle/file_status.h"
#include "common/util.h"

/* The overlay's file handle of a lower file (struct ovl_fb): version, magic, length, flags,
 * handle type, the file system's uuid, then the handle's bytes. */
#define FB_MAGIC 0xfb
#define FB_HEADER 21
#define FB_MAX 255

/* Upper files that stand for lower files with several names: the index's copies, and the
 * copies filled in. */
struct copy {
    dev_t dev;
    ino_t ino;
    char *path;
};

struct copies {
    struct copy *v;
    size_t n, cap;
};

struct completion {
    const char *upper;
    int dir; /* the isolated directory: what lies below it is reached without following links */
    struct idle_pathset *read;
    struct copies copies;
    const struct idle_entry **linked; /* the snapshot's files of several names, by inode */
    size_t nlinked;
};

static int by_inode(const void *a, const void *b)
{
    const struct stat *x = &(*(const struct idle_entry *const *)a)->st;
    const struct stat *y = &(*(const struct idle_entry *const *)b)->st;
    if (x->st_dev != y->st_dev)
        return x->st_dev < y->st_dev ? -1 : 1;
    return x->st_ino < y->st_ino ? -1 : x->st_ino > y->st_ino;
}

/* The entries of BEFORE that are files of several names, sorted by inode. */
static int list_linked(struct completion *c, const struct idle_snapshot *before)
{
    c->linked = malloc((before->n ? before->n : 1) * sizeof *c->linked);
    if (!c->linked)
        return -1;
    for (size_t i = 0; i < before->n; i++)
        if (S_ISREG(before->entries[i].st.st_mode) && before->entries[i].st.st_nlink > 1)
            c->linked[c->nlinked++] = &before->entries[i];
    qsort(c->linked, c->nlinked, sizeof *c->linked, by_inode);
    return 0;
}

static const char *copy_of(const struct copies *c, const struct stat *lower)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].dev == lower->st_dev && c->v[i].ino == lower->st_ino)
            return c->v[i].path;
    return NULL;
}

static int add_copy(struct copies *c, const struct stat *lower, const char *path)
{
    if (!specx_grow(&c->v, &c->cap, c->n, sizeof *c->v, 16) || !(c->v[c->n].path = strdup(path)))
        return -1;
    c->v[c->n].dev = lower->st_dev;
    c->v[c->n++].ino = lower->st_ino;
    return 0;
}

/* OUT = A/B; A alone where B is "", B alone where A is (the isolated directory's own relative
 * path). */
static bool join(char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s%s%s", a, *a && *b ? "/" : "", b);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return false;
    }
    return true;
}

/* The lower file an index entry NAME (the hex of its handle) stands for, opened O_PATH from
 * LOWER_ROOT's file system. -1 if NAME is not such a handle or the file is gone. */
static int open_lower(const char *name, int lower_root)
{
    unsigned char fb[FB_MAX];
    size_t len = strlen(name) / 2;
    if (strlen(name) % 2 || len <= FB_HEADER || len > FB_MAX)
        return -1;
    for (size_t i = 0; i < len; i++)
        if (sscanf(name + 2 * i, "%2hhx", &fb[i]) != 1)
            return -1;
    if (fb[1] != FB_MAGIC || fb[2] != len)
        return -1;
    struct {
        struct file_handle h;
        unsigned char bytes[FB_MAX];
    } handle;
    handle.h.handle_bytes = (unsigned)(len - FB_HEADER);
    handle.h.handle_type = fb[4];
    memcpy(handle.h.f_handle, fb + FB_HEADER, len - FB_HEADER);
    return open_by_handle_at(lower_root, &handle.h, O_PATH | O_CLOEXEC);
}

/* True if the command saw REL of the lower layer as it is: nothing in UPPER at REL or over a
 * directory above it (an entry of its own, a whiteout, a file, an opaque directory). */
static bool shown_from_lower(const char *upper, const char *rel)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", upper, rel);
    if (n < 0 || (size_t)n >= sizeof path)
        return false;
    for (char *end = path + strlen(upper) + 1;; end++) {
        end = strchrnul(end, '/');
        char was = *end;
        *end = '\0';
        struct stat st;
        char opaque[2];
        bool absent = lstat(path, &st) < 0 && errno == ENOENT;
        bool masks = !absent && (!was || !S_ISDIR(st.st_mode) ||
                                 lgetxattr(path, "trusted.overlay.opaque", opaque, 2) == 1);
        *end = was;
        if (absent || masks)
            return absent;
    }
}

/* Gives the upper directory IN_UPPER the status of directory REL below DIR. */
static int give_status_of(int dir, const char *rel, const char *in_upper)
{
    int from = idle_open_beneath(dir, rel, O_RDONLY | O_DIRECTORY, 0);
    if (from < 0)
        return -1;
    int rc = idle_dir_status_copy_at(from, ".", AT_FDCWD, in_upper);
    int e = errno;
    close(from);
    errno = e;
    return rc;
}

/* Makes the directories above REL in UPPER that are not there, with the status of DIR's. */
static int make_parents(const char *upper, int dir, const char *rel)
{
    char in_upper[PATH_MAX], in_dir[PATH_MAX];
    for (const char *slash = strchr(rel, '/'); slash; slash = strchr(slash + 1, '/')) {
        int len = (int)(slash - rel);
        snprintf(in_upper, sizeof in_upper, "%s/%.*s", upper, len, rel);
        snprintf(in_dir, sizeof in_dir, "%.*s", len, rel);
        if (mkdir(in_upper, 0700) == 0) {
            if (give_status_of(dir, in_dir, in_upper) < 0)
                return -1;
        } else if (errno != EEXIST) {
            return -1;
        }
    }
    return 0;
}

/* Links COPY at every name the snapshot has for the lower file LOWER that the command still
 * saw. */
static int link_names(const struct completion *c, const char *copy, const struct stat *lower)
{
    struct idle_entry key = { .st = *lower };
    const struct idle_entry *k = &key;
    size_t lo = 0, hi = c->nlinked; /* the first entry not below LOWER's inode */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (by_inode(&c->linked[mid], &k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < c->nlinked && by_inode(&c->linked[lo], &k) == 0; lo++) {
        const char *rel = c->linked[lo]->rel;
        char name[PATH_MAX];
        if (!shown_from_lower(c->upper, rel))
            continue;
        if (make_parents(c->upper, c->dir, rel) < 0 || !join(name, sizeof name, c->upper, rel) ||
            link(copy, name) < 0)
            return -1;
    }
    return 0;
}

/* The index's copies, by the lower file each stands for. */
static int read_index(struct completion *c, const char *index)
{
    DIR *d = opendir(index);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char copy[PATH_MAX];
        struct stat lower;
        int fd = open_lower(e->d_name, c->dir);
        if (fd < 0)
            continue; /* "." and "..", or a lower file removed since: no name to link */
        rc = fstat(fd, &lower);
        close(fd);
        if (rc == 0 && join(copy, sizeof copy, index, e->d_name))
            rc = add_copy(&c->copies, &lower, copy);
    }
    int err = errno;
    closedir(d);
    errno = err;
    return rc;
}

static int fill_in(struct completion *c, const char *upper, const char *rel);

/* A copy at UPPER of the lower file NAME in directory AT (REL below the isolated directory),
 * whose status is ST: a file with several names linked to the copy that stands for it where
 * there is one. */
static int copy_entry(struct completion *c, int at, const char *name, const struct stat *st,
                      const char *upper, const char *rel)
{
    char target[PATH_MAX];
    if (S_ISDIR(st->st_mode)) {
        if (mkdir(upper, 0700) < 0 || idle_dir_status_copy_at(at, name, AT_FDCWD, upper) < 0)
            return -1;
        return fill_in(c, upper, rel);
    }
    if (S_ISLNK(st->st_mode)) {
        ssize_t len = readlinkat(at, name, target, sizeof target - 1);
        if (len < 0)
            return -1;
        target[len] = '\0';
        if (symlink(target, upper) < 0)
            return -1;
        lchown(upper, st->st_uid, st->st_gid);
        return 0;
    }
    if (!S_ISREG(st->st_mode)) {
        /* Not committed, but there for the scan to say so, as for one the command made. */
        if (mknod(upper, st->st_mode, st->st_rdev) < 0)
            return -1;
        lchown(upper, st->st_uid, st->st_gid);
        return 0;
    }
    const char *copy = st->st_nlink > 1 ? copy_of(&c->copies, st) : NULL;
    if (copy)
        return link(copy, upper);
    if (idle_copy_file(at, name, AT_FDCWD, upper) < 0)
        return -1;
    return st->st_nlink > 1 ? add_copy(&c->copies, st, upper) : 0;
}

/* A copy at UPPER of what the lower layer has at REL, reached without following links: a
 * link put on the way in the real tree leads nowhere outside it. */
static int copy_in(struct completion *c, const char *upper, const char *rel)
{
    const char *name;
    struct stat st;
    int at = idle_open_parent_beneath(c->dir, rel, &name);
    if (at < 0)
        return -1;
    int rc = fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                     idle_pathset_add(c->read, rel) < 0
                 ? -1
                 : copy_entry(c, at, name, &st, upper, rel);
    int e = errno;
    close(at);
    errno = e;
    return rc;
}

/* The directory REL below the isolated directory, for reading, reached without following
 * links. NULL with errno. */
static DIR *open_lower_dir(const struct completion *c, const char *rel)
{
    int fd = idle_open_beneath(c->dir, rel, O_RDONLY | O_DIRECTORY, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

/* Copies into the upper directory UPPER what the lower directory at REL has and UPPER does
 * not (neither an entry of its own nor a whiteout), and marks UPPER opaque: it is whole. */
static int fill_in(struct completion *c, const char *upper, const char *rel)
{
    DIR *d = open_lower_dir(c, rel);
    if (!d && errno != ENOENT)
        return -1;
    int rc = 0;
    struct dirent *e;
    while (d && rc == 0 && (e = readdir(d))) {
        char in_upper[PATH_MAX], in_rel[PATH_MAX];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (!join(in_upper, sizeof in_upper, upper, e->d_name) ||
            !join(in_rel, sizeof in_rel, rel, e->d_name))
            rc = -1;
        else if (lstat(in_upper, &st) < 0)
            rc = errno == ENOENT ? copy_in(c, in_upper, in_rel) : -1;
    }
    if (d)
        closedir(d);
    if (rc == 0 && lsetxattr(upper, "trusted.overlay.opaque", "y", 1, 0) < 0)
        rc = -1;
    lremovexattr(upper, "trusted.overlay.redirect");
    return rc;
}

/* Where the lower directory of CHILD, an upper directory named NAME, is (relative to the
 * isolated directory), given its parent's at PARENT (NULL: none). 1 with it in LOWER, 0 if it
 * has none (new, or opaque), -1 if the path does not fit. *RENAMED: the command renamed it. */
static int lower_of(const char *child, const char *name, const char *parent, char *lower,
                    size_t size, bool *renamed)
{
    char redirect[PATH_MAX], opaque[2];
    ssize_t len = lgetxattr(child, "trusted.overlay.redirect", redirect, sizeof redirect - 1);
    *renamed = len > 0;
    redirect[*renamed ? len : 0] = '\0';
    if (lgetxattr(child, "trusted.overlay.opaque", opaque, 2) == 1)
        return 0;
    if (*renamed && redirect[0] == '/')
        return join(lower, size, "", redirect + 1) ? 1 : -1;
    if (!parent)
        return 0;
    return join(lower, size, parent, *renamed ? redirect : name) ? 1 : -1;
}

/* Walks the upper directory UPPER, whose lower directory is at REL (NULL: it has none), and
 * fills in those the command renamed and all below them (FILL), depth first: a directory
 * below one renamed has its lower one below the old name. */
static int walk(struct completion *c, const char *upper, const char *rel, bool fill)
{
    /* The upper layer is ours, but the command made its entries: none is followed. */
    DIR *d = specx_opendir_at(AT_FDCWD, upper);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char child[PATH_MAX], lower[PATH_MAX];
        struct stat st;
        bool renamed;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (!join(child, sizeof child, upper, e->d_name) || lstat(child, &st) < 0) {
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            int has = lower_of(child, e->d_name, rel, lower, sizeof lower, &renamed);
            rc = has < 0 ? -1 : walk(c, child, has ? lower : NULL, fill || renamed);
        }
    }
    closedir(d);
    if (rc == 0 && fill && rel)
        return fill_in(c, upper, rel);
    if (fill)
        lremovexattr(upper, "trusted.overlay.redirect");
    return rc;
}

int idle_upper_complete(const char *upper, const char *index, int dir,
                        const struct idle_snapshot *before, struct idle_pathset *read)
{
    struct completion c = { .upper = upper, .dir = dir, .read = read };
    int rc = list_linked(&c, before);
    if (rc == 0)
        rc = read_index(&c, index);
    if (rc == 0)
        rc = walk(&c, upper, "", false);
    for (size_t i = 0; i < c.copies.n; i++) {
        struct stat lower = { .st_dev = c.copies.v[i].dev, .st_ino = c.copies.v[i].ino };
        if (rc == 0)
            rc = link_names(&c, c.copies.v[i].path, &lower);
        free(c.copies.v[i].path);
    }
    free(c.copies.v);
    free(c.linked);
    return rc;
}
