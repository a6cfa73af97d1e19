/* See volatile.h. The model wraps the passthrough's operations: requests that change
 * something are served one at a time, each preceded by keeping what undoing it needs, and
 * counted; the others only check that the device is still there. */
#include "slowfs/volatile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slowfs/undo_log.h"
#include "common/util.h"

/* A file whose data changed since it was last synced: a descriptor that reaches it wherever
 * its names go, and a copy of its durable content (-1: empty, the file was made since). */
struct kept_file {
    dev_t dev;
    ino_t ino;
    int fd;
    int copy;
};

/* A directory some logged change was made in, held open so that undoing finds it wherever it
 * was moved since. Its index is its number in the undo log. */
struct held_dir {
    dev_t dev;
    ino_t ino;
    int fd;
};

static struct {
    const struct fuse_operations *base;
    pthread_mutex_t lock; /* held while a change is made, counted and logged */
    atomic_bool gone;     /* the power was cut: every request fails */
    int backing_fd;
    int parent_fd;        /* the backing directory's parent, and there ... */
    char shadow[64];      /* ... the shadow directory's name */
    int shadow_fd;
    uint64_t cut_after, changes, undo_failures, last_name;
    struct undo_log log;
    struct held_dir *dirs;
    size_t ndirs, dircap;
    struct kept_file *files;
    size_t nfiles, filecap;
} vol = { .lock = PTHREAD_MUTEX_INITIALIZER, .backing_fd = -1, .parent_fd = -1,
          .shadow_fd = -1 };

static const char *rel(const char *path) { return path[1] ? path + 1 : "."; }

static bool is_dot(const char *name)
{
    return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* Removes NAME in PARENT, a whole tree if it is a directory. */
static int remove_at(int parent, const char *name)
{
    if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    DIR *d = specx_opendir_at(parent, name);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!is_dot(e->d_name) && remove_at(dirfd(d), e->d_name) < 0)
            rc = -1;
    closedir(d);
    return unlinkat(parent, name, AT_REMOVEDIR) < 0 ? -1 : rc;
}

/* 1 if directory NAME in PARENT is empty, 0 if not, a negative errno if it cannot be read. */
static int is_empty(int parent, const char *name)
{
    DIR *d = specx_opendir_at(parent, name);
    if (!d)
        return -errno;
    struct dirent *e;
    while ((e = readdir(d)) && is_dot(e->d_name))
        ;
    closedir(d);
    return e == NULL;
}

static void shadow_name(uint64_t n, char *out, size_t size)
{
    snprintf(out, size, "%" PRIu64, n);
}

/* ---- the data of files ---- */

static int copy_range(int in, int out, off_t size)
{
    off_t in_off = 0, out_off = 0;
    while (in_off < size) {
        ssize_t n = copy_file_range(in, &in_off, out, &out_off, (size_t)(size - in_off), 0);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
    }
    return 0;
}

/* A copy of SIZE bytes of FD in the shadow directory, which only the descriptor returned
 * names; -1 with errno if it cannot be made. */
static int copy_of(int fd, off_t size)
{
    char name[32];
    shadow_name(++vol.last_name, name, sizeof name);
    int copy = openat(vol.shadow_fd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (copy < 0)
        return -1;
    unlinkat(vol.shadow_fd, name, 0);
    if (copy_range(fd, copy, size) < 0) {
        int err = errno;
        close(copy);
        errno = err;
        return -1;
    }
    return copy;
}

static struct kept_file *kept(const struct stat *st)
{
    for (size_t i = 0; i < vol.nfiles; i++)
        if (vol.files[i].dev == st->st_dev && vol.files[i].ino == st->st_ino)
            return &vol.files[i];
    return NULL;
}

/* Before the data of the file open as FD changes: unless it changed already since it was
 * last synced, keeps its durable content (nothing if CREATED: a new file is durable empty). */
static int keep_content(int fd, bool created)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || kept(&st))
        return 0;
    if (!specx_grow(&vol.files, &vol.filecap, vol.nfiles, sizeof *vol.files, 64))
        return -ENOMEM;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    struct kept_file k = { st.st_dev, st.st_ino, open(self, O_RDWR | O_CLOEXEC), -1 };
    if (k.fd < 0)
        return -errno;
    if (!created && (k.copy = copy_of(k.fd, st.st_size)) < 0) {
        int err = errno;
        close(k.fd);
        return -err;
    }
    vol.files[vol.nfiles++] = k;
    return 0;
}

