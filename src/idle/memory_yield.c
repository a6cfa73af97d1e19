/* See memory_yield.h. */
#include "idle/memory_yield.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "kernel/memcg.h"
#include "kernel/psi.h"

/* Foreground stall time in one sample that counts as pressure: 2 % of the sample. Less is the
 * noise of a busy machine's occasional reclaim. */
#define STALL_THRESHOLD_US (IDLE_SAMPLE_NS / 1000 / 50)

static bool read_psi_some(const struct specx_cgroup *cg, uint64_t *us)
{
    char path[PATH_MAX];
    struct specx_psi psi;
    if (!specx_psi_path(cg, "memory", path, sizeof path) || !specx_psi_read(path, &psi))
        return false;
    *us = psi.some.total_us;
    return true;
}

/* Whether the machine's own reclaim ran since the last call. Every global reclaim, kswapd's
 * (balance_pgdat) as well as a direct one, is a memory stall to PSI: while the machine's stall
 * total stands still, pgscan does too, and /proc/vmstat is not read: the dearest file of a
 * sample (45-49 us to open, write out and close here, against 18-27 us for /proc/meminfo and
 * 18 us for the group's usage). */
static bool machine_reclaimed(struct idle_memory *m)
{
    uint64_t stalled, scanned;
    if (m->machine_psi && read_psi_some(NULL, &stalled)) {
        if (stalled == m->machine_stall_us)
            return false;
        m->machine_stall_us = stalled;
    }
    if (!specx_memcg_machine_reclaim(&scanned))
        return false;
    bool moved = scanned > m->pgscan;
    m->pgscan = scanned;
    return moved;
}

/* True (and the counters moved on) if the foreground stalled on memory since the last call:
 * the machine's own reclaim ran (it counts no group's reclaim at its own limit), charges hit
 * the limit of the memory group the background's was made in (its charges included: what it
 * takes there is taken from whoever else is in it), or, where that is a v2 group below the
 * root, its tasks stalled beyond the background's own stalls. Not the machine's PSI: it
 * counts every task stalled at any group's own limit, which nothing the background gives
 * back can relieve. */
static bool foreground_pressure(struct idle_memory *m)
{
    bool pressure = false;
    uint64_t domain, bg, hits;
    if (m->psi_usable && read_psi_some(&m->psi_domain, &domain) &&
        read_psi_some(m->groups->psi, &bg)) {
        uint64_t d_domain = domain - m->psi_domain_us, d_bg = bg - m->psi_bg_us;
        pressure |= d_domain > d_bg && d_domain - d_bg > STALL_THRESHOLD_US;
        m->psi_domain_us = domain;
        m->psi_bg_us = bg;
    }
    pressure |= machine_reclaimed(m);
    if (m->domain_limited && specx_memcg_limit_hits(&m->domain, &hits)) {
        pressure |= hits > m->domain_hits;
        m->domain_hits = hits;
    }
    return pressure;
}

/* The group the background's PSI group was made in, if that is a v2 group below the
 * hierarchy's root (whose PSI is the machine's): its stalls include the background's. */
static bool psi_domain(const struct specx_cgroup *bg, struct specx_cgroup *domain)
{
    struct specx_cgroup above;
    return bg->version == SPECX_CG_V2 && specx_cgroup_parent(bg, domain) &&
           specx_cgroup_parent(domain, &above);
}

static uint64_t machine_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : UINT64_MAX;
}

void idle_memory_start(struct idle_memory *m, const struct idle_groups *g, struct idle_hold *hold,
                       uint64_t now_ns)
{
    *m = (struct idle_memory){ .groups = g, .hold = hold, .enabled = true,
                               .total_bytes = machine_memory() };
    /* Without a PSI of the background's own, its stalls at its own limit would read as the
     * foreground's, and every shrink would call for the next. */
    m->psi_usable = g->psi && psi_domain(g->psi, &m->psi_domain) &&
                    read_psi_some(&m->psi_domain, &m->psi_domain_us) &&
                    read_psi_some(g->psi, &m->psi_bg_us);
    m->machine_psi = read_psi_some(NULL, &m->machine_stall_us);
    specx_memcg_machine_reclaim(&m->pgscan);
    /* The background's memory is charged to the groups above its own: a limit hit there is
     * one that what it gives back relieves. */
    if (specx_cgroup_parent(&g->mem.cg, &m->domain)) {
        uint64_t limit = specx_memcg_limit(&m->domain);
        m->domain_limited = limit > 0 && specx_memcg_limit_hits(&m->domain, &m->domain_hits);
        if (m->domain_limited && limit < m->total_bytes)
            m->total_bytes = limit;
    }
    m->state.last_change_ns = now_ns;
}

