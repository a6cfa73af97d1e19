/* See net_receive.h. */
#include "idle/net_receive.h"

#include <linux/tcp.h> /* struct tcp_info with its byte counts (glibc's stops short) */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel/group_fds.h"
#include "kernel/kfile.h"

#define TCP_STATE_ESTABLISHED 1 /* tcpi_state: the kernel's TCP_ESTABLISHED */
/* A connection's round trip before the kernel has measured one, and the least window
 * offered outside a clamp. */
#define DEFAULT_RTT_US 20000u
#define MIN_WINDOW (64u << 10)

/* What an unclamped connection may offer: the largest receive buffer TCP autotunes to (the
 * third of tcp_rmem), which is what the kernel sized the connection's window scale for. */
static uint32_t unclamped_window(void)
{
    char text[128];
    unsigned long lo, def, hi;
    if (specx_kfile_read("/proc/sys/net/ipv4/tcp_rmem", text, sizeof text) < 0 ||
        sscanf(text, "%lu %lu %lu", &lo, &def, &hi) != 3)
        return 6u << 20;
    return (uint32_t)hi;
}

/* Bytes the queued interfaces received, from /proc/net/dev: it shows the reader's network
 * namespace, where /sys/class/net shows the one /sys was mounted in (nsenter --net keeps the
 * old /sys). */
static uint64_t link_received(const struct idle_net_queue *q)
{
    char text[65536]; /* 130 bytes an interface: room for the hundreds of a container host */
    if (specx_kfile_read("/proc/net/dev", text, sizeof text) < 0)
        return 0;
    uint64_t sum = 0;
    char *save;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[IF_NAMESIZE + 1];
        unsigned long long bytes;
        if (sscanf(line, " %16[^:]: %llu", name, &bytes) != 2)
            continue;
        for (size_t i = 0; i < q->n; i++)
            if (strcmp(name, q->devs[i].name) == 0)
                sum += bytes;
    }
    return sum;
}

/* The window the background may offer on a connection: the clamp while the foreground
 * receives; else twice what the link carries in one of its round trips, enough to fill the
 * link alone and little enough that a clamp takes hold within two round trips. TCP never
 * withdraws a window it has offered: an autotuned one of megabytes had to be used up first,
 * which let the background keep a third of the link for seconds (measured). At most MOST;
 * MOST itself without a clamp or a capacity (the control ends). */
static uint32_t window_for(uint32_t clamp, uint64_t capacity_bps, uint32_t rcv_rtt_us,
                           uint32_t most)
{
    if (clamp || capacity_bps == 0)
        return clamp ? clamp : most;
    uint64_t rtt = rcv_rtt_us ? rcv_rtt_us : DEFAULT_RTT_US;
    uint64_t window = capacity_bps / 8 * rtt / 1000000 * 2;
    return (uint32_t)(window < MIN_WINDOW ? MIN_WINDOW : window > most ? most : window);
}

/* What a visit of the background's connections sets (window_for: CLAMP, or with CAPACITY_BPS
 * 0 and no clamp, MOST, no limit of ours), and what it adds up. */
struct socket_visit {
    uint32_t clamp, most;
    uint64_t capacity_bps;
    uint64_t received;
};

/* One established TCP connection of the background: adds what it received to V and limits
 * its window as V says. */
static void visit_socket(int sock, struct socket_visit *v)
{
    int proto = 0;
    socklen_t len = sizeof proto;
    if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0 || proto != IPPROTO_TCP)
        return;
    struct tcp_info info;
    len = sizeof info;
    if (getsockopt(sock, IPPROTO_TCP, TCP_INFO, &info, &len) < 0 ||
        info.tcpi_state != TCP_STATE_ESTABLISHED)
        return;
    v->received += info.tcpi_bytes_received;
    uint32_t window = window_for(v->clamp, v->capacity_bps, info.tcpi_rcv_rtt, v->most);
    /* The receive buffer too: the kernel's autotuning raises the window clamp whenever it
     * grows the buffer, and a buffer set by hand is one it no longer grows. */
    int rcvbuf = (int)(window > INT32_MAX / 2 ? INT32_MAX / 2 : window);
    setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    setsockopt(sock, IPPROTO_TCP, TCP_WINDOW_CLAMP, &window, sizeof window);
}

/* A socket of the background, through a duplicate in this process (pidfd_getfd): the
 * background's own descriptors are not touched, only its connections' settings. */
