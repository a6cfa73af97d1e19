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
#include "common/private_dir.h"
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

int idle_state_root_open(struct idle_state_root *r, bool make, char *err, size_t errsize)
{
    const char *below;
    char base[PATH_MAX];
    r->fd = -1;
    if (!choose_place(base, sizeof base, &below)) {
        errno = ENOENT;
        return specx_format_error(err, errsize, "no private place for the runs' state "
                                  "(neither XDG_STATE_HOME nor HOME is an absolute path)");
    }
    r->fd = specx_private_dir_open(base, below, make, "the runs' state", r->path,
                                   sizeof r->path, err, errsize);
    return r->fd < 0 ? -1 : 0;
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
