/* FUSE operations of slowfs: a path-based passthrough of the backing directory.
 *
 * Only data reads go through the device model (and data writes given --model-writes, and the
 * metadata operations a remote device charges for: lookups, opens, listings, link targets):
 * slowfs emulates a slow device for programs that read, and everything else must stay
 * correct, durable and cheap. The daemon runs as root, so anything created through the mount
 * is handed to the caller (PostgreSQL runs as `postgres` on it).
 *
 * Callbacks return 0 or a negative errno, as libfuse expects. */
#include "slowfs/passthrough.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "slowfs/file_counts.h"
#include "slowfs/ioclass.h"

/* An open file: its descriptor on the backing file and the disk its first stripe unit lives
 * on, derived from the inode number so small files spread over the disks like on a striped
 * file system. */
struct open_file {
    int fd;
    uint64_t first_disk;
    pid_t opener; /* the thread that opened it (file_counts.h) */
};

/* An open directory being listed. */
struct open_dir {
    DIR *dir;
    struct dirent *pending; /* read but not yet accepted by the kernel's buffer */
    off_t offset;           /* position after the entries handed out so far */
    uint64_t key;           /* spreads its listing requests over the disks (path_key) */
    uint64_t served;        /* entries handed out since the listing began */
    uint64_t paid;          /* entries whose READDIR requests the listing has paid for */
};

static struct slowfs_state *state(void) { return fuse_get_context()->private_data; }

/* Paths from libfuse start with '/'; the backing directory fd is their root. */
static const char *rel(const char *path) { return path[1] ? path + 1 : "."; }

static int neg_errno(int ret) { return ret < 0 ? -errno : ret; }

static struct open_file *file_of(const struct fuse_file_info *fi)
{
    return (struct open_file *)(uintptr_t)fi->fh;
}

static struct open_dir *dir_of(const struct fuse_file_info *fi)
{
    return (struct open_dir *)(uintptr_t)fi->fh;
}

static enum model_class requester_class(void) { return ioclass_of(fuse_get_context()->pid); }

/* FNV-1a: spreads metadata operations on different paths over the disks. */
static uint64_t path_key(const char *path)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* Charges one request of metadata operation op, as the device prices it. */
static void metadata_cost_key(uint64_t key, enum model_metadata_op op)
{
    device_metadata(state()->device, key, op, requester_class());
}

static void metadata_cost(const char *path, enum model_metadata_op op)
{
    metadata_cost_key(path_key(path), op);
}

/* Hands a freshly created entry to the calling user. Its group stays as the backing file
 * system chose it when the parent directory is set-group-ID (BSD group semantics). */
