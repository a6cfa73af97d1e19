/* The trigger of page-fault speculation (Fraser & Chang 2003 §4.1.2). The program gets no
 * hook at a page fault: a fault on a page that is not in memory happens inside an
 * instruction. What it does call is mmap, so a new large file mapping of data not in memory
 * (where its faults will come from) is where the program creates its speculative process;
 * in the speculative process, a mapping the copy makes itself is covered by its page-fault
 * speculation (faults/fault_speculation.h). madvise is here too: the program's fork-time advice
 * decides how its copies may be cloned. */

/* Both mmap and mmap64 are defined here: without this, the build's large-file default would
 * rename the first into the second. On 64-bit Linux both take the same 64-bit off_t. */
#undef _FILE_OFFSET_BITS
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "run/runtime/copy/copy.h"
#include "run/runtime/faults/fault_speculation.h"
#include "run/runtime/refork/lazy_memory.h"
#include "run/runtime/core/history.h"
#include "run/runtime/core/runtime.h"
#include "run/runtime/entry/real.h"
#include "kernel/residency.h"

/* Whether [off, off+len) of fd is all in the page cache (or is no regular file's: nothing a
 * speculative process could prefetch). */
static bool all_in_memory(int fd, uint64_t off, uint64_t len)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return true;
    uint64_t n = specx_clamp_to_eof(off, len, (uint64_t)st.st_size);
    int64_t cached = n ? specx_cached_pages(fd, off, n) : 0;
    return n == 0 || cached < 0 || (uint64_t)cached == specx_pages_spanned(off, n);
}

/* Every mapping that reaches here is the program's: the runtime maps with the system call
 * itself (raw.h). */
static void after_mapping(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (addr == MAP_FAILED || fd < 0 || (flags & MAP_ANONYMOUS) || off < 0 ||
        !specx_fault_eligible(prot, len))
        return;
    int saved = errno;
    if (specx.role == SPECX_ROLE_SPEC)
        specx_fault_speculation_add(addr, len, prot, fd, off);
    else if (specx.role == SPECX_ROLE_NORMAL && (specx.spec_allowed || specx_history_on()) &&
             specx_calls_begin()) {
        /* History notes the mapping even where speculation has been turned off. */
        bool cold = !all_in_memory(fd, (uint64_t)off, len);
        if (cold || specx_history_watching())
            specx_history_note_mapping(fd, (uint64_t)off, len, cold);
        if (cold && specx.spec_allowed)
            specx_copy_on_mapping(addr, fd, len); /* the copy goes on from here too */
        specx_calls_end();
    }
    errno = saved;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = REAL(mmap)(addr, len, prot, flags, fd, off);
    after_mapping(p, len, prot, flags, fd, off);
    return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = REAL(mmap64)(addr, len, prot, flags, fd, off);
    after_mapping(p, len, prot, flags, fd, off);
    return p;
}

/* The program's fork-time advice decides whether a copy may be a fast refork (lazy_memory.h). */
EXPORT int madvise(void *addr, size_t len, int advice)
{
    specx_lazy_note_advice(advice);
    return REAL(madvise)(addr, len, advice);
}
