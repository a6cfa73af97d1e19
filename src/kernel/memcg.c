/* See memcg.h. */
#include "kernel/memcg.h"
#include "kernel/kfile.h"
#include "kernel/raw.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Limits at or above this mean "none" (v1 reports one just below 2^63, v2 "max"). */
#define NO_LIMIT (1ull << 62)

static bool is_v1(const struct specx_cgroup *cg)
{
    return cg->version == SPECX_CG_V1;
}

int specx_memcg_of(pid_t pid, struct specx_cgroup *cg)
{
    return specx_cgroup_of(pid, "memory", cg);
}

uint64_t specx_memcg_limit(const struct specx_cgroup *cg)
{
    uint64_t limit;
    if (!specx_cgroup_u64(cg, is_v1(cg) ? "memory.limit_in_bytes" : "memory.max", &limit))
        return 0;
    return limit >= NO_LIMIT ? 0 : limit;
}

int specx_memcg_limiting(pid_t pid, struct specx_cgroup *cg)
{
    if (specx_memcg_of(pid, cg) < 0)
        return -1;
    /* A limit holds for every group below (v2, and v1 since use_hierarchy became the only
     * mode): a systemd slice's MemoryMax binds the scopes in it. */
    struct specx_cgroup at = *cg;
    uint64_t least = UINT64_MAX;
    do {
        uint64_t limit = specx_memcg_limit(&at);
        if (!limit)
            continue;
        uint64_t usage = specx_memcg_usage(&at), room = usage < limit ? limit - usage : 0;
        if (room < least) {
            least = room;
            *cg = at;
        }
    } while (specx_cgroup_parent(&at, &at));
    return 0;
}

/* BYTES as a limit file wants it: 0 is "no limit" ("-1" on v1, "max" on v2). */
static void limit_text(const struct specx_cgroup *cg, uint64_t bytes, char *text, size_t size)
{
    if (bytes)
        snprintf(text, size, "%llu\n", (unsigned long long)bytes);
    else
        snprintf(text, size, "%s\n", is_v1(cg) ? "-1" : "max");
}

int specx_memcg_set_limit(const struct specx_cgroup *cg, uint64_t bytes)
{
    char text[32];
    limit_text(cg, bytes, text, sizeof text);
    return specx_cgroup_write(cg, is_v1(cg) ? "memory.limit_in_bytes" : "memory.max", text);
}

int specx_memcg_set_high(const struct specx_cgroup *cg, uint64_t bytes)
{
    char text[32];
    if (is_v1(cg)) {
        errno = ENOTSUP;
        return -1;
    }
    limit_text(cg, bytes, text, sizeof text);
    return specx_cgroup_write(cg, "memory.high", text);
}

/* v1 has no memory.reclaim, but lowering the hard limit reclaims down to it before the write
 * returns (EBUSY if the kernel cannot); the limit is put back at once. (A limit of 0 would
 * mean none to specx_memcg_set_limit: one page is the least.) */
static int reclaim_v1(const struct specx_cgroup *cg, uint64_t bytes)
{
    uint64_t limit, usage = specx_memcg_usage(cg);
    if (!specx_cgroup_u64(cg, "memory.limit_in_bytes", &limit))
        return -1;
    int rc = specx_memcg_set_limit(cg, usage > bytes + 4096 ? usage - bytes : 4096);
    int saved = errno;
    specx_memcg_set_limit(cg, limit);
    errno = saved;
    return rc;
}

int specx_memcg_reclaim(const struct specx_cgroup *cg, uint64_t bytes)
{
    char text[32];
    if (is_v1(cg))
        return reclaim_v1(cg, bytes);
    snprintf(text, sizeof text, "%llu\n", (unsigned long long)bytes);
    return specx_cgroup_write(cg, "memory.reclaim", text);
}

int specx_memcg_swappiness(const struct specx_cgroup *cg)
{
    uint64_t value;
    if (!is_v1(cg)) {
        errno = ENOTSUP;
        return -1;
    }
    return specx_cgroup_u64(cg, "memory.swappiness", &value) ? (int)value : -1;
}

