/* See kfile.h. */
#include "kernel/kfile.h"
#include "kernel/raw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int specx_kfile_open(const char *path, int flags)
{
    return (int)specx_raw_syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0);
}

void specx_kfile_close(int fd)
{
    int saved = errno;
    specx_raw_syscall(SYS_close, fd);
    errno = saved;
}

long specx_kfile_read(const char *path, char *buf, size_t size)
{
    if (size == 0) {
        errno = EINVAL;
        return -1;
    }
    int fd = specx_kfile_open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    size_t len = 0;
    for (;;) {
        long n = specx_raw_syscall(SYS_read, fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            specx_kfile_close(fd);
            return -1;
        }
        len += (size_t)n;
        if (n == 0 || len == size - 1)
            break;
    }
    specx_kfile_close(fd);
    buf[len] = '\0';
    return (long)len;
}

int specx_kfile_write(const char *path, const char *text)
{
    int fd = specx_kfile_open(path, O_WRONLY);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    long n;
    do
        n = specx_raw_syscall(SYS_write, fd, text, len);
    while (n < 0 && errno == EINTR);
    specx_kfile_close(fd);
    if (n < 0)
        return -1;
    if ((size_t)n != len) {
        errno = EIO;
        return -1;
    }
    return 0;
}

bool specx_kfile_parse_u64(const char *text, uint64_t *out)
{
    if (strncmp(text, "max", 3) == 0) {
        *out = UINT64_MAX;
        return true;
    }
    if (*text < '0' || *text > '9')
        return false;
    uint64_t v = 0;
    for (; *text >= '0' && *text <= '9'; text++)
        v = v * 10 + (uint64_t)(*text - '0');
    *out = v;
    return true;
}

/* The value of KEY's line in TEXT, or NULL. */
static const char *key_value(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *line = text; *line;) {
        if (strncmp(line, key, klen) == 0 && (line[klen] == ' ' || line[klen] == '\t'))
            return line + klen + strspn(line + klen, " \t");
        const char *end = strchr(line, '\n');
        if (!end)
            break;
        line = end + 1;
    }
    return NULL;
}

bool specx_kfile_key_u64(const char *text, const char *key, uint64_t *out)
{
    const char *value = key_value(text, key);
    return value && specx_kfile_parse_u64(value, out);
}

bool specx_kfile_key_hex(const char *text, const char *key, uint64_t *out)
{
    const char *value = key_value(text, key);
    char *end;
    if (!value)
        return false;
    *out = strtoull(value, &end, 16);
    return end != value;
}

bool specx_kfile_read_u64(const char *path, uint64_t *out)
{
    char value[64];
    return specx_kfile_read(path, value, sizeof value) > 0 && specx_kfile_parse_u64(value, out);
}
