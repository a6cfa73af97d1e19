/* The copy's reads (Fraser & Chang 2003 §4.1.2): in the speculative process every read of a
 * regular file is emulated here. Data in memory and complete is copied; data that is not
 * becomes a non-blocking prefetch (or, for a copy on probation, a prediction: policy/trust.h),
 * its part of the buffer is left as it was, the file offset advances, and the copy goes on
 * without waiting. */
#ifndef SPECX_COPY_READ_H
#define SPECX_COPY_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Speculative side: reads into IOV as the program's read would, at OFF (< 0: at the file
 * offset, which moves on). Returns the bytes "read", or -1. */
ssize_t specx_copy_read(int fd, const struct iovec *iov, int iovcnt, off_t off);

/* Speculative side: the read that created this copy, [off, off+len): the program issued it;
 * the rest of its chunk, if it continues a run, is the copy's to prefetch. With at_offset the
 * file offset moves past it. Returns len. */
ssize_t specx_copy_read_stalled(int fd, uint64_t off, uint64_t len, bool at_offset);

#endif