int specx_memcg_set_swappiness(const struct specx_cgroup *cg, int value)
{
    char text[16];
    if (!is_v1(cg)) {
        errno = ENOTSUP;
        return -1;
    }
    snprintf(text, sizeof text, "%d\n", value);
    return specx_cgroup_write(cg, "memory.swappiness", text);
}

uint64_t specx_memcg_free(const struct specx_cgroup *cg, uint64_t *total)
{
    uint64_t limit = cg ? specx_memcg_limit(cg) : 0, free_bytes = 0;
    if (limit && limit < (1ull << 60)) {
        uint64_t usage = specx_memcg_usage(cg);
        free_bytes = usage < limit ? limit - usage : 0;
    } else {
        char text[4096];
        uint64_t kib = 0;
        if (specx_kfile_read("/proc/meminfo", text, sizeof text) > 0)
            specx_kfile_key_u64(text, "MemAvailable:", &kib);
        limit = free_bytes = kib << 10;
    }
    if (total)
        *total = limit;
    return free_bytes;
}

static uint64_t u64_or_zero(const struct specx_cgroup *cg, const char *file)
{
    uint64_t v;
    return specx_cgroup_u64(cg, file, &v) ? v : 0;
}

uint64_t specx_memcg_usage(const struct specx_cgroup *cg)
{
    return u64_or_zero(cg, is_v1(cg) ? "memory.usage_in_bytes" : "memory.current");
}

uint64_t specx_memcg_peak(const struct specx_cgroup *cg)
{
    return u64_or_zero(cg, is_v1(cg) ? "memory.max_usage_in_bytes" : "memory.peak");
}

bool specx_memcg_stat(const struct specx_cgroup *cg, const char *key, uint64_t *value)
{
    char total[128];
    if (is_v1(cg)) {
        snprintf(total, sizeof total, "total_%s", key);
        if (specx_cgroup_key_u64(cg, "memory.stat", total, value))
            return true;
    }
    return specx_cgroup_key_u64(cg, "memory.stat", key, value);
}

bool specx_memcg_swap(const struct specx_cgroup *cg, uint64_t *bytes)
{
    if (is_v1(cg))
        return specx_memcg_stat(cg, "swap", bytes);
    return specx_cgroup_u64(cg, "memory.swap.current", bytes);
}

bool specx_memcg_refaults(const struct specx_cgroup *cg, uint64_t *refaults)
{
    uint64_t anon = 0, file = 0;
    if (!cg) {
        char text[8192];
        if (specx_kfile_read("/proc/vmstat", text, sizeof text) < 0)
            return false;
        bool ok = specx_kfile_key_u64(text, "workingset_refault_file", &file);
        specx_kfile_key_u64(text, "workingset_refault_anon", &anon); /* since Linux 5.9 */
        *refaults = anon + file;
        return ok;
    }
    bool ok = specx_memcg_stat(cg, "workingset_refault_file", &file);
    specx_memcg_stat(cg, "workingset_refault_anon", &anon);
    *refaults = anon + file;
    return ok;
}

bool specx_memcg_dirty(const struct specx_cgroup *cg, uint64_t *unwritten, uint64_t *writeback)
{
    /* One read of memory.stat for both: this is sampled every few milliseconds. */
    char text[8192];
    uint64_t dirty = 0;
    bool v1 = is_v1(cg);
    *writeback = 0;
    if (specx_cgroup_read(cg, "memory.stat", text, sizeof text) <= 0)
        return false;
    bool ok = specx_kfile_key_u64(text, v1 ? "total_dirty" : "file_dirty", &dirty);
    specx_kfile_key_u64(text, v1 ? "total_writeback" : "file_writeback", writeback);
    *unwritten = dirty + *writeback;
    return ok;
}

/* Registers EVENTFD for the events of CG's FILE, open as FILE_FD, with ARGS ("" for none):
 * v1's cgroup.event_control. */
