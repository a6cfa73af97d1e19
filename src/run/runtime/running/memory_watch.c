/* The memory control's mechanism: see memory_watch.h. */
#include "run/runtime/running/memory_watch.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "run/runtime/running/copy_timer.h"
#include "run/runtime/core/control.h"
#include "run/runtime/core/runtime.h"
#include "kernel/kfile.h"
#include "kernel/memcg.h"
#include "kernel/psi.h"
#include "kernel/residency.h"

/* The signal of the copy's wall-clock timer (copy_timer.h); the idle limit uses SIGRTMAX - 1. */
#define WATCH_SIGNAL (SIGRTMAX - 2)

/* A count that grows while memory is short for a program without a limit of its own: its
 * group's memory stalls (v2 PSI, microseconds) or, where groups have no PSI (v1), the pages the
 * machine's own reclaim scanned. Not the machine's PSI: it also counts tasks stalled at some
 * other group's limit (a tight container beside the program), which is no shortage of the
 * program's memory. 0 if unreadable. */
static uint64_t shortage(const struct specx_memory_watch *w)
{
    char path[PATH_MAX + 32];
    struct specx_psi psi;
    uint64_t scanned = 0;
    if (w->have_group && w->group.version == SPECX_CG_V2)
        return specx_psi_path(&w->group, "memory", path, sizeof path) &&
                       specx_psi_read(path, &psi)
                   ? psi.some.total_us
                   : 0;
    specx_memcg_machine_reclaim(&scanned);
    return scanned;
}

/* The figures an interval is judged by, read now. */
struct reading {
    uint64_t refaults, limit_hits, shortage, removed, speculative_pages, copy_private_kb;
};

static struct reading read_now(const struct specx_control *ctl)
{
    const struct specx_memory_watch *w = &ctl->memory;
    const struct specx_stats_slot *s = specx.slot;
    struct reading r = { 0 };
    specx_memcg_refaults(w->have_group ? &w->group : NULL, &r.refaults);
    if (w->limit)
        specx_memcg_limit_hits(&w->group, &r.limit_hits);
    r.shortage = shortage(w);
    r.removed = __atomic_load_n(&s->spec_used_pages, __ATOMIC_RELAXED);
    r.speculative_pages =
        (__atomic_load_n(&s->spec_bytes, __ATOMIC_RELAXED) +
         __atomic_load_n(&s->fault_bytes, __ATOMIC_RELAXED)) / SPECX_PAGE_SIZE +
        __atomic_load_n(&s->lazy_pulled, __ATOMIC_RELAXED) +
        __atomic_load_n(&s->lazy_swap_prefetches, __ATOMIC_RELAXED);
    /* Every copy's private memory counts against the same budget. */
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        r.copy_private_kb += __atomic_load_n(&ctl->stream[k].copy_private_kb_now,
                                             __ATOMIC_RELAXED);
    return r;
}

static void begin_interval(struct specx_memory_watch *w, struct reading r, uint64_t now)
{
    w->refaults = r.refaults;
    w->limit_hits = r.limit_hits;
    w->shortage = r.shortage;
    w->removed = r.removed;
    w->speculative_pages = r.speculative_pages;
    w->copy_private_kb = r.copy_private_kb;
    w->interval_start_ns = now;
    w->interval_end_ns = now + SPECX_MEMORY_INTERVAL_NS;
}

void specx_memory_watch_find_group(struct specx_memory_watch *w)
{
    w->have_group = specx_memcg_limiting(0, &w->group) == 0;
    w->limit = w->have_group ? specx_memcg_limit(&w->group) : 0;
}

/* The first interval of this process: start counting. */
static void start_watching(struct specx_control *ctl, uint64_t now)
{
    specx_memctl_init(&ctl->memory.policy);
    begin_interval(&ctl->memory, read_now(ctl), now);
}

/* Memory was full during the interval: the program's group hit its limit, or (without a
 * limit) memory ran short for its group or the machine (shortage). */
static bool was_full(const struct specx_memory_watch *w, struct reading r)
{
    return w->limit ? r.limit_hits != w->limit_hits : r.shortage != w->shortage;
}

static void end_interval(struct specx_control *ctl, uint64_t now)
{
    struct specx_memory_watch *w = &ctl->memory;
    struct reading r = read_now(ctl);
    /* Pages speculation brought in: prefetched and pulled ones, and what the copy's own
     * memory grew by (copy-on-write pages; it is a level, and a new copy starts lower). */
    uint64_t grown_kb = r.copy_private_kb > w->copy_private_kb
                            ? r.copy_private_kb - w->copy_private_kb : 0;
    uint64_t brought_in = r.speculative_pages - w->speculative_pages +
                          grown_kb * 1024 / SPECX_PAGE_SIZE;
    uint64_t added = specx_memctl_added(r.refaults - w->refaults, was_full(w, r), brought_in);
    uint64_t removed = r.removed - w->removed;
    enum specx_memctl_change change = specx_memctl_end_interval(&w->policy, added, removed);
    SPECX_COUNT(memctl_intervals, 1);
    SPECX_COUNT(memctl_added, added);
    SPECX_COUNT(memctl_removed, removed);
    if (change == SPECX_MEMCTL_DISABLE) {
        SPECX_COUNT(memctl_disabled, 1);
        w->harm_since_ns = w->interval_start_ns;
        __atomic_store_n(&w->disabled, 1, __ATOMIC_RELEASE);
        specx_log("pid %d: memory control: speculation stopped (overhead %.1f stalls per "
                  "interval: %llu added, %llu removed)", specx.pid,
                  specx_memctl_overhead(&w->policy), (unsigned long long)added,
                  (unsigned long long)removed);
    } else if (change == SPECX_MEMCTL_ENABLE) {
        SPECX_COUNT(memctl_reenabled, 1);
        __atomic_store_n(&w->disabled, 0, __ATOMIC_RELEASE);
        specx_log("pid %d: memory control: speculation allowed again", specx.pid);
    }
    begin_interval(w, r, now);
}

