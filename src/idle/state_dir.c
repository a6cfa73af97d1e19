/* See state_dir.h. */
#include "idle/state_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idle/beneath.h"
#include "common/util.h"

/* A run's state being removed: NAME.gone. */
#define GONE_SUFFIX ".gone"
/* Names tried for a run's state: PID, then PID-1 ... PID-(MAX_NAMES-1). */
#define MAX_NAMES 100

/* Where the state's directories are made, and which: root's place is fixed, whatever its
 * environment says (sudo may keep a user's); another user's follows the XDG base directories.
 * False if there is no place of the user's own (no absolute XDG_STATE_HOME or HOME). */
static bool choose_place(char *base, size_t size, const char **below)
{
    if (geteuid() == 0) {
        snprintf(base, size, "/var/lib");
        *below = "specx/idle";
        return true;
    }
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/') {
        *below = "specx/idle";
        return snprintf(base, size, "%s", xdg) < (int)size;
    }
    *below = ".local/state/specx/idle";
    return home && home[0] == '/' && snprintf(base, size, "%s", home) < (int)size;
}

/* PATH (open as FD) may hold the state, or lead to it: a directory owned by us (or, for the
 * place it starts from, by root) that nobody else can write; the state's own directory is
 * also unreadable to others. */
static int check_dir(int fd, const char *path, bool first, bool last, char *err, size_t errsize)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return specx_format_error(err, errsize, "%s: %s", path, strerror(errno));
    if (st.st_uid != geteuid() && !(first && st.st_uid == 0))
        return specx_format_error(err, errsize, "%s is owned by uid %u, not by us: the runs' "
                                  "state is not kept there", path, (unsigned)st.st_uid);
    if ((st.st_mode & (last ? 077 : 022)) != 0)
        return specx_format_error(err, errsize, "%s has mode %04o, open to others: the runs' "
                                  "state is not kept there", path, (unsigned)st.st_mode & 07777);
    return 0;
}

/* Opens NAME in directory AT (PATH), making it first where MAKE: a link there is refused. A
 * directory made is durable in AT at once (EINVAL: a file system that cannot sync one): the
 * journal of a commit below it must outlive a power cut. */
static int open_component(int at, const char *name, const char *path, bool make, char *err,
                          size_t errsize)
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
    specx_format_error(err, errsize, "%s is %s: the runs' state is not kept there", path,
                       e == ELOOP || e == ENOTDIR ? "a symbolic link or not a directory"
                                                  : strerror(e));
    errno = e;
    return -1;
}

int idle_state_root_open(struct idle_state_root *r, bool make, char *err, size_t errsize)
{
    const char *below;
    r->fd = -1;
    if (!choose_place(r->path, sizeof r->path, &below)) {
        errno = ENOENT;
        return specx_format_error(err, errsize, "no private place for the runs' state "
                                  "(neither XDG_STATE_HOME nor HOME is an absolute path)");
    }
    int fd = open(r->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return specx_format_error(err, errsize, "%s: %s", r->path, strerror(errno));
    if (check_dir(fd, r->path, true, false, err, errsize) < 0) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    for (const char *name = below; *name;) {
        size_t n = strcspn(name, "/"), len = strlen(r->path);
        bool last = name[n] == '\0';
        char component[NAME_MAX + 1];
        snprintf(component, sizeof component, "%.*s", (int)n, name);
        snprintf(r->path + len, sizeof r->path - len, "/%s", component);
        int next = open_component(fd, component, r->path, make, err, errsize);
        close(fd);
        if (next < 0)
            return -1;
        if (check_dir(next, r->path, false, last, err, errsize) < 0) {
            close(next);
            errno = EPERM;
            return -1;
        }
        fd = next;
        name += n + !last;
    }
    r->fd = fd;
    return 0;
}

void idle_state_root_close(struct idle_state_root *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

int idle_state_make_run(const struct idle_state_root *r, char *name, size_t size)
{
    /* Shared: a recovery (exclusive) never sees this state before its lock is taken. */
    if (flock(r->fd, LOCK_SH) < 0)
        return -1;
    int fd = -1, made = -1;
    for (int i = 0; made < 0 && i < MAX_NAMES; i++) {
        if (i == 0)
            snprintf(name, size, "%d", (int)getpid());
        else
            snprintf(name, size, "%d-%d", (int)getpid(), i);
        if ((made = mkdirat(r->fd, name, 0700)) < 0 && errno != EEXIST)
            break;
    }
    if (made == 0) {
        fd = openat(r->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
            close(fd);
            fd = -1;
        }
    }
    int e = errno;
    flock(r->fd, LOCK_UN);
    errno = e;
    return fd;
}

static bool is_gone(const char *name)
{
    size_t len = strlen(name), suffix = strlen(GONE_SUFFIX);
    return len > suffix && strcmp(name + len - suffix, GONE_SUFFIX) == 0;
}

void idle_state_each_ended(const struct idle_state_root *r,
                           void (*found)(int fd, const char *name, void *arg), void *arg)
{
    DIR *d = specx_opendir_at(r->fd, ".");
    if (!d)
        return;
    flock(r->fd, LOCK_EX);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        int fd = openat(r->fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        /* Its run holds the lock for as long as it lives (removing its state included). */
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            close(fd);
            continue;
        }
        if (is_gone(e->d_name))
            idle_remove_tree_at(r->fd, e->d_name); /* its run was killed while removing it */
        else
            found(fd, e->d_name, arg);
        close(fd);
    }
    flock(r->fd, LOCK_UN);
    closedir(d);
}

void idle_state_remove_run(const struct idle_state_root *r, const char *name)
{
    char gone[NAME_MAX + 1];
    snprintf(gone, sizeof gone, "%s" GONE_SUFFIX, name);
    idle_remove_tree_at(r->fd, gone); /* of a run of this name killed while removing it */
    if (renameat(r->fd, name, r->fd, gone) == 0) {
        fsync(r->fd);
        idle_remove_tree_at(r->fd, gone);
    } else {
        idle_remove_tree_at(r->fd, name);
    }
}
