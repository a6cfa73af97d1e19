/* The system calls behind the libc names that libspecx.so interposes (mmap, madvise, pread,
 * write, posix_fadvise, and syscall and prctl themselves).
 *
 * Inside the preload runtime those names are the runtime's own entry points: a mapping the
 * runtime made through mmap() would be taken for one of the program's, a prefetch made through
 * posix_fadvise() for the program's own advice, and a read of its own for a stall. So code
 * below the runtime's entry layer (src/run/runtime/entry) and the kernel layer, which is linked
 * into the preload too, reach the kernel through these; the layering test checks that no such code
 * refers to an interposed name. In the commands they are the plain system calls. */
#ifndef SPECX_KERNEL_RAW_H
#define SPECX_KERNEL_RAW_H

#include <stddef.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* syscall(2) without libc: the program's calls of syscall() and prctl() are watched by the
 * runtime (a seccomp filter installed through them makes it stand aside), so its own system
 * calls go to the kernel directly. Returns -1 with errno set on failure, as syscall(2). */
long specx_raw_syscall(long nr, ...);

/* MAP_FAILED ((void *)-1) on failure, errno set, as mmap(2). */
static inline void *specx_raw_mmap(void *addr, size_t len, int prot, int flags, int fd,
                                   off_t off)
{
    return (void *)specx_raw_syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int specx_raw_madvise(void *addr, size_t len, int advice)
{
    return (int)specx_raw_syscall(SYS_madvise, addr, len, advice);
}

/* 0, or -1 with errno set (posix_fadvise returns the error number instead). */
static inline int specx_raw_fadvise(int fd, off_t off, off_t len, int advice)
{
    return (int)specx_raw_syscall(SYS_fadvise64, fd, off, len, advice);
}

static inline ssize_t specx_raw_pread(int fd, void *buf, size_t len, off_t off)
{
    return (ssize_t)specx_raw_syscall(SYS_pread64, fd, buf, len, off);
}

static inline ssize_t specx_raw_write(int fd, const void *buf, size_t len)
{
    return (ssize_t)specx_raw_syscall(SYS_write, fd, buf, len);
}

#endif
