/* See file_status.h. */
#include "idle/file_status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The NUL-separated names of FD's extended attributes. */
struct names {
    char *list;
    ssize_t len;
};

static bool carried(const char *name)
{
    if (strncmp(name, "trusted.overlay.", 16) == 0)
        return false;
    return strncmp(name, "security.", 9) != 0 || strcmp(name, "security.capability") == 0;
}

/* The list can grow between the two calls: asked again until it fits. */
static int read_names(int fd, struct names *n)
{
    *n = (struct names){ 0 };
    for (;;) {
        ssize_t size = flistxattr(fd, NULL, 0);
        if (size <= 0)
            return size < 0 && errno != ENOTSUP ? -1 : 0;
        free(n->list);
        if (!(n->list = malloc((size_t)size)))
            return -1;
        n->len = flistxattr(fd, n->list, (size_t)size);
        if (n->len >= 0)
            return 0;
        if (errno != ERANGE)
            return -1;
    }
}

static bool listed(const struct names *n, const char *name)
{
    for (ssize_t at = 0; at < n->len; at += (ssize_t)strlen(n->list + at) + 1)
        if (strcmp(n->list + at, name) == 0)
            return true;
    return false;
}

/* The value of FD's attribute NAME in *VALUE (malloc'd): its length, or -1. */
static ssize_t read_value(int fd, const char *name, char **value)
{
    *value = NULL;
    for (;;) {
        ssize_t size = fgetxattr(fd, name, NULL, 0);
        if (size < 0)
            return -1;
        free(*value);
        if (!(*value = malloc(size ? (size_t)size : 1)))
            return -1;
        ssize_t len = fgetxattr(fd, name, *value, (size_t)size);
        if (len >= 0 || errno != ERANGE)
            return len;
    }
}

static void copy_xattrs(int from, int to)
{
    struct names have, had;
    read_names(from, &have);
    read_names(to, &had);
    for (ssize_t at = 0; at < have.len; at += (ssize_t)strlen(have.list + at) + 1) {
        const char *name = have.list + at;
        if (!carried(name))
            continue;
        char *value;
        ssize_t len = read_value(from, name, &value);
        if (len >= 0)
            fsetxattr(to, name, value, (size_t)len, 0);
        free(value);
    }
    for (ssize_t at = 0; at < had.len; at += (ssize_t)strlen(had.list + at) + 1)
        if (carried(had.list + at) && !listed(&have, had.list + at))
            fremovexattr(to, had.list + at);
    free(have.list);
    free(had.list);
}

void idle_status_copy(int from, int to)
{
    struct stat st;
    if (fstat(from, &st) < 0)
        return;
    /* In this order: a change of owner drops set-id bits and file capabilities, and an ACL
     * sets the group bits of the mode, which the mode then sets back as they were. */
    fchown(to, st.st_uid, st.st_gid);
    copy_xattrs(from, to);
    fchmod(to, st.st_mode & 07777);
}

/* True if every attribute A carries is on B with the same value. */
static bool xattrs_within(int a, const struct names *na, int b)
{
    bool same = true;
    for (ssize_t at = 0; same && at < na->len; at += (ssize_t)strlen(na->list + at) + 1) {
        const char *name = na->list + at;
        if (!carried(name))
            continue;
        char *va, *vb;
        ssize_t la = read_value(a, name, &va), lb = read_value(b, name, &vb);
        same = la >= 0 && la == lb && memcmp(va, vb, (size_t)la) == 0;
        free(va);
        free(vb);
    }
    return same;
}

/* Unreadable attributes count as a difference: a change is not missed. */
static bool status_differs(int a, int b)
{
    struct stat sa, sb;
    if (fstat(a, &sa) < 0 || fstat(b, &sb) < 0)
        return true;
    if (sa.st_uid != sb.st_uid || sa.st_gid != sb.st_gid || sa.st_mode != sb.st_mode)
        return true;
    struct names na = { 0 }, nb = { 0 };
    bool read = read_names(a, &na) == 0 && read_names(b, &nb) == 0;
    bool differs = !read || !xattrs_within(a, &na, b) || !xattrs_within(b, &nb, a);
    free(na.list);
    free(nb.list);
    return differs;
}

/* NAME in DIRFD, a directory, not followed if a link. */
static int open_dir(int dirfd, const char *name)
{
    return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static void close_both(int a, int b)
{
    int e = errno;
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    errno = e;
}

int idle_dir_status_copy_at(int from_dir, const char *from, int to_dir, const char *to)
{
    int in = open_dir(from_dir, from), out = in < 0 ? -1 : open_dir(to_dir, to);
    if (out >= 0)
        idle_status_copy(in, out);
    close_both(in, out);
    return out < 0 ? -1 : 0;
}

bool idle_dir_status_differs(const char *a, const char *b)
{
    int fa = open_dir(AT_FDCWD, a), fb = open_dir(AT_FDCWD, b);
    bool differs = fa >= 0 && fb >= 0 && status_differs(fa, fb);
    close_both(fa, fb);
    return differs;
}
