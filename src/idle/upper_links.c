/* See upper_links.h. */
#include "upper_links.h"

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

#include "file_status.h"

/* The overlay's file handle of a lower file (struct ovl_fb): version, magic, length, flags,
 * handle type, the file system's uuid, then the handle's bytes. */
#define FB_MAGIC 0xfb
#define FB_HEADER 21
#define FB_MAX 255

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
                                 getxattr(path, "trusted.overlay.opaque", opaque, 2) == 1);
        *end = was;
        if (absent || masks)
            return absent;
    }
}

/* Makes the directories above REL in UPPER that are not there, with the status of DIR's. */
static int make_parents(const char *upper, const char *dir, const char *rel)
{
    char in_upper[PATH_MAX], in_dir[PATH_MAX];
    for (const char *slash = strchr(rel, '/'); slash; slash = strchr(slash + 1, '/')) {
        int len = (int)(slash - rel);
        snprintf(in_upper, sizeof in_upper, "%s/%.*s", upper, len, rel);
        snprintf(in_dir, sizeof in_dir, "%s/%.*s", dir, len, rel);
        if (mkdir(in_upper, 0700) == 0) {
            if (idle_dir_status_copy(in_dir, in_upper) < 0)
                return -1;
        } else if (errno != EEXIST) {
            return -1;
        }
    }
    return 0;
}

/* Links COPY (the index's link to the upper copy) at every name BEFORE has for LOWER. */
static int link_names(const char *copy, const struct stat *lower, const char *upper,
                      const char *dir, const struct idle_snapshot *before)
{
    for (size_t i = 0; i < before->n; i++) {
        const struct idle_entry *e = &before->entries[i];
        char name[PATH_MAX];
        if (e->st.st_ino != lower->st_ino || e->st.st_dev != lower->st_dev ||
            !shown_from_lower(upper, e->rel))
            continue;
        if (make_parents(upper, dir, e->rel) < 0 ||
            snprintf(name, sizeof name, "%s/%s", upper, e->rel) >= (int)sizeof name ||
            link(copy, name) < 0)
            return -1;
    }
    return 0;
}

int idle_upper_links_complete(const char *upper, const char *index, const char *dir,
                              const struct idle_snapshot *before)
{
    DIR *d = opendir(index);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = root < 0 ? -1 : 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        char copy[PATH_MAX];
        struct stat lower;
        int fd = open_lower(e->d_name, root);
        if (fd < 0)
            continue; /* "." and "..", or a lower file removed since: no name to link */
        rc = fstat(fd, &lower);
        close(fd);
        snprintf(copy, sizeof copy, "%s/%s", index, e->d_name);
        if (rc == 0)
            rc = link_names(copy, &lower, upper, dir, before);
    }
    int err = errno;
    closedir(d);
    if (root >= 0)
        close(root);
    errno = err;
    return rc;
}