static int give_to_caller(const char *path)
{
    const struct fuse_context *ctx = fuse_get_context();
    int dirfd = state()->backing_fd;
    struct stat st;
    if (fstatat(dirfd, rel(path), &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    gid_t gid = ctx->gid;
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    slash[slash == parent ? 1 : 0] = '\0';
    struct stat pst;
    if (fstatat(dirfd, rel(parent), &pst, 0) == 0 && (pst.st_mode & S_ISGID))
        gid = st.st_gid;
    if (st.st_uid == ctx->uid && st.st_gid == gid)
        return 0;
    return neg_errno(fchownat(dirfd, rel(path), ctx->uid, gid, AT_SYMLINK_NOFOLLOW));
}

/* Undoes a creation whose hand-over failed, so nothing half-made stays behind. */
static int created_or_undo(const char *path, int is_dir)
{
    int ret = give_to_caller(path);
    if (ret < 0)
        unlinkat(state()->backing_fd, rel(path), is_dir ? AT_REMOVEDIR : 0);
    return ret;
}

static void *sf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    struct slowfs_state *s = state();
    cfg->use_ino = 1;     /* real inode numbers: the striping and hard links depend on them */
    cfg->readdir_ino = 1;
    cfg->nullpath_ok = 1; /* operations on open files use the descriptor ... */
    cfg->hard_remove = 1; /* ... so an unlinked open file needs no hidden rename */
    /* The device model, not FUSE's defaults (12 background requests), decides how many
     * reads are served at once (docs/design/slowfs.md). */
    conn->max_background = s->max_background;
    conn->congestion_threshold = s->max_background;
    /* How long the kernel trusts names and attributes: metadata it asks for again costs
     * again, as on the device (docs/design/slowfs.md). No negative entries: a name made in
     * the backing directory is found at once. */
    cfg->entry_timeout = s->attr_timeout_s;
    cfg->attr_timeout = s->attr_timeout_s;
    cfg->negative_timeout = 0;
    /* Where metadata costs, the kernel keeps symbolic links' targets, as a client of the
     * device does, until the link's attributes say it changed. */
    if (s->cache_metadata && (conn->capable & FUSE_CAP_CACHE_SYMLINKS))
        conn->want |= FUSE_CAP_CACHE_SYMLINKS;
    return s;
}

/* A lookup and a fetch of a path's attributes reach here alike (libfuse's high-level API
 * answers both with getattr), and each is one request on the device, as LOOKUP and GETATTR
 * are on NFS; so is a fetch of an open file's attributes once the kernel's have expired. */
static int sf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (fi) {
        metadata_cost_key(file_of(fi)->first_disk, MODEL_LOOKUP);
        return neg_errno(fstat(file_of(fi)->fd, st));
    }
    metadata_cost(path, MODEL_LOOKUP);
    return neg_errno(fstatat(state()->backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int sf_readlink(const char *path, char *buf, size_t size)
{
    metadata_cost(path, MODEL_READLINK);
    ssize_t n = readlinkat(state()->backing_fd, rel(path), buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return 0;
}

static int sf_mknod(const char *path, mode_t mode, dev_t rdev)
{
    int dirfd = state()->backing_fd;
    int ret = S_ISFIFO(mode) ? mkfifoat(dirfd, rel(path), mode)
                             : mknodat(dirfd, rel(path), mode, rdev);
    return ret < 0 ? -errno : created_or_undo(path, 0);
}

static int sf_mkdir(const char *path, mode_t mode)
{
    if (mkdirat(state()->backing_fd, rel(path), mode) < 0)
        return -errno;
    return created_or_undo(path, 1);
}

static int sf_unlink(const char *path)
{
    return neg_errno(unlinkat(state()->backing_fd, rel(path), 0));
}

static int sf_rmdir(const char *path)
{
    return neg_errno(unlinkat(state()->backing_fd, rel(path), AT_REMOVEDIR));
}

static int sf_symlink(const char *target, const char *path)
{
    if (symlinkat(target, state()->backing_fd, rel(path)) < 0)
        return -errno;
    return created_or_undo(path, 0);
}

static int sf_rename(const char *from, const char *to, unsigned int flags)
{
    int dirfd = state()->backing_fd;
    return neg_errno(renameat2(dirfd, rel(from), dirfd, rel(to), flags));
}

/* A hard link names an existing inode: its owner stays as it is. */
static int sf_link(const char *from, const char *to)
{
    int dirfd = state()->backing_fd;
    return neg_errno(linkat(dirfd, rel(from), dirfd, rel(to), 0));
}

static int sf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    if (fi)
        return neg_errno(fchmod(file_of(fi)->fd, mode));
    return neg_errno(fchmodat(state()->backing_fd, rel(path), mode, 0));
}

static int sf_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    if (fi)
        return neg_errno(fchown(file_of(fi)->fd, uid, gid));
    return neg_errno(fchownat(state()->backing_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

static int sf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi)
        return neg_errno(ftruncate(file_of(fi)->fd, size));
    int fd = openat(state()->backing_fd, rel(path), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int ret = neg_errno(ftruncate(fd, size));
    close(fd);
    return ret;
}

static int sf_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    if (fi)
        return neg_errno(futimens(file_of(fi)->fd, tv));
    return neg_errno(utimensat(state()->backing_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

/* Wraps a backing descriptor as an open file. kernel_cache: data stays cached across opens,
 * so a warm run is warm (without it FUSE drops a file's pages on every open). */
static int attach_file(int fd, struct fuse_file_info *fi)
{
    struct stat st;
    struct open_file *of = malloc(sizeof *of);
    if (!of || fstat(fd, &st) < 0) {
        int err = of ? errno : ENOMEM;
        free(of);
        close(fd);
        return -err;
    }
    of->fd = fd;
    of->first_disk = st.st_ino;
    of->opener = fuse_get_context()->pid;
    fi->fh = (uintptr_t)of;
    fi->keep_cache = 1;
    return 0;
}

/* Flags for the backing open. O_DIRECT is the kernel's business on the mount (it bypasses
 * the mount's page cache); on the backing file it would only make our reads into libfuse's
 * unaligned buffers fail with EINVAL. Durability comes from fsync, which is passed on. */
static int backing_flags(int flags)
{
    return (flags & ~(O_NOFOLLOW | O_DIRECT)) | O_CLOEXEC;
}

static int sf_open(const char *path, struct fuse_file_info *fi)
{
    metadata_cost(path, MODEL_OPEN);
    int fd = openat(state()->backing_fd, rel(path), backing_flags(fi->flags));
    if (fd < 0)
        return -errno;
    return attach_file(fd, fi);
}

/* Creates exclusively first, so that only a file this call really created changes owner. */
static int sf_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int dirfd = state()->backing_fd;
    int flags = backing_flags(fi->flags);
    int fd = openat(dirfd, rel(path), flags | O_CREAT | O_EXCL, mode);
    if (fd < 0 && errno == EEXIST && !(flags & O_EXCL)) {
        fd = openat(dirfd, rel(path), flags & ~O_CREAT); /* someone else's: owner stays */
        return fd < 0 ? -errno : attach_file(fd, fi);
    }
    if (fd < 0)
        return -errno;
    int ret = created_or_undo(path, 0);
    if (ret < 0) {
        close(fd);
        return ret;
    }
    return attach_file(fd, fi);
}

/* The data read: the backing read happens first, while the modelled time runs, so the
 * backing disk's own latency hides inside the model's instead of adding to it. */
static int sf_read(const char *path, char *buf, size_t size, off_t offset,
                   struct fuse_file_info *fi)
{
    double arrival = device_now();
    struct open_file *of = file_of(fi);
    ssize_t n = pread(of->fd, buf, size, offset);
    if (n < 0)
        return -errno;
    device_read(state()->device, of->first_disk, (uint64_t)offset, (uint64_t)n,
                requester_class(), arrival);
    return (int)n;
}

/* The data write, timed like the read (the device decides whether it costs anything): the
 * backing write happens inside the modelled time, and the call returns when that is over. */
static int sf_write(const char *path, const char *buf, size_t size, off_t offset,
                    struct fuse_file_info *fi)
{
    double arrival = device_now();
    struct open_file *of = file_of(fi);
    ssize_t n = pwrite(of->fd, buf, size, offset);
    if (n < 0)
        return -errno;
    device_write(state()->device, of->first_disk, (uint64_t)offset, (uint64_t)n,
                 requester_class(), arrival);
    if (state()->count_flushes)
        file_counts_write((ino_t)of->first_disk);
    return (int)n;
}

static int sf_statfs(const char *path, struct statvfs *st)
{
    return neg_errno(fstatvfs(state()->backing_fd, st));
}

/* No flush operation unless --count-flushes: the kernel then stops sending FLUSH at every
 * close(2) (one round trip to this daemon each, a third of a warm `grep -r`'s requests).
 * Nothing is lost: POSIX locks are kept by the kernel, not passed on, and the backing files
 * are local, so closing a duplicate of the backing descriptor would report no write error
 * that fsync does not. With it, FLUSH is answered and only counted (file_counts.h). */
static int sf_flush(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = file_of(fi);
    file_counts_flush((ino_t)of->first_disk, fuse_get_context()->pid != of->opener);
    return 0;
}

static int sf_release(const char *path, struct fuse_file_info *fi)
{
    struct open_file *of = file_of(fi);
    close(of->fd);
    free(of);
    return 0;
}

static int sf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    int fd = file_of(fi)->fd;
    return neg_errno(datasync ? fdatasync(fd) : fsync(fd));
}

/* Extended attributes have no *at(2) calls in glibc: they use the backing path. */
static int backing_path(const char *path, char *out, size_t size)
{
    int n = snprintf(out, size, "%s%s", state()->backing, path);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int sf_setxattr(const char *path, const char *name, const char *value, size_t size,
                       int flags)
{
    char full[PATH_MAX];
    int ret = backing_path(path, full, sizeof full);
    return ret ? ret : neg_errno(lsetxattr(full, name, value, size, flags));
}

/* Answers with TEXT (freed): size 0 asks for the length, as getxattr(2) does. */
int slowfs_reply_text(char *text, char *value, size_t size)
{
    if (!text)
        return -ENOMEM;
    size_t len = strlen(text);
    int ret = (int)len;
    if (len > 65536)
        ret = -E2BIG;
    else if (size && size < len)
        ret = -ERANGE;
    else if (size)
        memcpy(value, text, len);
    free(text);
    return ret;
}

static int sf_getxattr(const char *path, const char *name, char *value, size_t size)
{
    if (strcmp(path, "/") == 0 && strcmp(name, SLOWFS_STATS_XATTR) == 0)
        return slowfs_reply_text(device_stats_json(state()->device), value, size);
    if (strcmp(path, "/") == 0 && strcmp(name, SLOWFS_TABLE_XATTR) == 0)
        return slowfs_reply_text(device_stats_table(state()->device), value, size);
    struct stat st;
    if (state()->count_flushes && strcmp(name, SLOWFS_FILE_XATTR) == 0)
        return fstatat(state()->backing_fd, rel(path), &st, AT_SYMLINK_NOFOLLOW) < 0
                   ? -errno
                   : slowfs_reply_text(file_counts_json(st.st_ino), value, size);
    char full[PATH_MAX];
    int ret = backing_path(path, full, sizeof full);
    if (ret)
        return ret;
    ssize_t n = lgetxattr(full, name, value, size);
    return n < 0 ? -errno : (int)n;
}

static int sf_listxattr(const char *path, char *list, size_t size)
{
    char full[PATH_MAX];
    int ret = backing_path(path, full, sizeof full);
    if (ret)
        return ret;
    ssize_t n = llistxattr(full, list, size);
    return n < 0 ? -errno : (int)n;
}

static int sf_removexattr(const char *path, const char *name)
{
    char full[PATH_MAX];
    int ret = backing_path(path, full, sizeof full);
    return ret ? ret : neg_errno(lremovexattr(full, name));
}

/* Opening a directory costs nothing by itself; its listing pays per page (sf_readdir), each
 * time: libfuse's high-level API does not pass cache_readdir on to the kernel, so every
 * listing reaches slowfs (docs/design/slowfs.md). */
static int sf_opendir(const char *path, struct fuse_file_info *fi)
{
    int fd = openat(state()->backing_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct open_dir *od = calloc(1, sizeof *od);
    if (!od || !(od->dir = fdopendir(fd))) {
        int err = od ? errno : ENOMEM;
        free(od);
        close(fd);
        return -err;
    }
    od->key = path_key(path);
    fi->fh = (uintptr_t)od;
    return 0;
}

/* Pays the READDIR requests of the page the next entry begins, once: an entry the kernel's
 * buffer refused is handed out again in the next call without being paid twice. */
static void pay_for_next_entry(struct open_dir *od)
{
    if (od->served < od->paid)
        return;
    uint64_t requests = model_readdir_requests(device_params(state()->device), od->served, 1);
    od->paid = od->served + 1;
    while (requests--)
        metadata_cost_key(od->key, MODEL_READDIR);
}

/* Fills in what the kernel caches for an entry: with READDIRPLUS the whole stat, so a tree
 * walk (grep -r over thousands of files) needs no separate lookup per name. */
static enum fuse_fill_dir_flags describe(struct open_dir *od, const struct dirent *e,
                                         enum fuse_readdir_flags flags, struct stat *st)
{
    memset(st, 0, sizeof *st);
    if ((flags & FUSE_READDIR_PLUS) &&
        fstatat(dirfd(od->dir), e->d_name, st, AT_SYMLINK_NOFOLLOW) == 0)
        return FUSE_FILL_DIR_PLUS;
    st->st_ino = e->d_ino;
    st->st_mode = (mode_t)DTTOIF(e->d_type);
    return 0;
}

static int sf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t offset,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct open_dir *od = dir_of(fi);
    if (offset != od->offset) {
        seekdir(od->dir, offset);
        od->pending = NULL;
        od->offset = offset;
        if (offset == 0)
            od->served = od->paid = 0; /* listed again from the start: paid again */
    }
    for (;;) {
        if (!od->pending) {
            errno = 0;
            od->pending = readdir(od->dir);
            if (!od->pending)
                return -errno;
        }
        pay_for_next_entry(od);
        struct stat st;
        enum fuse_fill_dir_flags fill_flags = describe(od, od->pending, flags, &st);
        off_t next = od->pending->d_off;
        if (fill(buf, od->pending->d_name, &st, next, fill_flags))
            return 0; /* the kernel's buffer is full: hand this entry out next time */
        od->pending = NULL;
        od->offset = next;
        od->served++;
    }
}

static int sf_releasedir(const char *path, struct fuse_file_info *fi)
{
    struct open_dir *od = dir_of(fi);
    closedir(od->dir);
    free(od);
    return 0;
}

static int sf_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    int fd = dirfd(dir_of(fi)->dir);
    return neg_errno(datasync ? fdatasync(fd) : fsync(fd));
}

static int sf_access(const char *path, int mask)
{
    return neg_errno(faccessat(state()->backing_fd, rel(path), mask, AT_SYMLINK_NOFOLLOW));
}

static int sf_fallocate(const char *path, int mode, off_t offset, off_t len,
                        struct fuse_file_info *fi)
{
    return neg_errno(fallocate(file_of(fi)->fd, mode, offset, len));
}

static off_t sf_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    off_t ret = lseek(file_of(fi)->fd, off, whence);
    return ret < 0 ? -errno : ret;
}

int passthrough_file_fd(const struct fuse_file_info *fi) { return file_of(fi)->fd; }

int passthrough_dir_fd(const struct fuse_file_info *fi) { return dirfd(dir_of(fi)->dir); }

static const struct fuse_operations slowfs_operations = {
    .init = sf_init,
    .getattr = sf_getattr,
    .readlink = sf_readlink,
    .mknod = sf_mknod,
    .mkdir = sf_mkdir,
    .unlink = sf_unlink,
    .rmdir = sf_rmdir,
    .symlink = sf_symlink,
    .rename = sf_rename,
    .link = sf_link,
    .chmod = sf_chmod,
    .chown = sf_chown,
    .truncate = sf_truncate,
    .utimens = sf_utimens,
    .open = sf_open,
    .create = sf_create,
    .read = sf_read,
    .write = sf_write,
    .statfs = sf_statfs,
    .release = sf_release,
    .fsync = sf_fsync,
    .setxattr = sf_setxattr,
    .getxattr = sf_getxattr,
    .listxattr = sf_listxattr,
    .removexattr = sf_removexattr,
    .opendir = sf_opendir,
    .readdir = sf_readdir,
    .releasedir = sf_releasedir,
    .fsyncdir = sf_fsyncdir,
    .access = sf_access,
    .fallocate = sf_fallocate,
    .lseek = sf_lseek,
};

const struct fuse_operations *slowfs_operations_for(bool count_flushes)
{
    static struct fuse_operations counting;
    if (!count_flushes)
        return &slowfs_operations;
    counting = slowfs_operations;
    counting.flush = sf_flush;
    return &counting;
}
