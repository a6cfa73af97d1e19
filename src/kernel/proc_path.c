/* See proc_path.h. */
#include "kernel/proc_path.h"

#include <string.h>

/* Appends V in BASE (10 or 16, lowercase) at P; returns the end. */
static char *append_number(char *p, unsigned long v, unsigned int base)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    while (n)
        *p++ = digits[--n];
    return p;
}

void specx_proc_fd_path(char buf[SPECX_PROC_FD_PATH_MAX], int fd)
{
    static const char prefix[] = "/proc/self/fd/";
    memcpy(buf, prefix, sizeof prefix - 1);
    *append_number(buf + sizeof prefix - 1, (unsigned long)fd, 10) = '\0';
}

void specx_proc_map_files_path(char buf[SPECX_PROC_MAP_FILES_PATH_MAX], unsigned long start,
                               unsigned long end)
{
    static const char prefix[] = "/proc/self/map_files/";
    memcpy(buf, prefix, sizeof prefix - 1);
    char *p = append_number(buf + sizeof prefix - 1, start, 16);
    *p++ = '-';
    *append_number(p, end, 16) = '\0';
}

void specx_proc_pid_path(char buf[SPECX_PROC_PID_PATH_MAX], int pid, const char *name)
{
    static const char prefix[] = "/proc/", self[] = "self";
    memcpy(buf, prefix, sizeof prefix - 1);
    char *p = buf + sizeof prefix - 1;
    if (pid) {
        p = append_number(p, (unsigned long)pid, 10);
    } else {
        memcpy(p, self, sizeof self - 1);
        p += sizeof self - 1;
    }
    *p++ = '/';
    size_t n = strlen(name);
    if (n > 12)
        n = 12;
    memcpy(p, name, n);
    p[n] = '\0';
}

void specx_proc_task_fd_path(char buf[SPECX_PROC_TASK_FD_PATH_MAX], int pid, int tid,
                             const char *dir, int fd)
{
    static const char prefix[] = "/proc/", task[] = "/task/";
    char *p = buf;
    memcpy(p, prefix, sizeof prefix - 1);
    p = append_number(p + sizeof prefix - 1, (unsigned long)pid, 10);
    memcpy(p, task, sizeof task - 1);
    p = append_number(p + sizeof task - 1, (unsigned long)tid, 10);
    *p++ = '/';
    size_t n = strlen(dir);
    if (n > 6)
        n = 6;
    memcpy(p, dir, n);
    p += n;
    if (fd >= 0) {
        *p++ = '/';
        p = append_number(p, (unsigned long)fd, 10);
    }
    *p = '\0';
}