/* The same for the file PATH names, if it exists. */
static int keep_content_of(const char *path)
{
    int fd = openat(vol.backing_fd, rel(path),
                    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* the request itself will say why */
    int ret = keep_content(fd, false);
    close(fd);
    return ret;
}

static void let_go_of_file(struct kept_file *k)
{
    close(k->fd);
    if (k->copy >= 0)
        close(k->copy);
    *k = vol.files[--vol.nfiles];
}

/* The file open as FD was synced: its data is durable. */
static void content_durable(int fd)
{
    struct stat st;
    struct kept_file *k = fstat(fd, &st) == 0 ? kept(&st) : NULL;
    if (k)
        let_go_of_file(k);
}

static int restore_content(const struct kept_file *k)
{
    struct stat st;
    if (ftruncate(k->fd, 0) < 0)
        return -1;
    if (k->copy < 0)
        return 0;
    return fstat(k->copy, &st) < 0 ? -1 : copy_range(k->copy, k->fd, st.st_size);
}

/* ---- names ---- */

/* The number of the directory PARENT (relative to the backing directory), held from now on. */
static int dir_number(const char *parent, unsigned *out)
{
    int fd = openat(vol.backing_fd, parent, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        errno = err;
        return -1;
    }
    for (size_t i = 0; i < vol.ndirs; i++)
        if (vol.dirs[i].dev == st.st_dev && vol.dirs[i].ino == st.st_ino) {
            close(fd);
            *out = (unsigned)i;
            return 0;
        }
    if (!specx_grow(&vol.dirs, &vol.dircap, vol.ndirs, sizeof *vol.dirs, 64)) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    vol.dirs[vol.ndirs] = (struct held_dir){ st.st_dev, st.st_ino, fd };
    *out = (unsigned)vol.ndirs++;
    return 0;
}

/* The last name of PATH (as libfuse gives it: "/a/b"), and its directory's number. */
static const char *split(const char *path, unsigned *dir)
{
    char parent[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t len = (size_t)(slash - path);
    if (len >= sizeof parent) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    if (len == 0)
        strcpy(parent, ".");
    else
        snprintf(parent, sizeof parent, "%.*s", (int)len - 1, path + 1);
    return dir_number(parent, dir) < 0 ? NULL : slash + 1;
}

/* Logs the change of PATH (and TO, if not NULL) about to be made; NULL with errno if it
 * cannot be logged, and then it must not be made. */
static struct undo_entry *log_change(enum undo_kind kind, const char *path, const char *to)
{
    unsigned d0, d1 = 0;
    const char *name0 = split(path, &d0);
    const char *name1 = to ? split(to, &d1) : NULL;
    if (!name0 || (to && !name1))
        return NULL;
    return undo_log_add(&vol.log, kind, d0, name0, d1, name1);
}

/* The change just logged was made with result RET: it stays logged only if it succeeded. */
static int logged(int ret)
{
    if (ret < 0)
        undo_log_drop_last(&vol.log);
    return ret;
}

static int dir_fd(const struct undo_entry *e, int k) { return vol.dirs[e->dir[k]].fd; }

/* Moves NAME[0] of E into the shadow instead of removing it (an unlink or rmdir), after the
 * checks the removal would make. */
static int stash_removed(struct undo_entry *e, bool dir)
{
    struct stat st;
    if (fstatat(dir_fd(e, 0), e->name[0], &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    if (S_ISDIR(st.st_mode) != dir)
        return dir ? -ENOTDIR : -EISDIR;
    int empty = dir ? is_empty(dir_fd(e, 0), e->name[0]) : 1;
    if (empty <= 0)
        return empty < 0 ? empty : -ENOTEMPTY;
    char s[32];
    shadow_name(e->stash = ++vol.last_name, s, sizeof s);
    return renameat(dir_fd(e, 0), e->name[0], vol.shadow_fd, s) < 0 ? -errno : 0;
}

/* Before a rename that may replace NAME[1] of E: keeps what it replaces in the shadow (a
 * second link to a file, the empty directory itself), failing as the rename would where the
 * two do not fit. */
static int stash_replaced(struct undo_entry *e)
{
    struct stat from, to;
    if (fstatat(dir_fd(e, 0), e->name[0], &from, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    if (fstatat(dir_fd(e, 1), e->name[1], &to, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (from.st_dev == to.st_dev && from.st_ino == to.st_ino)
        return 0; /* two links to one file: the rename does nothing */
    if (S_ISDIR(from.st_mode) != S_ISDIR(to.st_mode))
        return S_ISDIR(to.st_mode) ? -EISDIR : -ENOTDIR;
    char s[32];
    shadow_name(e->stash = ++vol.last_name, s, sizeof s);
    if (!S_ISDIR(to.st_mode))
        return linkat(dir_fd(e, 1), e->name[1], vol.shadow_fd, s, 0) < 0 ? -errno : 0;
    int empty = is_empty(dir_fd(e, 1), e->name[1]);
    if (empty <= 0)
        return empty < 0 ? empty : -ENOTEMPTY;
    return renameat(dir_fd(e, 1), e->name[1], vol.shadow_fd, s) < 0 ? -errno : 0;
}

/* Puts what E's change replaced back as NAME[1]; a kept second link goes if the name is
 * still there (the rename failed). */
static int unstash_replaced(const struct undo_entry *e)
{
    char s[32];
    shadow_name(e->stash, s, sizeof s);
    if (renameat2(vol.shadow_fd, s, dir_fd(e, 1), e->name[1], RENAME_NOREPLACE) == 0)
        return 0;
    return errno == EEXIST ? unlinkat(vol.shadow_fd, s, 0) : -1;
}

/* A change became durable: what it removed is gone for good. */
static void let_go_of_change(const struct undo_entry *e, void *arg)
{
    (void)arg;
    char s[32];
    shadow_name(e->stash, s, sizeof s);
    if (e->stash)
        remove_at(vol.shadow_fd, s);
}

static int undo(const struct undo_entry *e)
{
    char s[32];
    shadow_name(e->stash, s, sizeof s);
    switch (e->kind) {
    case UNDO_REMOVE:
        return remove_at(dir_fd(e, 0), e->name[0]);
    case UNDO_RESTORE:
        return renameat2(vol.shadow_fd, s, dir_fd(e, 0), e->name[0], RENAME_NOREPLACE);
    case UNDO_WHITEOUT_RENAME:
        if (unlinkat(dir_fd(e, 0), e->name[0], 0) < 0)
            return -1;
        /* fall through */
    case UNDO_RENAME:
        if (renameat2(dir_fd(e, 1), e->name[1], dir_fd(e, 0), e->name[0], RENAME_NOREPLACE) < 0)
            return -1;
        return e->stash ? unstash_replaced(e) : 0;
    case UNDO_EXCHANGE:
        return renameat2(dir_fd(e, 0), e->name[0], dir_fd(e, 1), e->name[1], RENAME_EXCHANGE);
    }
    return -1;
}

/* ---- the power cut ---- */

/* Rolls the backing directory back to its durable state: the names first, newest change
 * first, then the data of every file written since its last sync. */
static void cut(void)
{
    for (size_t i = vol.log.n; i-- > 0;)
        vol.undo_failures += undo(&vol.log.v[i]) < 0;
    undo_log_clear(&vol.log);
    while (vol.nfiles) {
        vol.undo_failures += restore_content(&vol.files[vol.nfiles - 1]) < 0;
        let_go_of_file(&vol.files[vol.nfiles - 1]);
    }
    atomic_store(&vol.gone, true);
}

/* Starts a request that changes something: false if the device is gone. */
static bool begin_change(void)
{
    pthread_mutex_lock(&vol.lock);
    if (!atomic_load(&vol.gone))
        return true;
    pthread_mutex_unlock(&vol.lock);
    return false;
}

/* Ends it with result RET: it is counted, and the power goes after the N-th. */
static int end_change(int ret)
{
    if (++vol.changes == vol.cut_after)
        cut();
    pthread_mutex_unlock(&vol.lock);
    return ret;
}

static int cut_on_demand(void)
{
    if (fuse_get_context()->uid != 0)
        return -EPERM;
    pthread_mutex_lock(&vol.lock);
    if (!atomic_load(&vol.gone))
        cut();
    pthread_mutex_unlock(&vol.lock);
    return 0;
}

static char *counters_json(void)
{
    char *text = NULL;
    pthread_mutex_lock(&vol.lock);
    if (asprintf(&text,
                 "{\"changes\": %" PRIu64 ", \"cut_after\": %" PRIu64 ", \"cut\": %s, "
                 "\"unsynced_names\": %zu, \"unsynced_files\": %zu, \"undo_failures\": %" PRIu64
                 "}\n",
                 vol.changes, vol.cut_after, atomic_load(&vol.gone) ? "true" : "false",
                 vol.log.n, vol.nfiles, vol.undo_failures) < 0)
        text = NULL;
    pthread_mutex_unlock(&vol.lock);
    return text;
}

static bool gone(void) { return atomic_load(&vol.gone); }

/* ---- the operations ---- */

/* The root's attributes stay readable once the device is gone: the kernel checks them
 * before it reads the control attributes below. */
static int v_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    return gone() && (fi || strcmp(path, "/") != 0) ? -EIO : vol.base->getattr(path, st, fi);
}

static int v_readlink(const char *path, char *buf, size_t size)
{
    return gone() ? -EIO : vol.base->readlink(path, buf, size);
}

static int v_read(const char *path, char *buf, size_t size, off_t offset,
                  struct fuse_file_info *fi)
{
    return gone() ? -EIO : vol.base->read(path, buf, size, offset, fi);
}

static int v_statfs(const char *path, struct statvfs *st)
{
    return gone() ? -EIO : vol.base->statfs(path, st);
}

static int v_listxattr(const char *path, char *list, size_t size)
{
    return gone() ? -EIO : vol.base->listxattr(path, list, size);
}

static int v_opendir(const char *path, struct fuse_file_info *fi)
{
    return gone() ? -EIO : vol.base->opendir(path, fi);
}

static int v_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t offset,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    return gone() ? -EIO : vol.base->readdir(path, buf, fill, offset, fi, flags);
}

static int v_access(const char *path, int mask)
{
    return gone() ? -EIO : vol.base->access(path, mask);
}

static off_t v_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    return gone() ? -EIO : vol.base->lseek(path, off, whence, fi);
}

static int v_flush(const char *path, struct fuse_file_info *fi)
{
    return gone() ? -EIO : vol.base->flush(path, fi);
}

/* The control attributes of the root answer even once the device is gone: --unmount reads
 * the statistics to find the server. */
static bool is_control(const char *path, const char *name)
{
    return strcmp(path, "/") == 0 && strncmp(name, "user.specx.slowfs.", 18) == 0;
}

static int v_getxattr(const char *path, const char *name, char *value, size_t size)
{
    if (strcmp(path, "/") == 0 && strcmp(name, SLOWFS_POWER_XATTR) == 0)
        return slowfs_reply_text(counters_json(), value, size);
    return gone() && !is_control(path, name) ? -EIO
                                             : vol.base->getxattr(path, name, value, size);
}

static int v_open(const char *path, struct fuse_file_info *fi)
{
    if (!(fi->flags & O_TRUNC))
        return gone() ? -EIO : vol.base->open(path, fi);
    if (!begin_change())
        return -EIO;
    int ret = keep_content_of(path);
    return end_change(ret < 0 ? ret : vol.base->open(path, fi));
}

static int v_write(const char *path, const char *buf, size_t size, off_t offset,
                   struct fuse_file_info *fi)
{
    if (!begin_change())
        return -EIO;
    int ret = keep_content(passthrough_file_fd(fi), false);
    return end_change(ret < 0 ? ret : vol.base->write(path, buf, size, offset, fi));
}

static int v_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (!begin_change())
        return -EIO;
    int ret = fi ? keep_content(passthrough_file_fd(fi), false) : keep_content_of(path);
    return end_change(ret < 0 ? ret : vol.base->truncate(path, size, fi));
}

static int v_fallocate(const char *path, int mode, off_t offset, off_t len,
                       struct fuse_file_info *fi)
{
    if (!begin_change())
        return -EIO;
    int ret = keep_content(passthrough_file_fd(fi), false);
    return end_change(ret < 0 ? ret : vol.base->fallocate(path, mode, offset, len, fi));
}

static int v_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    if (!begin_change())
        return -EIO;
    int ret = vol.base->fsync(path, datasync, fi);
    if (ret == 0)
        content_durable(passthrough_file_fd(fi));
    return end_change(ret);
}

static int v_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    if (!begin_change())
        return -EIO;
    int ret = vol.base->fsyncdir(path, datasync, fi);
    struct stat st;
    if (ret == 0 && fstat(passthrough_dir_fd(fi), &st) == 0)
        for (size_t i = 0; i < vol.ndirs; i++)
            if (vol.dirs[i].dev == st.st_dev && vol.dirs[i].ino == st.st_ino)
                undo_log_synced(&vol.log, (unsigned)i, let_go_of_change, NULL);
    return end_change(ret);
}

/* A file made here is durable empty until synced; one that existed keeps its content. */
static int v_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    if (!begin_change())
        return -EIO;
    struct stat st;
    if (fstatat(vol.backing_fd, rel(path), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        int ret = fi->flags & O_TRUNC ? keep_content_of(path) : 0;
        return end_change(ret < 0 ? ret : vol.base->create(path, mode, fi));
    }
    if (!log_change(UNDO_REMOVE, path, NULL))
        return end_change(-errno);
    int ret = vol.base->create(path, mode, fi);
    if (ret == 0 && (ret = keep_content(passthrough_file_fd(fi), true)) < 0) {
        vol.base->release(path, fi);
        unlinkat(vol.backing_fd, rel(path), 0);
    }
    return end_change(logged(ret));
}

static int v_mknod(const char *path, mode_t mode, dev_t rdev)
{
    if (!begin_change())
        return -EIO;
    if (!log_change(UNDO_REMOVE, path, NULL))
        return end_change(-errno);
    return end_change(logged(vol.base->mknod(path, mode, rdev)));
}

static int v_mkdir(const char *path, mode_t mode)
{
    if (!begin_change())
        return -EIO;
    if (!log_change(UNDO_REMOVE, path, NULL))
        return end_change(-errno);
    return end_change(logged(vol.base->mkdir(path, mode)));
}

static int v_symlink(const char *target, const char *path)
{
    if (!begin_change())
        return -EIO;
    if (!log_change(UNDO_REMOVE, path, NULL))
        return end_change(-errno);
    return end_change(logged(vol.base->symlink(target, path)));
}

static int v_link(const char *from, const char *to)
{
    if (!begin_change())
        return -EIO;
    if (!log_change(UNDO_REMOVE, to, NULL))
        return end_change(-errno);
    return end_change(logged(vol.base->link(from, to)));
}

/* unlink and rmdir: the name moves into the shadow, whence a cut brings it back. */
static int remove_name(const char *path, bool dir)
{
    if (!begin_change())
        return -EIO;
    struct undo_entry *e = log_change(UNDO_RESTORE, path, NULL);
    if (!e)
        return end_change(-errno);
    return end_change(logged(stash_removed(e, dir)));
}

static int v_unlink(const char *path) { return remove_name(path, false); }

static int v_rmdir(const char *path) { return remove_name(path, true); }

static int v_rename(const char *from, const char *to, unsigned int flags)
{
    if (!begin_change())
        return -EIO;
    if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT))
        return end_change(-EINVAL);
    enum undo_kind kind = flags & RENAME_EXCHANGE   ? UNDO_EXCHANGE
                          : flags & RENAME_WHITEOUT ? UNDO_WHITEOUT_RENAME
                                                    : UNDO_RENAME;
    struct undo_entry *e = log_change(kind, from, to);
    if (!e)
        return end_change(-errno);
    int ret = flags & (RENAME_NOREPLACE | RENAME_EXCHANGE) ? 0 : stash_replaced(e);
    if (ret == 0 && (ret = vol.base->rename(from, to, flags)) < 0 && e->stash)
        unstash_replaced(e);
    return end_change(logged(ret));
}

