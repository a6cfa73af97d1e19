/* See private_dir.h. */
#include "common/private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

/* PATH (open as FD) may hold the contents, or lead to them: a directory owned by us (or, for
 * the place it starts from, by root) that nobody else can write; the last one is also
 * unreadable to others. */
static int check_dir(int fd, const char *path, bool first, bool last, const char *what,
                     char *err, size_t errsize)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return specx_format_error(err, errsize, "%s: %s", path, strerror(errno));
    if (st.st_uid != geteuid() && !(first && st.st_uid == 0))
        return specx_format_error(err, errsize, "%s is owned by uid %u, not by us: %s is not "
                                  "kept there", path, (unsigned)st.st_uid, what);
    if ((st.st_mode & (last ? 077 : 022)) != 0)
        return specx_format_error(err, errsize, "%s has mode %04o, open to others: %s is not "
                                  "kept there", path, (unsigned)st.st_mode & 07777, what);
    return 0;
}

/* Opens NAME in directory AT (PATH), making it first where MAKE: a link there is refused. A
 * directory made is durable in AT at once (EINVAL: a file system that cannot sync one): what
 * is kept below it may have to outlive a power cut. */
static int open_component(int at, const char *name, const char *path, bool make,
                          const char *what, char *err, size_t errsize)
{
    bool made = make && mkdirat(at, name, 0700) == 0;
    if ((make && !made && errno != EEXIST) || (made && fsync(at) < 0 && errno != EINVAL))
        return specx_format_error(err, errsize, "cannot make %s: %s", path, strerror(errno));
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno == ENOENT) {
        int e = errno;
        if (fd < 0)
            specx_format_error(err, errsize, "%s does not exist", path);
        errno = e;
        return fd;
    }
    int e = errno;
    specx_format_error(err, errsize, "%s is %s: %s is not kept there", path,
                       e == ELOOP || e == ENOTDIR ? "a symbolic link or not a directory"
                                                  : strerror(e), what);
    errno = e;
    return -1;
}

static int refuse(int fd)
{
    close(fd);
    errno = EPERM;
    return -1;
}

int specx_private_dir_open(const char *base, const char *below, bool make, const char *what,
                           char *path, size_t size, char *err, size_t errsize)
{
    if (snprintf(path, size, "%s", base) >= (int)size) {
        errno = ENAMETOOLONG;
        return specx_format_error(err, errsize, "%s: %s", base, strerror(errno));
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        specx_format_error(err, errsize, "%s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    if (check_dir(fd, path, true, false, what, err, errsize) < 0)
        return refuse(fd);
    for (const char *name = below; *name;) {
        size_t n = strcspn(name, "/"), len = strlen(path);
        bool last = name[n] == '\0';
        char component[NAME_MAX + 1];
        snprintf(component, sizeof component, "%.*s", (int)n, name);
        snprintf(path + len, size - len, "/%s", component);
        int next = open_component(fd, component, path, make, what, err, errsize);
        close(fd);
        if (next < 0)
            return -1;
        if (check_dir(next, path, false, last, what, err, errsize) < 0)
            return refuse(next);
        fd = next;
        name += n + !last;
    }
    return fd;
}
