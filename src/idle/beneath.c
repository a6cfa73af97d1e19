/* See beneath.h. */
#include "idle/beneath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "idle/pathset.h"

/* This C library has no openat2 wrapper: the system call itself. */
static int sys_openat2(int dirfd, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (unsigned long long)flags,
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
}

/* The same without openat2: each directory on the way opened with O_NOFOLLOW. A valid REL has
 * no "..", so staying below DIRFD is only a matter of following no link. */
static int open_by_components(int dirfd, const char *rel, int flags, mode_t mode)
{
    char path[PATH_MAX];
    if (strlen(rel) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(path, rel);
    int at = dirfd;
    char *name = path;
    for (char *slash; (slash = strchr(name, '/')); name = slash + 1) {
        *slash = '\0';
        int next = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (at != dirfd)
            close(at);
        if (next < 0)
            return -1;
        at = next;
    }
    int fd = openat(at, name, flags, mode);
    if (at != dirfd) {
        int e = errno;
        close(at);
        errno = e;
    }
    return fd;
}

int idle_open_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
    if (!idle_rel_valid(rel)) {
        errno = EINVAL;
        return -1;
    }
    flags |= O_NOFOLLOW | O_CLOEXEC;
    int fd = sys_openat2(dirfd, rel, flags, mode);
    if (fd < 0 && errno == ENOSYS)
        fd = open_by_components(dirfd, rel, flags, mode);
    return fd;
}

int idle_open_parent_beneath(int dirfd, const char *rel, const char **name)
{
    const char *slash = strrchr(rel, '/');
    char parent[PATH_MAX];
    *name = slash ? slash + 1 : rel;
    if (!idle_rel_valid(rel)) {
        errno = EINVAL;
        return -1;
    }
    if (!slash)
        return openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    size_t len = (size_t)(slash - rel);
    memcpy(parent, rel, len); /* shorter than the valid REL, itself shorter than PATH_MAX */
    parent[len] = '\0';
    return idle_open_beneath(dirfd, parent, O_RDONLY | O_DIRECTORY, 0);
}

/* Empties directory FD (closed here). */
static void empty_dir(int fd)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            idle_remove_tree_at(fd, e->d_name);
    closedir(d);
}

void idle_remove_tree_at(int dirfd, const char *name)
{
    if (unlinkat(dirfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM))
        return;
    /* A directory (unlink says EISDIR, or EPERM on some file systems): O_NOFOLLOW keeps a
     * link put in its place meanwhile from leading the removal elsewhere. */
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    empty_dir(fd);
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

FILE *idle_create_at(int dirfd, const char *name, int flags)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f && fd >= 0) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}