static void visit_fd(pid_t pid, int fd, const char *target, void *arg)
{
    struct socket_visit *v = arg;
    if (strncmp(target, "socket:", 7) != 0)
        return;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int sock = pidfd >= 0 ? (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0) : -1;
    if (sock >= 0) {
        visit_socket(sock, v);
        close(sock);
    }
    if (pidfd >= 0)
        close(pidfd);
}

/* The background's connections, each limited (see visit_socket); returns what they received. */
static uint64_t visit_group(const struct idle_net_receive *r, uint32_t clamp,
                            uint64_t capacity_bps)
{
    struct socket_visit v = { .clamp = clamp, .most = r->most_window,
                              .capacity_bps = capacity_bps };
    specx_cgroup_each_fd(r->group, visit_fd, &v);
    return v.received;
}

static uint64_t capacity_of(const struct idle_net_queue *q, uint64_t down_bps)
{
    uint64_t capacity = 0;
    for (size_t i = 0; i < q->n; i++)
        capacity += down_bps ? down_bps : q->devs[i].rate_bps;
    return capacity;
}

void idle_net_receive_start(struct idle_net_receive *r, const struct specx_cgroup *group,
                            const struct idle_net_queue *queue, uint64_t down_bps,
                            struct idle_hold *hold, uint64_t now_ns)
{
    *r = (struct idle_net_receive){ .group = group, .queue = queue, .hold = hold,
                                    .last_ns = now_ns };
    r->enabled = queue->n > 0 && queue->devs[0].rate_bps > 0;
    if (r->enabled) {
        r->capacity_bps = capacity_of(queue, down_bps);
        r->last_link_bytes = link_received(queue);
        r->most_window = unclamped_window();
        r->last_bg_bytes = visit_group(r, 0, r->capacity_bps);
        r->bg_counted = true;
    }
}

static uint64_t bits_per_second(uint64_t bytes, uint64_t ns)
{
    return ns ? bytes * 8 * 1000000000ull / ns : 0;
}

/* Moves to state NEXT: the hold set or ended, the new clamp set on every connection, and
 * SPENT_NS counted in the old state. */
static void enter(struct idle_net_receive *r, struct idle_recv_state next, uint64_t capacity,
                  uint64_t spent_ns)
{
    struct idle_recv_state old = r->state;
    if (old.clamp)
        r->clamped_ns += spent_ns;
    if (old.hold)
        r->held_ns += spent_ns;
    r->clamps += next.clamp && !old.clamp;
    r->holds += next.hold && !old.hold;
    if (next.hold != old.hold)
        idle_hold_set(r->hold, IDLE_HOLD_NET, next.hold);
    if (next.clamp != old.clamp)
        visit_group(r, next.clamp, capacity);
    r->state = next;
}

void idle_net_receive_tick(struct idle_net_receive *r, uint64_t now_ns)
{
    if (!r->enabled)
        return;
    uint64_t link = link_received(r->queue);
    uint64_t capacity = r->capacity_bps;
    uint64_t dt = now_ns - r->last_ns;
    uint64_t d_link = link > r->last_link_bytes ? link - r->last_link_bytes : 0;
    r->last_ns = now_ns;
    r->last_link_bytes = link;
    /* A quiet link decides nothing: the walk of the background's descriptors (a millisecond
     * for a thousand) is spared, and the next walk only takes a new count. */
    bool quiet = bits_per_second(d_link, dt) * 20 < capacity;
    if (quiet && r->state.clamp == 0) {
        r->bg_counted = false;
        return;
    }
    uint64_t bg = visit_group(r, r->state.clamp, capacity);
    /* Connections that closed take their count with them: never less than nothing. */
    uint64_t d_bg = bg > r->last_bg_bytes ? bg - r->last_bg_bytes : 0;
    uint64_t d_fg = d_link > d_bg ? d_link - d_bg : 0;
    if (r->bg_counted)
        enter(r, idle_recv_step(r->state, bits_per_second(d_fg, dt),
                                bits_per_second(d_link, dt), capacity), capacity, dt);
    r->last_bg_bytes = bg;
    r->bg_counted = true;
}

void idle_net_receive_stop(struct idle_net_receive *r, uint64_t now_ns)
{
    if (!r->enabled)
        return;
    enter(r, (struct idle_recv_state){ 0 }, 0, now_ns - r->last_ns);
    r->enabled = false;
    visit_group(r, 0, 0); /* no limit of ours left */
}
