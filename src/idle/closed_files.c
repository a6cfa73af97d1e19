/* See closed_files.h. */
#include "idle/closed_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "kernel/proc_path.h"

/* Closes remembered between two write-backs; older ones are left to the flushers (they have
 * had the longest to write them). A handle of ext4 or xfs takes 8-20 bytes. */
#define RING_FILES 4096
#define HANDLE_BYTES 64

struct idle_closed_mount {
    __kernel_fsid_t fsid;
    char *dir;                        /* where it is mounted in the background's namespace */
};

struct idle_closed_file {
    __kernel_fsid_t fsid;
    _Alignas(struct file_handle) unsigned char handle[sizeof(struct file_handle) + HANDLE_BYTES];
};

/* File systems whose files have no data to write back (or none of the background's own). */
static bool holds_no_written_data(const char *type)
{
    static const char *const none[] = {
        "proc", "sysfs", "devtmpfs", "devpts", "tmpfs", "ramfs", "cgroup", "cgroup2",
        "mqueue", "debugfs", "tracefs", "securityfs", "pstore", "bpf", "configfs",
        "fusectl", "hugetlbfs", "autofs", "nsfs", "binfmt_misc", "efivarfs", "rpc_pipefs",
        "selinuxfs",
    };
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        if (strcmp(type, none[i]) == 0)
            return true;
    return false;
}

static bool same_fsid(__kernel_fsid_t a, __kernel_fsid_t b)
{
    return a.val[0] == b.val[0] && a.val[1] == b.val[1];
}

static struct idle_closed_mount *mount_of(const struct idle_closed *c, __kernel_fsid_t fsid)
{
    for (size_t i = 0; i < c->nmounts; i++)
        if (same_fsid(c->mounts[i].fsid, fsid))
            return &c->mounts[i];
    return NULL;
}

/* DIR as the background sees it, from our side: through /proc/PID/root. False if too long. */
static bool inside(const struct idle_closed *c, const char *dir, char path[PATH_MAX])
{
    int n = snprintf(path, PATH_MAX, "/proc/%d/root%s", (int)c->pid, dir);
    return n > 0 && n < PATH_MAX;
}

/* Adds fanotify group FD to those polled through C->fd. */
static bool poll_group(struct idle_closed *c, int fd)
{
    struct epoll_event e = { .events = EPOLLIN, .data.fd = fd };
    return epoll_ctl(c->fd, EPOLL_CTL_ADD, fd, &e) == 0;
}

/* Marks the mount at DIR of the background's namespace and remembers its file system (once:
 * a handle opens through any mount of it). False if it cannot be watched (a file system
 * without file handles): its files are left to the flushers. */
static bool watch_mount(struct idle_closed *c, const char *dir)
{
    char path[PATH_MAX];
    struct statfs st;
    if (!inside(c, dir, path) || statfs(path, &st) < 0 ||
        fanotify_mark(c->handles_fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_CLOSE_WRITE, AT_FDCWD,
                      path) < 0)
        return false;
    __kernel_fsid_t fsid;
    memcpy(&fsid, &st.f_fsid, sizeof fsid);
    if (mount_of(c, fsid))
        return true;
    struct idle_closed_mount *grown = realloc(c->mounts, (c->nmounts + 1) * sizeof *grown);
    char *copy = strdup(dir);
    if (grown)
        c->mounts = grown;
    if (!grown || !copy) {
        free(copy);
        return false;
    }
    c->mounts[c->nmounts++] = (struct idle_closed_mount){ fsid, copy };
    return true;
}

/* Marks the overlay of an isolated directory at DIR, whose events come with a descriptor
 * (opened read-only, without blocking on a FIFO). */
