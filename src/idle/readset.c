/* See readset.h. */
#include "idle/readset.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "kernel/proc_path.h"

int idle_readset_watch(pid_t pid, char (*dirs)[4096], size_t n)
{
    /* An unlimited queue (root only): a lost event would make the read set incomplete. */
    int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE,
                           O_RDONLY | O_LARGEFILE | O_CLOEXEC);
    if (fd < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, dirs[i]);
        if (fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN | FAN_ONDIR, AT_FDCWD,
                          path) < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    return fd;
}

/* The path relative to one of DIRS of what descriptor FD is open on, and which; -1 if none. */
static long relative_to(int fd, char (*dirs)[4096], size_t n, const char **rel, char *buf,
                        size_t size)
{
    char link[SPECX_PROC_FD_PATH_MAX];
    specx_proc_fd_path(link, fd);
    ssize_t len = readlink(link, buf, size - 1);
    if (len < 0)
        return -1;
    buf[len] = '\0';
    return idle_path_within(buf, dirs, n, rel);
}

void idle_readset_drain(int fd, char (*dirs)[4096], size_t n, struct idle_pathset *opened,
                        bool *lost)
{
    char events[65536] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
    ssize_t len;
    while ((len = read(fd, events, sizeof events)) > 0) {
        struct fanotify_event_metadata *m = (struct fanotify_event_metadata *)events;
        for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
            if (m->mask & FAN_Q_OVERFLOW)
                *lost = true;
            if (m->fd < 0)
                continue;
            char path[PATH_MAX];
            const char *rel;
            long i = relative_to(m->fd, dirs, n, &rel, path, sizeof path);
            if (i >= 0 && idle_pathset_add(&opened[i], rel) < 0)
                *lost = true;
            close(m->fd);
        }
    }
}
