#include "kernel/process_start.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "kernel/raw.h"

bool specx_proc_stat_start_time(const char *text, uint64_t *start)
{
    const char *p = strrchr(text, ')');
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (!p)
        return false;
    char *end;
    unsigned long long value = strtoull(p + 1, &end, 10);
    if (end == p + 1)
        return false;
    *start = value;
    return true;
}

uint64_t specx_process_start_time(pid_t pid)
{
    char path[32], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = (int)specx_raw_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = specx_raw_syscall(SYS_read, fd, buf, sizeof buf - 1);
    specx_raw_syscall(SYS_close, fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    uint64_t start;
    return specx_proc_stat_start_time(buf, &start) ? start : 0;
}