static void set_frozen(struct idle_memory *m, bool frozen, uint64_t now_ns)
{
    if (!m->groups->freeze || frozen == (m->frozen_since_ns != 0))
        return;
    idle_hold_set(m->hold, IDLE_HOLD_MEMORY, frozen);
    if (frozen) {
        m->frozen_since_ns = now_ns;
    } else {
        m->frozen_ns += now_ns - m->frozen_since_ns;
        m->frozen_since_ns = 0;
    }
}

/* Brings the background down to its new limit: v2 throttles it at memory.high and reclaims
 * the rest at once; v1 lowers the hard limit, and the write returns once the kernel has
 * reclaimed below it (EBUSY if it cannot: then the limit stays where its usage is, and the
 * background, frozen, takes nothing more). */
static void shrink(struct idle_memory *m, uint64_t usage, uint64_t start_ns)
{
    const struct specx_cgroup *mem = &m->groups->mem.cg;
    uint64_t limit = m->state.limit;
    if (mem->version == SPECX_CG_V2) {
        specx_memcg_set_high(mem, limit);
        if (usage > limit)
            specx_memcg_reclaim(mem, usage - limit);
    } else if (specx_memcg_set_limit(mem, limit) < 0 && errno == EBUSY) {
        m->state.limit = specx_memcg_usage(mem);
        specx_memcg_set_limit(mem, m->state.limit);
    }
    uint64_t after = specx_memcg_usage(mem);
    uint64_t took = specx_now_ns() - start_ns;
    if (m->shrinks == 0) { /* for the benchmark's time from the foreground's onset */
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        m->first_giveback_at = (double)wall.tv_sec + (double)wall.tv_nsec / 1e9;
    }
    m->shrinks++;
    m->given_back_bytes += usage > after ? usage - after : 0;
    m->giveback_sum_ns += took;
    if (took > m->giveback_max_ns)
        m->giveback_max_ns = took;
}

static void set_limit(struct idle_memory *m, uint64_t limit)
{
    const struct specx_cgroup *mem = &m->groups->mem.cg;
    if (mem->version == SPECX_CG_V2)
        specx_memcg_set_high(mem, limit);
    else
        specx_memcg_set_limit(mem, limit);
}

void idle_memory_tick(struct idle_memory *m, uint64_t now_ns)
{
    if (!m->enabled)
        return;
    /* What it holds matters only to a shrink; its peak is the kernel's (idle_memory_end). */
    bool pressure = foreground_pressure(m);
    uint64_t usage = pressure ? specx_memcg_usage(&m->groups->mem.cg) : 0;
    uint64_t unused = 0;
    if (idle_yield_may_grow(&m->state))
        unused = specx_memcg_free(m->domain_limited ? &m->domain : NULL, NULL);
    switch (idle_yield_step(&m->state, pressure, now_ns, usage, unused, m->total_bytes)) {
    case YIELD_SHRINK:
        set_frozen(m, true, now_ns);
        shrink(m, usage, now_ns);
        break;
    case YIELD_THAW:
        set_frozen(m, false, now_ns);
        m->thaws++;
        break;
    case YIELD_GROW:
        set_limit(m, m->state.limit);
        m->grows++;
        break;
    case YIELD_NOTHING:
        break;
    }
}

void idle_memory_stop(struct idle_memory *m, uint64_t now_ns)
{
    if (!m->enabled)
        return;
    m->enabled = false;
    set_limit(m, 0);
    set_frozen(m, false, now_ns);
}

void idle_memory_end(struct idle_memory *m)
{
    m->peak_bytes = specx_memcg_peak(&m->groups->mem.cg);
}

struct idle_memory_figures idle_memory_figures(const struct idle_memory *m)
{
    return (struct idle_memory_figures){
        .psi_usable = m->psi_usable, .shrinks = m->shrinks, .thaws = m->thaws,
        .grows = m->grows, .giveback_max_ns = m->giveback_max_ns,
        .giveback_sum_ns = m->giveback_sum_ns, .given_back_bytes = m->given_back_bytes,
        .frozen_ns = m->frozen_ns, .first_giveback_at = m->first_giveback_at,
        .peak_bytes = m->peak_bytes,
    };
}
