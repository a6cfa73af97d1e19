/* The read family, interposed (Fraser & Chang 2003 §4.1: the speculative process is created
 * when the program is about to block on a read). Each wrapper funnels into readpath.c; the
 * iovec form describes the destination buffers for every variant. */

/* Both pread and pread64 (and preadv, preadv2) are defined here: without this, the build's
 * large-file default would rename the first of each pair into the second. On 64-bit Linux
 * both take the same 64-bit off_t. */
#undef _FILE_OFFSET_BITS
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "run/runtime/entry/readpath.h"
#include "run/runtime/entry/real.h"
#include "run/runtime/core/runtime.h"

/* preadv2's RWF_NOWAIT never blocks, so it is never a stall. */
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    struct iovec iov = { buf, n };
    SPECX_READ_WRAPPER(fd, &iov, 1, -1, REAL(read)(fd, buf, n));
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    struct iovec iov = { buf, n <= buflen ? n : 0 }; /* let the real one report overflow */
    SPECX_READ_WRAPPER(fd, &iov, 1, -1, REAL(read_chk)(fd, buf, n, buflen));
}

EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    struct iovec iov = { buf, n };
    SPECX_READ_WRAPPER(fd, &iov, 1, SPECX_EXPLICIT(off), REAL(pread)(fd, buf, n, off));
}

EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
    struct iovec iov = { buf, n };
    SPECX_READ_WRAPPER(fd, &iov, 1, SPECX_EXPLICIT(off), REAL(pread64)(fd, buf, n, off));
}

EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    struct iovec iov = { buf, n <= buflen ? n : 0 };
    SPECX_READ_WRAPPER(fd, &iov, 1, SPECX_EXPLICIT(off),
                       REAL(pread_chk)(fd, buf, n, off, buflen));
}

EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    struct iovec iov = { buf, n <= buflen ? n : 0 };
    SPECX_READ_WRAPPER(fd, &iov, 1, SPECX_EXPLICIT(off),
                       REAL(pread64_chk)(fd, buf, n, off, buflen));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    SPECX_READ_WRAPPER(fd, iov, iovcnt, -1, REAL(readv)(fd, iov, iovcnt));
}

EXPORT ssize_t preadv(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    SPECX_READ_WRAPPER(fd, iov, iovcnt, SPECX_EXPLICIT(off),
                       REAL(preadv)(fd, iov, iovcnt, off));
}

EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
    SPECX_READ_WRAPPER(fd, iov, iovcnt, SPECX_EXPLICIT(off),
                       REAL(preadv64)(fd, iov, iovcnt, off));
}

/* preadv2 with offset -1 reads at the file offset, like readv; below -1 it is invalid. */
EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
    if (flags & RWF_NOWAIT)
        return REAL(preadv2)(fd, iov, iovcnt, off, flags);
    SPECX_READ_WRAPPER(fd, iov, iovcnt, off,
                       REAL(preadv2)(fd, iov, iovcnt, off, flags));
}

EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
    if (flags & RWF_NOWAIT)
        return REAL(preadv64v2)(fd, iov, iovcnt, off, flags);
    SPECX_READ_WRAPPER(fd, iov, iovcnt, off,
                       REAL(preadv64v2)(fd, iov, iovcnt, off, flags));
}

/* §4.1.1 "alter the call so that it is safe": the speculative copy's output to stdout and
 * stderr vanishes but reports success, so the copy runs on as the program would. */
EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    if (specx.role == SPECX_ROLE_SPEC && (fd == STDOUT_FILENO || fd == STDERR_FILENO))
        return (ssize_t)n;
    return REAL(write)(fd, buf, n);
}

/* Readahead advice the program gives a descriptor is its own: from then on the runtime no
 * longer switches that descriptor between RANDOM and NORMAL (readpath.c). */
EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice)
{
    specx_note_program_advice(fd, advice);
    return REAL(posix_fadvise)(fd, off, len, advice);
}

EXPORT int posix_fadvise64(int fd, off_t off, off_t len, int advice)
{
    specx_note_program_advice(fd, advice);
    return REAL(posix_fadvise64)(fd, off, len, advice);
}