/* In a copy, its own pid (set when its timer is armed); 0 in the program. */
static pid_t copy_self;

/* Who holds the lock: a copy by its pid with the low bit set, the program by its thread's id. */
static uint32_t holder_id(void)
{
    return copy_self ? (uint32_t)copy_self << 1 | 1u : (uint32_t)gettid() << 1;
}

/* A lock held by a copy other than the live ones: that copy was killed (SIGKILL, or a crash)
 * while it ended an interval, and a killed process never runs another instruction of its own.
 * Left held, no interval would ever end again. The live copies are those the program has not
 * ended (their streams' copy_pid, which it clears as it ends one). */
static bool held_by_dead_copy(const struct specx_control *ctl, uint32_t held)
{
    if (!(held & 1u))
        return false;
    for (unsigned k = 0; k < SPECX_STREAMS; k++)
        if (__atomic_load_n(&ctl->stream[k].copy_pid, __ATOMIC_RELAXED) == (pid_t)(held >> 1))
            return false;
    return true;
}

static bool lock_watch(struct specx_control *ctl)
{
    struct specx_memory_watch *w = &ctl->memory;
    uint32_t held = 0, me = holder_id();
    if (__atomic_compare_exchange_n(&w->lock, &held, me, false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED))
        return true;
    return held_by_dead_copy(ctl, held) &&
           __atomic_compare_exchange_n(&w->lock, &held, me, false, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

bool specx_memory_watch(void)
{
    struct specx_control *ctl = specx.ctl;
    if (!ctl || !specx.memory_control)
        return true;
    struct specx_memory_watch *w = &ctl->memory;
    uint64_t now = specx_now_ns();
    if (now >= w->interval_end_ns && lock_watch(ctl)) {
        if (w->interval_end_ns == 0)
            start_watching(ctl, now);
        else if (now >= w->interval_end_ns)
            end_interval(ctl, now);
        __atomic_store_n(&w->lock, 0, __ATOMIC_RELEASE);
    }
    return !__atomic_load_n(&w->disabled, __ATOMIC_ACQUIRE);
}

bool specx_memory_stopped(void)
{
    return specx.ctl && specx.memory_control &&
           __atomic_load_n(&specx.ctl->memory.disabled, __ATOMIC_ACQUIRE);
}

void specx_memory_given_back(void)
{
    struct specx_memory_watch *w = specx.ctl ? &specx.ctl->memory : NULL;
    uint64_t since = w ? __atomic_exchange_n(&w->harm_since_ns, 0, __ATOMIC_RELAXED) : 0;
    if (!since)
        return;
    uint64_t waited = specx_now_ns() - since;
    uint64_t longest = __atomic_load_n(&specx.slot->memctl_giveback_ns, __ATOMIC_RELAXED);
    while (waited > longest &&
           !__atomic_compare_exchange_n(&specx.slot->memctl_giveback_ns, &longest, waited, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/* The copy's private memory (KiB): what ending it gives back. */
static uint64_t own_private_kb(void)
{
    char text[2048];
    uint64_t clean = 0, dirty = 0;
    if (specx_kfile_read("/proc/self/smaps_rollup", text, sizeof text) < 0)
        return 0;
    specx_kfile_key_u64(text, "Private_Clean:", &clean);
    specx_kfile_key_u64(text, "Private_Dirty:", &dirty);
    return clean + dirty;
}

/* What this copy's private memory was when it first looked: what it was born with (page
 * tables, its first copy-on-write pages) is no page speculation brought in. */
static uint64_t born_with_kb;

static void note_copy_memory(void)
{
    uint64_t kb = own_private_kb();
    if (!born_with_kb)
        born_with_kb = kb ? kb : 1;
    if (specx.ctl)
        __atomic_store_n(&specx_control_own_stream()->copy_private_kb_now,
                         kb > born_with_kb ? kb - born_with_kb : 0, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&specx.slot->copy_peak_kb, __ATOMIC_RELAXED);
    while (kb > peak && !__atomic_compare_exchange_n(&specx.slot->copy_peak_kb, &peak, kb, true,
                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void on_watch_tick(int sig)
{
    (void)sig;
    note_copy_memory();
    if (!specx.memory_control || specx_memory_watch())
        return;
    specx_memory_given_back();
    specx_copy_end_itself();
}

/* The copy looks four times per interval: an interval ends within a quarter of one of its
 * due time even when the copy's timer started out of step with it. Without the control it
 * still notes its memory, for the report. */
void specx_memory_watch_arm(void)
{
    copy_self = getpid();
    specx_copy_every(CLOCK_MONOTONIC, WATCH_SIGNAL, on_watch_tick, SPECX_MEMORY_INTERVAL_NS / 4);
}