static int add_event(const struct specx_cgroup *cg, int eventfd, int file_fd, const char *args)
{
    char text[64];
    snprintf(text, sizeof text, "%d %d%s%s", eventfd, file_fd, *args ? " " : "", args);
    return specx_cgroup_write(cg, "cgroup.event_control", text);
}

/* A new eventfd registered for the events of CG's FILE, once with each ARGS that is not NULL,
 * or -1 with errno. */
static int v1_event_watch(const struct specx_cgroup *cg, const char *file,
                          const char *const args[2])
{
    char path[PATH_MAX + 32];
    if (!specx_cgroup_file(cg, file, path, sizeof path))
        return -1;
    int file_fd = specx_kfile_open(path, O_RDONLY);
    if (file_fd < 0)
        return -1;
    /* Raw: this layer does not go through the preload runtime's wrappers (kfile.h). */
    int eventfd = (int)specx_raw_syscall(SYS_eventfd2, 0, EFD_NONBLOCK | EFD_CLOEXEC);
    bool ok = eventfd >= 0;
    for (int i = 0; ok && i < 2; i++)
        if (args[i])
            ok = add_event(cg, eventfd, file_fd, args[i]) == 0;
    specx_kfile_close(file_fd); /* the events hold the group, not the file */
    if (!ok && eventfd >= 0) {
        specx_kfile_close(eventfd);
        eventfd = -1;
    }
    return eventfd;
}

int specx_memcg_usage_watch(const struct specx_cgroup *cg, uint64_t below, uint64_t above)
{
    if (!is_v1(cg)) {
        errno = ENOTSUP;
        return -1;
    }
    char high[24], low[24];
    snprintf(high, sizeof high, "%llu", (unsigned long long)above);
    snprintf(low, sizeof low, "%llu", (unsigned long long)below);
    const char *thresholds[2] = { high, below ? low : NULL };
    return v1_event_watch(cg, "memory.usage_in_bytes", thresholds);
}

/* v2 has no eventfd for memory events: memory.events itself is "modified" (inotify) when one
 * of its counts moves. */
static int v2_events_watch(const struct specx_cgroup *cg)
{
    char path[PATH_MAX + 32];
    if (!specx_cgroup_file(cg, "memory.events", path, sizeof path))
        return -1;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd >= 0 && inotify_add_watch(fd, path, IN_MODIFY) < 0) {
        specx_kfile_close(fd);
        fd = -1;
    }
    return fd;
}

int specx_memcg_oom_watch(const struct specx_cgroup *cg, bool *only_oom)
{
    static const char *const no_args[2] = { "", NULL };
    *only_oom = is_v1(cg);
    return is_v1(cg) ? v1_event_watch(cg, "memory.oom_control", no_args) : v2_events_watch(cg);
}

void specx_memcg_watch_drain(int fd)
{
    char buf[4096]; /* an eventfd's count or a batch of inotify events */
    while (specx_raw_syscall(SYS_read, fd, buf, sizeof buf) > 0)
        ;
}

bool specx_memcg_machine_reclaim(uint64_t *scanned)
{
    static const char *const keys[] = { "pgscan_kswapd", "pgscan_direct", "pgscan_khugepaged" };
    char text[8192];
    if (specx_kfile_read("/proc/vmstat", text, sizeof text) < 0)
        return false;
    bool ok = false;
    *scanned = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        uint64_t n = 0;
        if (specx_kfile_key_u64(text, keys[i], &n)) {
            *scanned += n;
            ok = true;
        }
    }
    return ok;
}

bool specx_memcg_oom_kills(const struct specx_cgroup *cg, uint64_t *kills)
{
    return specx_cgroup_key_u64(cg, is_v1(cg) ? "memory.oom_control" : "memory.events",
                                "oom_kill", kills);
}

bool specx_memcg_limit_hits(const struct specx_cgroup *cg, uint64_t *hits)
{
    return is_v1(cg) ? specx_cgroup_u64(cg, "memory.failcnt", hits)
                     : specx_cgroup_key_u64(cg, "memory.events", "max", hits);
}
