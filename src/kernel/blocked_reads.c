/* See blocked_reads.h. */
#include "kernel/blocked_reads.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kernel/group_fds.h"
#include "kernel/kfile.h"

/* /proc/PID/task/TID/syscall holds "NR ARG1 ... ARG6 SP PC" for a thread blocked in a system
 * call, "running" for one on a CPU and "-1 SP PC" for one blocked outside any (a page fault). */
static bool is_read_call(long nr)
{
    return nr == SYS_read || nr == SYS_pread64 || nr == SYS_readv || nr == SYS_preadv ||
           nr == SYS_preadv2;
}

/* The position of PID's descriptor FD; 0 if unknown. */
static uint64_t fd_position(pid_t pid, int fd)
{
    uint64_t pos;
    unsigned flags;
    return specx_fd_info(pid, fd, &pos, &flags) ? pos : 0;
}

bool specx_thread_traced(pid_t pid, pid_t tid)
{
    char path[64], text[2048];
    uint64_t tracer = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", pid, tid);
    return specx_kfile_read(path, text, sizeof text) > 0 &&
           specx_kfile_key_u64(text, "TracerPid:", &tracer) && tracer != 0;
}

bool specx_thread_signal_pending(pid_t tid)
{
    char path[64], text[2048];
    unsigned long own = 0, shared = 0;
    snprintf(path, sizeof path, "/proc/%d/status", tid);
    if (specx_kfile_read(path, text, sizeof text) <= 0)
        return true;
    const char *p = strstr(text, "SigPnd:"), *q = strstr(text, "ShdPnd:"); /* in hex */
    if (p)
        own = strtoul(p + 7, NULL, 16);
    if (q)
        shared = strtoul(q + 7, NULL, 16);
    return own || shared || !p || !q;
}

char specx_thread_state(pid_t pid, pid_t tid)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
    if (specx_kfile_read(path, text, sizeof text) <= 0)
        return 0;
    const char *p = strrchr(text, ')'); /* the name may hold anything but ends there */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Whether TID is blocked in a read-family call on a regular file; fills R if so. */
static bool blocked_in_read(pid_t pid, pid_t tid, struct specx_blocked_read *r)
{
    char path[64], text[256];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
    if (specx_kfile_read(path, text, sizeof text) <= 0)
        return false;
    char *p;
    long nr = strtol(text, &p, 10);
    if (p == text || !is_read_call(nr))
        return false;
    unsigned long long arg[4];
    for (int i = 0; i < 4; i++)
        arg[i] = strtoull(p, &p, 16);
    if (arg[0] > INT32_MAX)
        return false;
    int fd = (int)arg[0];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
        return false;
    bool at_offset = nr == SYS_pread64 || nr == SYS_preadv || nr == SYS_preadv2;
    *r = (struct specx_blocked_read){ .tid = tid, .fd = fd, .ino = st.st_ino,
                                      .off = at_offset ? arg[3] : fd_position(pid, fd) };
    return true;
}

int specx_blocked_reads(pid_t pid, struct specx_blocked_read *out, size_t max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *tasks = opendir(path);
    if (!tasks)
        return -1;
    size_t n = 0;
    for (struct dirent *d; n < max && (d = readdir(tasks));) {
        pid_t tid = (pid_t)atoi(d->d_name);
        if (tid <= 0)
            continue;
        if (blocked_in_read(pid, tid, &out[n]))
            n++;
    }
    closedir(tasks);
    return (int)n;
}