static void watch_isolated(struct idle_closed *c, const char *dir)
{
    char path[PATH_MAX];
    if (c->isolated_fd < 0) {
        c->isolated_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK,
                                       O_RDONLY | O_NONBLOCK | O_LARGEFILE | O_CLOEXEC);
        if (c->isolated_fd < 0 || !poll_group(c, c->isolated_fd))
            return;
    }
    if (inside(c, dir, path))
        fanotify_mark(c->isolated_fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_CLOSE_WRITE, AT_FDCWD,
                      path);
}

/* Whether the mountinfo LINE says its mount is shared: a "shared:N" among the optional
 * fields, which end at " - " (a mount point's spaces are escaped as \040). */
static bool mount_is_shared(const char *line)
{
    const char *end = strstr(line, " - ");
    const char *tag = strstr(line, " shared:");
    return end && tag && tag < end;
}

bool idle_closed_mounts_followed(void)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return false;
    char *line = NULL;
    size_t size = 0;
    bool all = true;
    while (all && getline(&line, &size, f) > 0)
        all = mount_is_shared(line);
    free(line);
    fclose(f);
    return all;
}

/* True if PID's mount namespace is another than ours. */
static bool has_own_namespace(pid_t pid)
{
    char path[64];
    struct stat theirs, ours;
    snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
    return stat(path, &theirs) == 0 && stat("/proc/self/ns/mnt", &ours) == 0 &&
           (theirs.st_ino != ours.st_ino || theirs.st_dev != ours.st_dev);
}

int idle_closed_watch(struct idle_closed *c, pid_t pid, const struct idle_isolation *isolation)
{
    *c = (struct idle_closed)IDLE_CLOSED_NONE;
    c->pid = pid;
    c->isolation = isolation;
    if (!has_own_namespace(pid)) {
        c->unwatched = idle_closed_mounts_followed()
                           ? "the command has no mount namespace of its own"
                           : "the machine's mounts are not shared, so the command stays in them";
        errno = EINVAL;
        return -1;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mounts", (int)pid);
    FILE *mounts = setmntent(path, "re");
    c->files = malloc(RING_FILES * sizeof *c->files);
    c->fd = epoll_create1(EPOLL_CLOEXEC);
    c->handles_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID,
                                  O_RDONLY | O_LARGEFILE | O_CLOEXEC);
    if (!mounts || !c->files || c->fd < 0 || c->handles_fd < 0 || !poll_group(c, c->handles_fd)) {
        int err = errno;
        if (mounts)
            endmntent(mounts);
        idle_closed_stop(c);
        c->unwatched = "fanotify cannot watch them here";
        errno = err;
        return -1;
    }
    struct mntent m;
    char line[2 * PATH_MAX];
    while (getmntent_r(mounts, &m, line, sizeof line))
        if (!holds_no_written_data(m.mnt_type) && !watch_mount(c, m.mnt_dir) && isolation &&
            strcmp(m.mnt_type, "overlay") == 0)
            watch_isolated(c, m.mnt_dir);
    endmntent(mounts);
    if (c->nmounts == 0) {
        idle_closed_stop(c);
        c->unwatched = "no file system here gives file handles";
        errno = EOPNOTSUPP;
        return -1;
    }
    return 0;
}

int idle_closed_fd(const struct idle_closed *c)
{
    return c->fd;
}

/* The ring's next free place; in a full ring the oldest file's, which is left to the
 * flushers (counted as dropped). A place is taken by counting it in (c->nfiles++) once
 * filled. */
static struct idle_closed_file *free_place(struct idle_closed *c)
{
    if (c->nfiles == RING_FILES) {
        c->first = (c->first + 1) % RING_FILES;
        c->nfiles--;
        c->dropped++;
    }
    return &c->files[(c->first + c->nfiles) % RING_FILES];
}

/* Adds the file an event's handle names to the ring. */
static void remember(struct idle_closed *c, const struct fanotify_event_info_fid *fid)
{
    const struct file_handle *h = (const void *)fid->handle;
    if (h->handle_bytes > HANDLE_BYTES) {
        c->dropped++;
        return;
    }
    struct idle_closed_file *f = free_place(c);
    f->fsid = fid->fsid;
    memcpy(f->handle, h, sizeof *h + h->handle_bytes);
    c->nfiles++;
}

