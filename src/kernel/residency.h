/* Is a file range in the page cache? The question the normal process asks before every read
 * (a "no" is an I/O stall, Fraser & Chang 2003 §4.1) and the speculative process asks to
 * decide what to copy and what to prefetch (§4.1.2). */
#ifndef SPECX_RESIDENCY_H
#define SPECX_RESIDENCY_H

#include <stdbool.h>
#include <stdint.h>

#define SPECX_PAGE_SIZE 4096u

/* Number of pages touched by [off, off + len). */
static inline uint64_t specx_pages_spanned(uint64_t off, uint64_t len)
{
    if (len == 0)
        return 0;
    return (off + len - 1) / SPECX_PAGE_SIZE - off / SPECX_PAGE_SIZE + 1;
}

/* Length of [off, off + len) once clamped to a file of size bytes (0 at or past EOF). */
static inline uint64_t specx_clamp_to_eof(uint64_t off, uint64_t len, uint64_t size)
{
    if (off >= size)
        return 0;
    return len < size - off ? len : size - off;
}

/* Counts the pages of [off, off + len) of regular file fd that are in the page cache,
 * including pages whose read is still in flight (so "absent" means nobody asked for them).
 * Uses cachestat(2); on kernels without it, mincore(2) over a temporary mapping (which only
 * sees completed pages). Returns the count, or -1 on error (not a stall). Ask about regular
 * files only: cachestat answers 0 pages, not an error, for a pipe or a terminal (measured
 * on Linux 6.18), which would look like a stall. */
int64_t specx_cached_pages(int fd, uint64_t off, uint64_t len);

/* Marks in vec (one byte per page of [off, off + len), bit 0) the pages whose data is in
 * memory and complete, not merely being read: mincore(2) over a temporary private mapping.
 * Returns 0, or -1 if the range cannot be mapped. */
int specx_uptodate_pages(int fd, uint64_t off, uint64_t len, unsigned char *vec);

/* A range of an open file. */
struct specx_file_range {
    int fd;
    uint64_t off, len;
};

/* Whether the data of R has arrived (its first 64 pages at most): complete pages, as
 * specx_uptodate_pages sees them, not pages in flight as specx_cached_pages counts them. A
 * read of it would no longer wait. */
bool specx_range_arrived(const struct specx_file_range *r);

/* True once cachestat(2) was found missing and mincore is used instead. */
bool specx_residency_fallback(void);

#endif
