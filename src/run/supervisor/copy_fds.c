/* See copy_fds.h. */
#include "run/supervisor/copy_fds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel/group_fds.h"
#include "kernel/proc_path.h"
#include "run/runtime/sandbox/privatize.h"

/* An O_PATH descriptor of the file descriptor FD of process PID names, or -1. */
static int inherited_file(pid_t pid, int fd)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, fd);
    return open(path, O_PATH | O_CLOEXEC);
}

int copy_fds_capture(struct copy_fds *t, pid_t pid)
{
    for (int i = 0; i < COPY_FDS_MAX; i++)
        t->fd[i] = (struct copy_fd){ .kind = COPY_FD_NONE, .own = -1, .path = -1 };
    t->pid = pid;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fdinfo", pid);
    DIR *d = opendir(path);
    if (!d)
        return -errno;
    for (struct dirent *e; (e = readdir(d));) {
        int fd = atoi(e->d_name);
        uint64_t pos;
        unsigned flags;
        if (e->d_name[0] == '.' || fd < 0 || fd >= COPY_FDS_MAX ||
            !specx_fd_info(pid, fd, &pos, &flags))
            continue;
        bool readable = (flags & O_ACCMODE) != O_WRONLY && !(flags & O_PATH);
        t->fd[fd] = (struct copy_fd){ .kind = COPY_FD_UNREADABLE, .own = -1, .path = -1,
                                      .pos = pos, .read_end = pos };
        if (readable)
            t->fd[fd].path = inherited_file(pid, fd);
        if (t->fd[fd].path >= 0)
            t->fd[fd].kind = COPY_FD_INHERITED;
    }
    closedir(d);
    return 0;
}

/* A description of the supervisor's own of the file the O_PATH descriptor FILE names,
 * read-only and without access-time updates where the kernel allows it: reads through the
 * program's description would mark the file read (relatime) and move the description's
 * readahead state, and getdents its position. */
static int private_description(int file, int flags)
{
    char self[SPECX_PROC_FD_PATH_MAX];
    specx_proc_fd_path(self, file);
    return specx_open_noatime(self, O_RDONLY | O_CLOEXEC | flags);
}

/* Looks at an inherited descriptor: its type, and for a file or directory a description of
 * its own for the copy's reads. */
static void resolve_inherited(struct copy_fd *f)
{
    struct stat st;
    f->kind = COPY_FD_OTHER;
    if (fstat(f->path, &st) < 0) {
        f->kind = COPY_FD_UNREADABLE;
    } else if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        bool dir = S_ISDIR(st.st_mode);
        f->own = private_description(f->path, dir ? O_DIRECTORY : 0);
        if (f->own >= 0 && dir && f->pos && lseek(f->own, (off_t)f->pos, SEEK_SET) < 0) {
            close(f->own);
            f->own = -1;
        }
        f->kind = f->own < 0 ? COPY_FD_UNREADABLE : dir ? COPY_FD_DIR : COPY_FD_FILE;
    }
    close(f->path);
    f->path = -1;
}

struct copy_fd *copy_fds_resolve(struct copy_fds *t, int fd)
{
    if (fd < 0 || fd >= COPY_FDS_MAX || t->fd[fd].kind == COPY_FD_NONE)
        return NULL;
    struct copy_fd *f = &t->fd[fd];
    if (f->kind == COPY_FD_INHERITED)
        resolve_inherited(f);
    return f;
}

void copy_fds_opened(struct copy_fds *t, int fd, int own, enum copy_fd_kind kind)
{
    if (fd < 0 || fd >= COPY_FDS_MAX) {
        close(own);
        return;
    }
    copy_fds_closed(t, fd);
    t->fd[fd] = (struct copy_fd){ .kind = kind, .own = own, .path = -1, .in_copy = true };
}

void copy_fds_closed(struct copy_fds *t, int fd)
{
    if (fd < 0 || fd >= COPY_FDS_MAX)
        return;
    if (t->fd[fd].own >= 0)
        close(t->fd[fd].own);
    if (t->fd[fd].path >= 0)
        close(t->fd[fd].path);
    t->fd[fd] = (struct copy_fd){ .kind = COPY_FD_NONE, .own = -1, .path = -1 };
}

void copy_fds_clear(struct copy_fds *t)
{
    for (int i = 0; i < COPY_FDS_MAX; i++)
        copy_fds_closed(t, i);
}
