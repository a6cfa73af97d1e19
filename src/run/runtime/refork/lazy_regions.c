/* Fast refork, program side (Fraser & Chang 2003, §5.1): which regions a speculative clone
 * leaves out, and leaving them out of that one clone only. See lazy_memory.h. */
#include "run/runtime/refork/lazy_memory.h"

#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "run/runtime/running/copy_timer.h"
#include "run/runtime/core/control.h"
#include "run/runtime/core/runtime.h"
#include "kernel/maps.h"
#include "run/runtime/policy/lazy_budget.h"
#include "kernel/residency.h"
#include "common/run_env.h"
#include "kernel/raw.h"

static bool requested;    /* SPECX_REFORK=fast */
static bool program_owns; /* the program used MADV_DONTFORK or MADV_WIPEONFORK itself */
static int usable = -1;   /* userfaultfd works here (-1: not tried yet) */

/* Below the thread pointer lie the static TLS blocks of every object loaded at start (errno
 * among them) and a surplus that objects opened later may take; above it the thread control
 * block (the stack protector's canary). What a clone must keep around the thread pointer. */
#define TLS_SURPLUS (64ul << 10)
#define TLS_UNKNOWN (1ul << 20) /* when the loader does not say where the blocks are */
#define TCB_ABOVE (64ul << 10)
static unsigned long tls_below = TLS_UNKNOWN;

static int note_tls_block(struct dl_phdr_info *info, size_t size, void *lowest)
{
    unsigned long *low = lowest;
    if (size >= offsetof(struct dl_phdr_info, dlpi_tls_data) + sizeof info->dlpi_tls_data &&
        info->dlpi_tls_data && (unsigned long)info->dlpi_tls_data < *low)
        *low = (unsigned long)info->dlpi_tls_data;
    return 0;
}

/* Asked once, at start: the loader's lock must not be taken at a stall, which may come in a
 * signal handler. */
static void measure_static_tls(void)
{
    unsigned long tp = (unsigned long)__builtin_thread_pointer(), low = tp;
    dl_iterate_phdr(note_tls_block, &low);
    if (low < tp)
        tls_below = tp - low + TLS_SURPLUS;
}

__attribute__((constructor)) static void read_refork_mode(void)
{
    const char *mode = getenv(SPECX_REFORK_ENV);
    requested = mode && strcmp(mode, "fast") == 0;
    if (requested)
        measure_static_tls();
}

/* Every copy, fast refork or not, frees these regions before it ends itself (lazy_memory.h
 * says why); set at load, so that every copy inherits it. */
__attribute__((constructor)) static void release_regions_at_copy_end(void)
{
    specx_copy_before_end(specx_lazy_release_regions);
}

void specx_lazy_note_advice(int advice)
{
    if (advice == MADV_DONTFORK || advice == MADV_WIPEONFORK)
        program_owns = true;
}

/* Whether the next clone should be fast: asked for, not refused by the program's own use of
 * MADV_DONTFORK/WIPEONFORK, and userfaultfd is available. */
static bool lazy_wanted(void)
{
    if (!requested || program_owns)
        return false;
    if (usable < 0) {
        /* Tried once in the program: a copy that could not attach would fail at every stall. */
        int fd = specx_lazy_userfaultfd();
        usable = fd >= 0;
        if (fd >= 0)
            close(fd);
        if (!usable)
            specx_log("pid %d: userfaultfd unavailable, plain clones", specx.pid);
    }
    return usable;
}

/* Anonymous memory as /proc/PID/maps names it: nothing, the heap, or a name given with
 * PR_SET_VMA_ANON_NAME (newer glibc names its malloc arenas so). */
static bool anonymous_name(const char *path)
{
    return path[0] == '\0' || strcmp(path, "[heap]") == 0 || strncmp(path, "[anon:", 6) == 0;
}

static bool contains(const struct specx_mapping *m, unsigned long addr)
{
    return addr >= m->start && addr < m->end;
}

/* When addr lies in the mapping, cuts [addr - below, addr + above) out of *r, keeping the
 * larger part that remains. (Only then: what lives around addr lies in addr's mapping.) */
static void keep_around(struct specx_lazy_region *r, const struct specx_mapping *m,
                        unsigned long addr, unsigned long below, unsigned long above)
{
    if (!contains(m, addr))
        return;
    unsigned long lo = (addr - m->start > below ? addr - below : m->start) &
                       ~(unsigned long)(SPECX_PAGE_SIZE - 1);
    unsigned long hi = (addr + above + SPECX_PAGE_SIZE - 1) & ~(unsigned long)(SPECX_PAGE_SIZE - 1);
    if (hi <= r->start || lo >= r->end)
        return;
    unsigned long part_below = lo > r->start ? lo - r->start : 0;
    unsigned long part_above = hi < r->end ? r->end - hi : 0;
    if (part_below >= part_above)
        r->end = r->start + part_below;
    else
        r->start = hi;
}

/* The part of a large private anonymous writable region (the heap or a big mmap) that a
 * clone may leave out: not what runs between the clone and specx_lazy_attach — the stack we
 * run on, the thread's TLS and control block, the runtime's own state. A big mmap often
 * lands right below the main thread's TLS and merges with it into one mapping (seen: a
 * program's first 40 MiB malloc): the rest of it is still left out (madvise splits the
 * mapping). Returns false when too little remains. */
static bool leave_out(const struct specx_mapping *m, struct specx_lazy_region *r)
{
    if (m->shared || (m->prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE) ||
        m->inode != 0 || !anonymous_name(m->path))
        return false;
    /* The stack we run on (an alternate one, a coroutine's) and the runtime's static data
     * (all of it, not only `specx`) are needed whole. */
    if (contains(m, (unsigned long)__builtin_frame_address(0)) ||
        contains(m, (unsigned long)&specx))
        return false;
    *r = (struct specx_lazy_region){ m->start, m->end, m->prot };
    keep_around(r, m, (unsigned long)__builtin_thread_pointer(), tls_below, TCB_ABOVE);
    return r->end - r->start >= SPECX_LAZY_MIN_REGION;
}

/* The raw system call: our own exported madvise would count this as the program's advice. */
static int advise(const struct specx_lazy_region *r, int advice)
{
    return (int)specx_raw_syscall(SYS_madvise, (void *)r->start, r->end - r->start, advice);
}

void specx_lazy_exclude(struct specx_lazy_set *set)
{
    set->n = 0;
    if (!lazy_wanted())
        return;
    char *buf;
    size_t size;
    if (specx_maps_read(&buf, &size) < 0)
        return;
    set->budget = specx_lazy_budget_of((unsigned long)specx_control_memory_limit(specx.ctl));
    for (char *line = buf; *line && set->n < SPECX_LAZY_MAX_REGIONS;) {
        struct specx_mapping m;
        line = specx_maps_parse_line(line, &m);
        struct specx_lazy_region r;
        if (leave_out(&m, &r) && advise(&r, MADV_DONTFORK) == 0)
            set->r[set->n++] = r;
    }
    munmap(buf, size);
}

void specx_lazy_restore(const struct specx_lazy_set *set)
{
    for (unsigned i = 0; i < set->n; i++)
        advise(&set->r[i], MADV_DOFORK);
}

void specx_lazy_release_regions(void)
{
    char *buf;
    size_t size;
    if (specx_maps_read(&buf, &size) < 0)
        return;
    for (char *line = buf; *line;) {
        struct specx_mapping m;
        line = specx_maps_parse_line(line, &m);
        struct specx_lazy_region r;
        if (leave_out(&m, &r))
            advise(&r, MADV_DONTNEED);
    }
    munmap(buf, size);
}
