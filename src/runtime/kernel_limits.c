/* See kernel_limits.h. */
#include "kernel_limits.h"

#include <fcntl.h>
#include <stdio.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Larger values mean "no limit" (cgroup v1 reports one just below 2^63). */
#define NO_LIMIT (1ull << 62)

/* Reads small file PATH into buf (NUL-terminated); returns its length or -1. A raw read:
 * inside libspecx.so read() is the runtime's wrapper, which in the speculative process
 * emulates reads of regular files and takes /proc and cgroup files for empty. */
static long read_small(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    long n = syscall(SYS_read, fd, buf, size - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* A decimal number at the start of s; 0 for none (cgroup v2 says "max"). */
static uint64_t parse_number(const char *s)
{
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uint64_t)(*s - '0');
    return v;
}

static uint64_t parse_limit(const char *s)
{
    uint64_t v = parse_number(s);
    return v >= NO_LIMIT ? 0 : v;
}

/* The limit file of GROUP under hierarchy ROOT, or 0. */
static uint64_t limit_under(const char *root, const char *group, const char *file)
{
    char path[PATH_MAX], value[64];
    if (strlen(root) + strlen(group) + strlen(file) + 2 > sizeof path)
        return 0;
    strcpy(path, root);
    strcat(path, group);
    strcat(path, "/");
    strcat(path, file);
    return read_small(path, value, sizeof value) > 0 ? parse_limit(value) : 0;
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

uint64_t specx_memcg_limit(void)
{
    char groups[4096];
    bool v1;
    const char *group;
    if (read_small("/proc/self/cgroup", groups, sizeof groups) <= 0 ||
        !(group = specx_memory_cgroup(groups, &v1)))
        return 0;
    if (v1)
        return limit_under("/sys/fs/cgroup/memory", group, "memory.limit_in_bytes");
    uint64_t limit = limit_under("/sys/fs/cgroup", group, "memory.max");
    return limit ? limit : limit_under("/sys/fs/cgroup/unified", group, "memory.max");
}

/* Reads the number in file PATH (formatted with the device's numbers); 0 if none. The
 * speculative process is a clone of a single-threaded program: snprintf holds no lock
 * another thread could have taken. */
static uint64_t number_in(const char *format, dev_t dev)
{
    char path[128], value[32];
    snprintf(path, sizeof path, format, major(dev), minor(dev));
    return read_small(path, value, sizeof value) > 0 ? parse_number(value) : 0;
}

uint64_t specx_readahead_bytes(dev_t dev)
{
    uint64_t kb = number_in("/sys/class/bdi/%u:%u/read_ahead_kb", dev);
    if (!kb)
        kb = number_in("/sys/dev/block/%u:%u/../queue/read_ahead_kb", dev);
    return kb * 1024;
}