/* Changes of a file's status: counted, not undone (volatile.h). */
static int v_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return begin_change() ? end_change(vol.base->chmod(path, mode, fi)) : -EIO;
}

static int v_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    return begin_change() ? end_change(vol.base->chown(path, uid, gid, fi)) : -EIO;
}

static int v_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    return begin_change() ? end_change(vol.base->utimens(path, tv, fi)) : -EIO;
}

static int v_removexattr(const char *path, const char *name)
{
    return begin_change() ? end_change(vol.base->removexattr(path, name)) : -EIO;
}

static int v_setxattr(const char *path, const char *name, const char *value, size_t size,
                      int flags)
{
    if (strcmp(path, "/") == 0 && strcmp(name, SLOWFS_POWER_CUT_XATTR) == 0)
        return cut_on_demand();
    return begin_change() ? end_change(vol.base->setxattr(path, name, value, size, flags))
                          : -EIO;
}

static struct fuse_operations operations;

/* The shadow directory: beside the backing directory, so that names move there by rename,
 * and outside it, so that the mount never shows it. */
static int make_shadow(const char *backing, char *err, size_t errsize)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", backing);
    char *slash = strrchr(parent, '/');
    if (!slash || !slash[1])
        return specx_format_error(err, errsize,
                                  "--volatile-cache needs a backing directory other than /");
    slash[slash == parent ? 1 : 0] = '\0';
    vol.parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat pst, bst;
    if (vol.parent_fd < 0 || fstat(vol.parent_fd, &pst) < 0 || fstat(vol.backing_fd, &bst) < 0)
        return specx_format_error(err, errsize, "cannot open '%s': %s", parent, strerror(errno));
    if (pst.st_dev != bst.st_dev)
        return specx_format_error(err, errsize,
                                  "--volatile-cache needs '%s' on the file system of its "
                                  "parent directory (its shadow directory is made there)",
                                  backing);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.specx-slowfs-shadow-XXXXXX", parent);
    if (!mkdtemp(path))
        return specx_format_error(err, errsize, "cannot make a shadow directory in '%s': %s",
                                  parent, strerror(errno));
    snprintf(vol.shadow, sizeof vol.shadow, "%s", strrchr(path, '/') + 1);
    vol.shadow_fd = openat(vol.parent_fd, vol.shadow,
                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (vol.shadow_fd < 0)
        return specx_format_error(err, errsize, "cannot make a shadow directory in '%s': %s",
                                  parent, strerror(errno));
    return 0;
}

