/* See net_queue.h. */
#include "idle/net_queue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/pkt_sched.h>
#include <netlink/route/class.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/htb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idle/net_class.h"

#define REGISTRY "/run/specx-idle/net"
/* The background's guaranteed share of the rate: HTB needs one, and a small one lets the
 * foreground keep nearly all of a busy link. */
#define BG_RATE_DIVISOR 1000
#define MIN_BG_RATE_BYTES 1000u
/* Ten full frames per round: small enough for fairness, large enough to keep HTB quiet. */
#define QUANTUM_BYTES 15140u
/* The foreground's bucket: one full GSO packet (64 KiB), or 1 ms of the rate where that is
 * more. HTB's default (one frame) paces a burst to the rate from its first packet, while the
 * bottleneck behind us, whose own bucket holds at least a GSO packet, would let it through:
 * a bursty foreground lost a third of its throughput to that default (docs/design/idle.md, Network).
 * The background keeps the default: its bursts are what would queue ahead of the FG. */
#define MIN_BURST_BYTES 65536u
#define BURST_PER_SECOND 1000u

/* Root qdiscs the kernel puts on by itself: replacing them changes nobody's configuration. */
static bool is_default_kind(const char *kind)
{
    static const char *const kinds[] = { "noqueue", "pfifo_fast", "fq_codel", "mq", "fq",
                                         "pfifo", NULL };
    for (int i = 0; kind && kinds[i]; i++)
        if (strcmp(kind, kinds[i]) == 0)
            return true;
    return kind == NULL;
}

/* This run's entry for DEV in the registry of its network namespace. */
static void registry_dir(char *out, size_t size, const char *dev)
{
    struct stat ns;
    unsigned long long ino = stat("/proc/self/ns/net", &ns) == 0 ? (unsigned long long)ns.st_ino
                                                                 : 0;
    snprintf(out, size, REGISTRY "/%llu-%s", ino, dev);
}

/* Removes the entries of runs that are gone (their lock is free); returns how many live ones
 * are left. */
static unsigned live_users(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    unsigned live = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
            live++;
        else
            unlinkat(dirfd(d), e->d_name, 0);
        close(fd);
    }
    closedir(d);
    return live;
}

/* Enters this run in the registry of DEV's users: an entry that appears already locked (made
 * unnamed, locked, then linked in), so that no sweep can take it for a dead run's. */
static void register_run(struct idle_net_dev *d)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    registry_dir(dir, sizeof dir, d->name);
    mkdir("/run/specx-idle", 0755);
    mkdir(REGISTRY, 0755);
    mkdir(dir, 0755);
    d->entry_fd = open(dir, O_WRONLY | O_TMPFILE | O_CLOEXEC, 0644);
    if (d->entry_fd < 0 || flock(d->entry_fd, LOCK_EX | LOCK_NB) < 0)
        return;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", d->entry_fd);
    for (int i = 0; i < 100; i++) {
        snprintf(d->entry, sizeof d->entry, i ? "%d-%d" : "%d", (int)getpid(), i);
        snprintf(path, sizeof path, "%s/%s", dir, d->entry);
        if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
            return;
        if (errno != EEXIST)
            break;
    }
    d->entry[0] = '\0'; /* not entered: no name of ours to remove */
}

static void unregister_run(struct idle_net_dev *d)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    registry_dir(dir, sizeof dir, d->name);
    snprintf(path, sizeof path, "%s/%s", dir, d->entry);
    if (d->entry[0])
        unlink(path);
    if (d->entry_fd >= 0)
        close(d->entry_fd);
    d->entry[0] = '\0';
    d->entry_fd = -1;
}

static struct nl_sock *connect_route(void)
{
    struct nl_sock *sk = nl_socket_alloc();
    if (sk && nl_connect(sk, NETLINK_ROUTE) < 0) {
        nl_socket_free(sk);
        return NULL;
    }
    return sk;
}

/* The root qdisc of IFINDEX: its kind (NULL: none) and handle. */
static bool root_qdisc(struct nl_sock *sk, int ifindex, char *kind, size_t size,
                       uint32_t *handle)
{
    struct nl_cache *cache;
    if (rtnl_qdisc_alloc_cache(sk, &cache) < 0)
        return false;
    struct rtnl_qdisc *q = rtnl_qdisc_get_by_parent(cache, ifindex, TC_H_ROOT);
    kind[0] = '\0';
    *handle = 0;
    if (q) {
        snprintf(kind, size, "%s", rtnl_tc_get_kind(TC_CAST(q)));
        *handle = rtnl_tc_get_handle(TC_CAST(q));
        rtnl_qdisc_put(q);
    }
    nl_cache_free(cache);
    return true;
}

static uint32_t fg_burst(uint64_t rate)
{
    uint64_t b = rate / BURST_PER_SECOND;
    return b > MIN_BURST_BYTES ? (uint32_t)(b < UINT32_MAX ? b : UINT32_MAX) : MIN_BURST_BYTES;
}

