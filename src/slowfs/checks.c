#include "slowfs/checks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include <unistd.h>


int check_root(char *err, size_t errsize)
{
    if (geteuid() != 0)
        return specx_format_error(err, errsize, "must be run as root (FUSE allow_other mounts and cache control)");
    return 0;
}

static int check_directory(const char *what, const char *path, char *real, size_t size,
                           char *err, size_t errsize)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return specx_format_error(err, errsize, "%s '%s': %s", what, path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return specx_format_error(err, errsize, "%s '%s' is not a directory", what, path);
    char buf[PATH_MAX];
    if (!realpath(path, buf) || strlen(buf) >= size)
        return specx_format_error(err, errsize, "%s '%s': cannot resolve path", what, path);
    strcpy(real, buf);
    return 0;
}

static bool is_empty_directory(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *e;
    bool empty = true;
    while (empty && (e = readdir(d)))
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

static bool is_mount_point(const char *path)
{
    struct statx stx;
    return statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &stx) == 0 &&
           (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
           (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Whether path is dir itself or below it (both canonical). */
static bool is_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int check_mount_paths(const char *backing, const char *mountpoint, char *backing_real,
                      char *mountpoint_real, size_t pathsize, char *err, size_t errsize)
{
    if (check_directory("backing directory", backing, backing_real, pathsize, err, errsize) ||
        check_directory("mount point", mountpoint, mountpoint_real, pathsize, err, errsize))
        return -1;
    if (is_mount_point(mountpoint_real))
        return specx_format_error(err, errsize, "mount point '%s' is already a mount point", mountpoint);
    if (!is_empty_directory(mountpoint_real))
        return specx_format_error(err, errsize, "mount point '%s' is not empty", mountpoint);
    if (is_within(mountpoint_real, backing_real))
        return specx_format_error(err, errsize, "mount point '%s' is inside the backing directory '%s'",
                    mountpoint, backing);
    return 0;
}