/* Adds the copy in the upper layer of the isolated file an event's descriptor FD is open on. */
static void remember_isolated(struct idle_closed *c, int fd)
{
    char link[SPECX_PROC_FD_PATH_MAX], upper[PATH_MAX];
    struct statfs st;
    int mount_id;
    specx_proc_fd_path(link, fd);
    if (!idle_isolation_upper_path(c->isolation, link, upper, sizeof upper) ||
        statfs(upper, &st) < 0)
        return;
    struct idle_closed_file *f = free_place(c);
    struct file_handle *h = (struct file_handle *)f->handle;
    h->handle_bytes = HANDLE_BYTES;
    if (name_to_handle_at(AT_FDCWD, upper, h, &mount_id, 0) < 0) {
        c->dropped++;
        return;
    }
    memcpy(&f->fsid, &st.f_fsid, sizeof f->fsid);
    c->nfiles++;
}

static void take_event(struct idle_closed *c, const struct fanotify_event_metadata *m)
{
    if (m->mask & FAN_Q_OVERFLOW) {
        c->dropped++;
        return;
    }
    if (m->fd >= 0) {
        remember_isolated(c, m->fd);
        close(m->fd);
        return;
    }
    const char *info = (const char *)m + m->metadata_len, *end = (const char *)m + m->event_len;
    while (info + sizeof(struct fanotify_event_info_header) <= end) {
        const struct fanotify_event_info_header *hdr = (const void *)info;
        if (hdr->len == 0)
            return;
        if (hdr->info_type == FAN_EVENT_INFO_TYPE_FID)
            remember(c, (const void *)info);
        info += hdr->len;
    }
}

static void collect_from(struct idle_closed *c, int fd)
{
    char events[16384] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
    ssize_t len;
    while (fd >= 0 && (len = read(fd, events, sizeof events)) > 0)
        for (struct fanotify_event_metadata *m = (void *)events; FAN_EVENT_OK(m, len);
             m = FAN_EVENT_NEXT(m, len))
            take_event(c, m);
}

void idle_closed_collect(struct idle_closed *c)
{
    collect_from(c, c->handles_fd);
    collect_from(c, c->isolated_fd);
}

/* An O_PATH descriptor of the file F names (nothing is opened for reading or writing: the
 * caller decides what it is), or -1 if it is gone. */
static int open_file(const struct idle_closed *c, struct idle_closed_file *f)
{
    const struct idle_closed_mount *m = mount_of(c, f->fsid);
    char path[PATH_MAX];
    if (!m || !inside(c, m->dir, path))
        return -1;
    /* The mount's descriptor only names the file system: it is closed at once, so that no
     * mount stays busy for someone's umount. */
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return -1;
    int fd = open_by_handle_at(dir, (struct file_handle *)f->handle, O_PATH | O_CLOEXEC);
    close(dir);
    return fd;
}

unsigned idle_closed_each(struct idle_closed *c, bool (*visit)(const char *path, void *arg),
                          void *arg)
{
    unsigned taken = 0;
    for (; c->nfiles; c->nfiles--, c->first = (c->first + 1) % RING_FILES) {
        int fd = open_file(c, &c->files[c->first]);
        if (fd < 0)
            continue;
        char path[SPECX_PROC_FD_PATH_MAX];
        specx_proc_fd_path(path, fd);
        taken += visit(path, arg);
        close(fd);
    }
    return taken;
}

void idle_closed_stop(struct idle_closed *c)
{
    const int fds[] = { c->fd, c->handles_fd, c->isolated_fd };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    for (size_t i = 0; i < c->nmounts; i++)
        free(c->mounts[i].dir);
    free(c->mounts);
    free(c->files);
    *c = (struct idle_closed)IDLE_CLOSED_NONE;
}