/* An HTB class; BURST bytes in its buckets, or HTB's default where 0. */
static int add_class(struct nl_sock *sk, int ifindex, uint32_t parent, uint32_t handle,
                     uint64_t rate, uint64_t ceil, uint32_t prio, uint32_t burst)
{
    struct rtnl_class *c = rtnl_class_alloc();
    if (!c)
        return -NLE_NOMEM;
    rtnl_tc_set_ifindex(TC_CAST(c), ifindex);
    rtnl_tc_set_parent(TC_CAST(c), parent);
    rtnl_tc_set_handle(TC_CAST(c), handle);
    int rc = rtnl_tc_set_kind(TC_CAST(c), "htb");
    if (rc == 0) {
        rtnl_htb_set_rate64(c, rate);
        rtnl_htb_set_ceil64(c, ceil);
        rtnl_htb_set_prio(c, prio);
        rtnl_htb_set_quantum(c, QUANTUM_BYTES);
        if (burst) {
            rtnl_htb_set_rbuffer(c, burst);
            rtnl_htb_set_cbuffer(c, burst);
        }
        rc = rtnl_class_add(sk, c, NLM_F_CREATE | NLM_F_REPLACE);
    }
    rtnl_class_put(c);
    return rc;
}

static uint64_t bg_rate(uint64_t rate)
{
    uint64_t r = rate / BG_RATE_DIVISOR;
    return r > MIN_BG_RATE_BYTES ? r : MIN_BG_RATE_BYTES;
}

/* The qdisc and its three classes on IFINDEX at RATE_BPS. */
static int install(struct nl_sock *sk, int ifindex, uint64_t rate_bps)
{
    struct rtnl_qdisc *q = rtnl_qdisc_alloc();
    if (!q)
        return -NLE_NOMEM;
    rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
    rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
    rtnl_tc_set_handle(TC_CAST(q), IDLE_NET_HANDLE);
    int rc = rtnl_tc_set_kind(TC_CAST(q), "htb");
    if (rc == 0) {
        rtnl_htb_set_defcls(q, IDLE_NET_FG_CLASS);
        rc = rtnl_qdisc_add(sk, q, NLM_F_CREATE | NLM_F_REPLACE);
    }
    rtnl_qdisc_put(q);
    uint64_t rate = rate_bps / 8;
    if (rc == 0)
        rc = add_class(sk, ifindex, IDLE_NET_HANDLE, IDLE_NET_ROOT_CLASS, rate, rate, 0,
                       fg_burst(rate));
    if (rc == 0)
        rc = add_class(sk, ifindex, IDLE_NET_ROOT_CLASS, IDLE_NET_FG_CLASS,
                       rate - bg_rate(rate), rate, 0, fg_burst(rate));
    if (rc == 0)
        rc = add_class(sk, ifindex, IDLE_NET_ROOT_CLASS, IDLE_NET_BG_CLASS, bg_rate(rate),
                       rate, 7, 0);
    return rc;
}

static void uninstall(struct nl_sock *sk, int ifindex)
{
    char kind[32];
    uint32_t handle;
    if (!root_qdisc(sk, ifindex, kind, sizeof kind, &handle) || handle != IDLE_NET_HANDLE)
        return;
    struct rtnl_qdisc *q = rtnl_qdisc_alloc();
    if (!q)
        return;
    rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
    rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
    rtnl_qdisc_delete(sk, q);
    rtnl_qdisc_put(q);
}

/* The interfaces of this namespace's default routes (IPv4 and IPv6), at most MAX. */
static size_t default_route_devs(char (*out)[IF_NAMESIZE], size_t max)
{
    size_t n = 0;
    char line[512], dev[IF_NAMESIZE], dest[64];
    FILE *f = fopen("/proc/net/route", "re");
    while (f && n < max && fgets(line, sizeof line, f))
        if (sscanf(line, "%15s %63s", dev, dest) == 2 && strcmp(dest, "00000000") == 0)
            snprintf(out[n++], IF_NAMESIZE, "%s", dev);
    if (f)
        fclose(f);
    f = fopen("/proc/net/ipv6_route", "re");
    unsigned prefix;
    while (f && n < max && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%63s %x %*s %*s %*s %*s %*s %*s %*s %15s", dest, &prefix, dev) != 3 ||
            prefix != 0 || strspn(dest, "0") != strlen(dest) || strcmp(dev, "lo") == 0)
            continue;
        bool seen = false;
        for (size_t i = 0; i < n; i++)
            seen |= strcmp(out[i], dev) == 0;
        if (!seen)
            snprintf(out[n++], IF_NAMESIZE, "%s", dev);
    }
    if (f)
        fclose(f);
    return n;
}

static void note_why(struct idle_net_queue *q, const char *dev, const char *why)
{
    size_t len = strlen(q->why);
    snprintf(q->why + len, sizeof q->why - len, "%s%s: %s", len ? "; " : "", dev, why);
}

