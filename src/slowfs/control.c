/* The client side of --stats and --unmount. The statistics travel as an extended attribute
 * of the mount root (passthrough.h), which also tells a slowfs mount from anything else. */
#include "slowfs/control.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "slowfs/passthrough.h"
#include "common/util.h"
#include "slowfs/volatile.h"

/* Most a server's answer can be: the kernel's limit for an extended attribute. */
#define STATS_MAX 65536

/* Reads attribute name of the mount root into a malloc'd string; NULL with errno set if
 * that fails. */
static char *read_stats(const char *mountpoint, const char *name)
{
    char *buf = malloc(STATS_MAX + 1);
    if (!buf)
        return NULL;
    ssize_t n = getxattr(mountpoint, name, buf, STATS_MAX);
    if (n < 0) {
        int err = errno;
        free(buf);
        errno = err;
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static void report_not_slowfs(const char *mountpoint)
{
    if (errno == ENODATA || errno == ENOTSUP)
        specx_warn("'%s' is not a slowfs mount point", mountpoint);
    else
        specx_warn("cannot reach the slowfs at '%s': %s", mountpoint, strerror(errno));
}

int control_stats(const char *mountpoint, bool json)
{
    char *text = read_stats(mountpoint, json ? SLOWFS_STATS_XATTR : SLOWFS_TABLE_XATTR);
    if (!text) {
        report_not_slowfs(mountpoint);
        return 1;
    }
    fputs(text, stdout);
    free(text);
    return 0;
}

/* The server's pid, from the "pid" field of its statistics. */
static pid_t server_pid(const char *mountpoint)
{
    char *json = read_stats(mountpoint, SLOWFS_STATS_XATTR);
    if (!json)
        return -1;
    const char *field = strstr(json, "\"pid\": ");
    pid_t pid = field ? (pid_t)strtol(field + strlen("\"pid\": "), NULL, 10) : -1;
    free(json);
    return pid;
}

/* Waits until process pid has exited, for at most timeout_ms. */
static void wait_exit(pid_t pid, int timeout_ms)
{
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return; /* already gone */
    struct pollfd p = { .fd = fd, .events = POLLIN };
    poll(&p, 1, timeout_ms);
    close(fd);
}

int control_unmount(const char *mountpoint)
{
    pid_t pid = server_pid(mountpoint);
    if (pid <= 0 && errno == ENOTCONN) {
        /* The server died and left its mount behind: detach what remains. */
        if (umount2(mountpoint, MNT_DETACH) == 0)
            return 0;
    }
    if (pid <= 0) {
        report_not_slowfs(mountpoint);
        return 1;
    }
    if (umount2(mountpoint, 0) < 0) {
        if (errno == EBUSY)
            specx_warn("cannot unmount '%s': target is busy (files open or a process inside)",
                       mountpoint);
        else
            specx_warn("cannot unmount '%s': %s", mountpoint, strerror(errno));
        return 1;
    }
    wait_exit(pid, 10000);
    return 0;
}

int control_power_cut(const char *mountpoint)
{
    char *counters = read_stats(mountpoint, SLOWFS_POWER_XATTR);
    if (!counters) {
        if (errno == ENODATA || errno == ENOTSUP)
            specx_warn("'%s' is not a slowfs mount with --volatile-cache", mountpoint);
        else
            report_not_slowfs(mountpoint);
        return 1;
    }
    free(counters);
    if (setxattr(mountpoint, SLOWFS_POWER_CUT_XATTR, "1", 1, 0) < 0) {
        specx_warn("cannot cut the power of '%s': %s", mountpoint, strerror(errno));
        return 1;
    }
    return 0;
}
