#include "kernel/residency.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel/raw.h"

/* cachestat(2) arrived in Linux 6.5; the system headers may predate it. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

struct cachestat_range {
    uint64_t off;
    uint64_t len;
};

struct cachestat {
    uint64_t nr_cache;
    uint64_t nr_dirty;
    uint64_t nr_writeback;
    uint64_t nr_evicted;
    uint64_t nr_recently_evicted;
};

static bool no_cachestat;

bool specx_residency_fallback(void) { return no_cachestat; }

/* mincore needs a mapping: map the range just long enough to ask. A private read-only
 * mapping that nobody writes shows the page cache's pages, and is allowed in the sandbox. */
int specx_uptodate_pages(int fd, uint64_t off, uint64_t len, unsigned char *vec)
{
    uint64_t start = off & ~(uint64_t)(SPECX_PAGE_SIZE - 1);
    size_t map_len = specx_pages_spanned(off, len) * SPECX_PAGE_SIZE;
    void *map = specx_raw_mmap(NULL, map_len, PROT_READ, MAP_PRIVATE, fd, (off_t)start);
    if (map == MAP_FAILED)
        return -1;
    int ret = mincore(map, map_len, vec);
    munmap(map, map_len);
    return ret;
}

/* Pages of a range checked for arrival (the stack vector's size). */
#define ARRIVAL_PAGES 64u

bool specx_range_arrived(const struct specx_file_range *r)
{
    uint64_t first = r->off % SPECX_PAGE_SIZE;
    uint64_t len = r->len < ARRIVAL_PAGES * SPECX_PAGE_SIZE - first
                       ? r->len
                       : ARRIVAL_PAGES * SPECX_PAGE_SIZE - first;
    unsigned char vec[ARRIVAL_PAGES];
    if (len == 0 || specx_uptodate_pages(r->fd, r->off, len, vec) < 0)
        return false;
    for (uint64_t i = 0; i < specx_pages_spanned(r->off, len); i++)
        if (!(vec[i] & 1))
            return false;
    return true;
}

static int64_t cached_pages_mincore(int fd, uint64_t off, uint64_t len)
{
    unsigned char vec[256];
    int64_t cached = 0;
    uint64_t end = off + len;
    /* In steps of what vec covers; the first step starts at off, the next ones page-aligned. */
    while (off < end) {
        uint64_t step_end = (off & ~(uint64_t)(SPECX_PAGE_SIZE - 1)) + sizeof vec * SPECX_PAGE_SIZE;
        uint64_t n = (step_end < end ? step_end : end) - off;
        if (specx_uptodate_pages(fd, off, n, vec) < 0)
            return -1;
        for (uint64_t i = 0; i < specx_pages_spanned(off, n); i++)
            cached += vec[i] & 1;
        off += n;
    }
    return cached;
}

int64_t specx_cached_pages(int fd, uint64_t off, uint64_t len)
{
    if (!no_cachestat) {
        struct cachestat_range range = { off, len };
        struct cachestat cs;
        if (specx_raw_syscall(__NR_cachestat, fd, &range, &cs, 0) == 0)
            return (int64_t)cs.nr_cache;
        if (errno != ENOSYS)
            return -1;
        no_cachestat = true;
    }
    return cached_pages_mincore(fd, off, len);
}