/* Every kept file and held directory is a descriptor. */
static void raise_open_files_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

const struct fuse_operations *volatile_start(const struct slowfs_state *state,
                                             const struct fuse_operations *base,
                                             uint64_t cut_after, char *err, size_t errsize)
{
    vol.base = base;
    vol.backing_fd = state->backing_fd;
    vol.cut_after = cut_after;
    if (make_shadow(state->backing, err, errsize) < 0) {
        volatile_stop();
        return NULL;
    }
    raise_open_files_limit();
    /* Made from nothing, not copied from BASE: an operation of BASE's that is not named here
     * is not served at all, rather than served past the cut. Releasing a descriptor is the
     * one thing still done once the device is gone (the kernel ignores its answer); FLUSH is
     * answered only where BASE answers it (the kernel stops sending it otherwise). */
    operations = (struct fuse_operations){
        .init = base->init,
        .release = base->release,
        .releasedir = base->releasedir,
        .flush = base->flush ? v_flush : NULL,
        .getattr = v_getattr,
        .readlink = v_readlink,
        .mknod = v_mknod,
        .mkdir = v_mkdir,
        .unlink = v_unlink,
        .rmdir = v_rmdir,
        .symlink = v_symlink,
        .rename = v_rename,
        .link = v_link,
        .chmod = v_chmod,
        .chown = v_chown,
        .truncate = v_truncate,
        .utimens = v_utimens,
        .open = v_open,
        .create = v_create,
        .read = v_read,
        .write = v_write,
        .statfs = v_statfs,
        .fsync = v_fsync,
        .setxattr = v_setxattr,
        .getxattr = v_getxattr,
        .listxattr = v_listxattr,
        .removexattr = v_removexattr,
        .opendir = v_opendir,
        .readdir = v_readdir,
        .fsyncdir = v_fsyncdir,
        .access = v_access,
        .fallocate = v_fallocate,
        .lseek = v_lseek,
    };
    return &operations;
}

void volatile_stop(void)
{
    undo_log_clear(&vol.log);
    while (vol.nfiles)
        let_go_of_file(&vol.files[vol.nfiles - 1]);
    free(vol.files);
    for (size_t i = 0; i < vol.ndirs; i++)
        close(vol.dirs[i].fd);
    free(vol.dirs);
    if (vol.shadow_fd >= 0) {
        close(vol.shadow_fd);
        remove_at(vol.parent_fd, vol.shadow);
    }
    if (vol.parent_fd >= 0)
        close(vol.parent_fd);
    vol.shadow_fd = vol.parent_fd = -1;
}
