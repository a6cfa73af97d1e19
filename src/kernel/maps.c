/* /proc/self/maps with system calls only (see maps.h). */
#include "kernel/maps.h"
#include "kernel/proc_path.h"
#include "kernel/raw.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static unsigned long parse_hex(const char **p)
{
    unsigned long v = 0;
    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (unsigned long)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (unsigned long)(c - 'a' + 10);
        else
            return v;
    }
}

static unsigned long parse_dec(const char **p)
{
    unsigned long v = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++)
        v = v * 10 + (unsigned long)(**p - '0');
    return v;
}

char *specx_maps_parse_line(char *line, struct specx_mapping *m)
{
    char *eol = strchr(line, '\n');
    if (eol)
        *eol = '\0';
    const char *p = line;
    m->start = parse_hex(&p);
    p++;
    m->end = parse_hex(&p);
    p++;
    m->prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
              (p[2] == 'x' ? PROT_EXEC : 0);
    m->shared = p[3] == 's';
    p += 5;
    m->offset = parse_hex(&p);
    p++;
    unsigned int maj = (unsigned int)parse_hex(&p);
    p++;
    unsigned int min = (unsigned int)parse_hex(&p);
    m->dev = makedev(maj, min);
    p++;
    m->inode = parse_dec(&p);
    while (*p == ' ')
        p++;
    m->path = p;
    return eol ? eol + 1 : line + strlen(line);
}

long specx_maps_read(char **buf, size_t *size)
{
    return specx_maps_read_of(0, buf, size);
}

long specx_maps_read_of(int pid, char **buf, size_t *size)
{
    /* Raw calls throughout: inside libspecx.so open, mmap and read are the runtime's own
     * wrappers (src/kernel/kfile.h). */
    char path[SPECX_PROC_PID_PATH_MAX];
    specx_proc_pid_path(path, pid, "maps");
    int fd = (int)specx_raw_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    *size = 1 << 18;
    *buf = (char *)specx_raw_syscall(SYS_mmap, NULL, *size, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t len = 0;
    long err = *buf == MAP_FAILED ? -ENOMEM : 0;
    while (err == 0) {
        if (len + 1 == *size) {
            char *bigger = (char *)specx_raw_syscall(SYS_mremap, *buf, *size, *size * 2,
                                                     MREMAP_MAYMOVE);
            if (bigger == MAP_FAILED) {
                err = -ENOMEM;
                break;
            }
            *buf = bigger;
            *size *= 2;
        }
        /* In the speculative process the runtime's read() emulates reads of regular files and
         * clamps them to st_size, 0 for /proc files: the maps would read as empty. */
        ssize_t n = specx_raw_syscall(SYS_read, fd, *buf + len, *size - len - 1);
        if (n < 0)
            err = -errno;
        else if (n == 0)
            break;
        len += (size_t)n;
    }
    specx_raw_syscall(SYS_close, fd);
    if (err != 0) {
        if (*buf != MAP_FAILED)
            specx_raw_syscall(SYS_munmap, *buf, *size);
        return err;
    }
    (*buf)[len] = '\0';
    return (long)len;
}
