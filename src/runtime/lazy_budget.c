/* How much memory a fast-reforked copy may keep of what it pulled from the program
 * (lazy_memory.h). Pulled pages are the copy's own, not shared with the program, and the copy
 * is charged to the program's memory cgroup: in a cgroup sized for the program alone (the
 * out-of-core benchmarks run in 64 MiB), a fixed 64 MiB would push the program's own pages
 * out. So the copy keeps at most an eighth of the cgroup's limit, and never more than 64 MiB. */
#include "lazy_memory.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BUDGET_MAX (64ul << 20)
#define BUDGET_SHARE 8u
#define BUDGET_MIN (1ul << 20)

/* Reads a small file whole with raw system calls (the runtime's own read wrapper would treat
 * it as the program's read). Returns the length or -1. */
static long read_small(const char *path, char *buf, size_t size)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long n = syscall(SYS_read, fd, buf, size - 1);
    close(fd);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

const char *specx_memory_cgroup(char *buf, bool *v1)
{
    const char *v2_path = NULL;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *controllers = strchr(line, ':');
        char *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path)
            continue;
        *path++ = '\0';
        controllers++;
        if (*controllers == '\0')
            v2_path = path;
        for (char *c = controllers, *end; c; c = end ? end + 1 : NULL) {
            end = strchr(c, ',');
            if ((end ? (size_t)(end - c) : strlen(c)) == 6 && strncmp(c, "memory", 6) == 0) {
                *v1 = true;
                return path;
            }
        }
    }
    *v1 = false;
    return v2_path;
}

/* The limit of this process's own memory cgroup in bytes, or 0 (none, "max", unknown). */
static unsigned long cgroup_limit(void)
{
    char groups[4096], path[4096 + 64], value[64];
    bool v1;
    const char *group;
    if (read_small("/proc/self/cgroup", groups, sizeof groups) <= 0 ||
        !(group = specx_memory_cgroup(groups, &v1)))
        return 0;
    strcpy(path, v1 ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup");
    strncat(path, group, 4096);
    strcat(path, v1 ? "/memory.limit_in_bytes" : "/memory.max");
    if (read_small(path, value, sizeof value) <= 0)
        return 0;
    char *end;
    unsigned long long limit = strtoull(value, &end, 10);
    return end == value ? 0 : (unsigned long)limit;
}

unsigned long specx_lazy_budget_of(unsigned long limit)
{
    unsigned long budget = limit && limit / BUDGET_SHARE < BUDGET_MAX ? limit / BUDGET_SHARE
                                                                      : BUDGET_MAX;
    return budget < BUDGET_MIN ? BUDGET_MIN : budget;
}

unsigned long specx_lazy_budget(void)
{
    static unsigned long budget;
    if (budget == 0)
        budget = specx_lazy_budget_of(cgroup_limit());
    return budget;
}
