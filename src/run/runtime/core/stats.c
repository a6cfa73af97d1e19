#include "run/runtime/core/stats.h"
#include "common/run_env.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "kernel/raw.h"

static char stats_path[PATH_MAX];
/* Where counts go when there is no statistics file to share them through. */
static struct specx_stats_slot private_slot __attribute__((aligned(SPECX_STATS_PAGE)));
/* Page faults before this image started (they accumulate across exec). */
static uint64_t minflt_at_start, majflt_at_start;

static struct rusage usage(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) < 0)
        memset(&ru, 0, sizeof ru);
    return ru;
}

void specx_stats_init(void)
{
    const char *path = getenv(SPECX_STATS_ENV);
    if (path && strlen(path) < sizeof stats_path)
        strcpy(stats_path, path);
}

/* Index of a fresh slot, or -1. Only the header page is mapped while claiming. */
static long claim_index(int fd)
{
    struct specx_stats_header *hdr =
        specx_raw_mmap(NULL, SPECX_STATS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (hdr == MAP_FAILED)
        return -1;
    long idx = -1;
    if (hdr->magic == SPECX_STATS_MAGIC) {
        uint32_t claimed = __atomic_fetch_add(&hdr->claimed, 1, __ATOMIC_RELAXED);
        if (claimed < hdr->max_slots)
            idx = (long)claimed;
    }
    munmap(hdr, SPECX_STATS_PAGE);
    return idx;
}

static struct specx_stats_slot *map_shared_slot(void)
{
    if (!stats_path[0])
        return NULL;
    int saved = errno;
    struct specx_stats_slot *slot = NULL;
    int fd = open(stats_path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        long idx = claim_index(fd);
        if (idx >= 0) {
            void *p = specx_raw_mmap(NULL, SPECX_STATS_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                           (off_t)(idx + 1) * SPECX_STATS_PAGE);
            slot = p == MAP_FAILED ? NULL : p;
        }
        close(fd); /* descriptor numbers are the program's: keep none */
    }
    errno = saved;
    return slot;
}

struct specx_stats_slot *specx_stats_claim_for(pid_t pid, pid_t ppid)
{
    struct specx_stats_slot *slot = map_shared_slot();
    if (!slot) {
        slot = &private_slot;
        memset(slot, 0, sizeof *slot);
    }
    slot->ppid = ppid;
    slot->start_ns = specx_now_ns();
    strncpy(slot->argv0, program_invocation_name, sizeof slot->argv0 - 1);
    __atomic_store_n(&slot->pid, pid, __ATOMIC_RELEASE); /* last: the slot is in use */
    return slot;
}

struct specx_stats_slot *specx_stats_claim(void)
{
    struct rusage ru = usage();
    minflt_at_start = (uint64_t)ru.ru_minflt;
    majflt_at_start = (uint64_t)ru.ru_majflt;
    return specx_stats_claim_for(getpid(), getppid());
}

void specx_stats_release(struct specx_stats_slot *slot)
{
    if (slot != &private_slot)
        munmap(slot, SPECX_STATS_PAGE);
}

void specx_stats_finish(struct specx_stats_slot *slot)
{
    struct rusage ru = usage();
    slot->minflt = (uint64_t)ru.ru_minflt - minflt_at_start;
    slot->majflt = (uint64_t)ru.ru_majflt - majflt_at_start;
    slot->end_ns = specx_now_ns();
    __atomic_fetch_or(&slot->flags, SPECX_SLOT_ENDED, __ATOMIC_RELEASE);
}

void specx_stats_resume(struct specx_stats_slot *slot)
{
    slot->end_ns = 0;
    __atomic_fetch_and(&slot->flags, ~(uint32_t)SPECX_SLOT_ENDED, __ATOMIC_RELEASE);
}