/* The qdisc on DEV goes if no live run holds it. */
static void release(struct nl_sock *sk, const char *dev)
{
    char dir[PATH_MAX];
    registry_dir(dir, sizeof dir, dev);
    if (live_users(dir) > 0)
        return;
    int ifindex = (int)if_nametoindex(dev);
    if (ifindex)
        uninstall(sk, ifindex);
    /* The registry goes with its last entry. */
    if (rmdir(dir) == 0 && rmdir(REGISTRY) == 0)
        rmdir("/run/specx-idle");
}

/* Queues on DEV, or notes why it cannot. */
static void start_dev(struct idle_net_queue *q, struct nl_sock *sk, const char *dev,
                      uint64_t rate_bps)
{
    int ifindex = (int)if_nametoindex(dev);
    char kind[32];
    uint32_t handle;
    if (ifindex == 0) {
        note_why(q, dev, "no such interface");
        return;
    }
    if (!root_qdisc(sk, ifindex, kind, sizeof kind, &handle)) {
        note_why(q, dev, "cannot read its qdisc");
        return;
    }
    char dir[PATH_MAX];
    registry_dir(dir, sizeof dir, dev);
    bool ours = handle == IDLE_NET_HANDLE && strcmp(kind, "htb") == 0;
    if (!ours && !is_default_kind(kind[0] ? kind : NULL)) {
        note_why(q, dev, "it has a qdisc of someone else's");
        return;
    }
    /* Ours but left by runs that are all gone: made anew at this run's rate. */
    bool make = !ours || live_users(dir) == 0;
    /* Registered before the qdisc is made: a run killed in between leaves an entry that the
     * next run's sweep finds, never a qdisc that no entry leads to (seen under load). */
    struct idle_net_dev *d = &q->devs[q->n];
    *d = (struct idle_net_dev){ .rate_bps = rate_bps, .entry_fd = -1 };
    snprintf(d->name, sizeof d->name, "%s", dev);
    register_run(d);
    int rc = make ? install(sk, ifindex, rate_bps) : 0;
    if (rc < 0) {
        note_why(q, dev, nl_geterror(rc));
        unregister_run(d);
        release(sk, dev);
        return;
    }
    q->n++;
}

void idle_net_queue_start(struct idle_net_queue *q, const char *dev, uint64_t rate_bps)
{
    *q = (struct idle_net_queue){ 0 };
    if (rate_bps == 0) {
        snprintf(q->why, sizeof q->why, "not queued: give --net-rate, the bottleneck's rate");
        return;
    }
    char devs[IDLE_NET_MAX_DEVS][IF_NAMESIZE];
    size_t n = 1;
    if (dev)
        snprintf(devs[0], IF_NAMESIZE, "%s", dev);
    else
        n = default_route_devs(devs, IDLE_NET_MAX_DEVS);
    if (n == 0) {
        snprintf(q->why, sizeof q->why, "no default route");
        return;
    }
    struct nl_sock *sk = connect_route();
    if (!sk) {
        snprintf(q->why, sizeof q->why, "no route netlink socket");
        return;
    }
    for (size_t i = 0; i < n; i++)
        start_dev(q, sk, devs[i], rate_bps);
    nl_socket_free(sk);
}

void idle_net_queue_promote(const struct idle_net_queue *q)
{
    struct nl_sock *sk = connect_route();
    for (size_t i = 0; sk && i < q->n; i++) {
        uint64_t rate = q->devs[i].rate_bps / 8;
        add_class(sk, (int)if_nametoindex(q->devs[i].name), IDLE_NET_ROOT_CLASS,
                  IDLE_NET_BG_CLASS, rate - bg_rate(rate), rate, 0, 0);
    }
    if (sk)
        nl_socket_free(sk);
}

void idle_net_queue_stop(struct idle_net_queue *q)
{
    if (q->stopped)
        return;
    q->stopped = true;
    struct nl_sock *sk = connect_route();
    for (size_t i = 0; i < q->n; i++) {
        unregister_run(&q->devs[i]);
        if (sk)
            release(sk, q->devs[i].name);
    }
    if (sk)
        nl_socket_free(sk);
}

void idle_net_queue_drop_locks(struct idle_net_queue *q)
{
    for (size_t i = 0; i < q->n; i++)
        if (q->devs[i].entry_fd >= 0) {
            close(q->devs[i].entry_fd);
            q->devs[i].entry_fd = -1;
        }
}

void idle_net_queue_sweep(void)
{
    char prefix[64];
    struct stat ns;
    if (stat("/proc/self/ns/net", &ns) < 0)
        return;
    snprintf(prefix, sizeof prefix, "%llu-", (unsigned long long)ns.st_ino);
    DIR *d = opendir(REGISTRY);
    struct nl_sock *sk = d ? connect_route() : NULL;
    struct dirent *e;
    while (sk && (e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            release(sk, e->d_name + strlen(prefix));
    if (sk)
        nl_socket_free(sk);
    if (d)
        closedir(d);
}
