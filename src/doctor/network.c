/* The network: specx idle queues its background's packets in an HTB class behind the
 * foreground's. Probed by making an HTB qdisc on the loopback device of a network namespace of
 * the probe's own, so that no interface of the machine is touched. */
#include "doctor/doctor.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernel/kfile.h"

#define CAP_NET_ADMIN_BIT 12

struct qdisc_request {
    struct nlmsghdr header;
    struct tcmsg tc;
    char attrs[128];
};

/* Appends attribute TYPE with LEN bytes of DATA to REQ; returns it (for nesting). */
static struct rtattr *add_attr(struct qdisc_request *req, unsigned short type, const void *data,
                               size_t len)
{
    struct rtattr *a = (struct rtattr *)((char *)req + NLMSG_ALIGN(req->header.nlmsg_len));
    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(len);
    if (len)
        memcpy(RTA_DATA(a), data, len);
    req->header.nlmsg_len = NLMSG_ALIGN(req->header.nlmsg_len) + RTA_ALIGN(a->rta_len);
    return a;
}

/* Sends REQ on a route socket and returns the kernel's answer: 0 or an errno. */
static int ask_kernel(struct qdisc_request *req)
{
    int sock = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (sock < 0)
        return errno;
    char answer[512];
    int e = send(sock, req, req->header.nlmsg_len, 0) < 0 ? errno : 0;
    ssize_t n = e ? -1 : recv(sock, answer, sizeof answer, 0);
    if (!e && n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
        e = n < 0 ? errno : EPROTO;
    if (!e) {
        const struct nlmsghdr *h = (const struct nlmsghdr *)answer;
        const struct nlmsgerr *err = NLMSG_DATA(h);
        e = h->nlmsg_type == NLMSG_ERROR ? -err->error : EPROTO;
    }
    close(sock);
    return e;
}

/* In a fresh network namespace: an HTB qdisc at the root of its loopback device. */
static int make_htb(void *unused)
{
    if (unshare(CLONE_NEWNET) < 0 && unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
        return -1;
    struct qdisc_request req = {
        .header = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg)), .nlmsg_type = RTM_NEWQDISC,
                    .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL },
        .tc = { .tcm_family = AF_UNSPEC, .tcm_ifindex = (int)if_nametoindex("lo"),
                .tcm_handle = 0x10000, .tcm_parent = TC_H_ROOT },
    };
    struct tc_htb_glob glob = { .version = 3, .rate2quantum = 10 };
    add_attr(&req, TCA_KIND, "htb", 4);
    struct rtattr *options = add_attr(&req, TCA_OPTIONS, NULL, 0);
    add_attr(&req, TCA_HTB_INIT, &glob, sizeof glob);
    options->rta_len = (unsigned short)((char *)&req + req.header.nlmsg_len - (char *)options);
    errno = ask_kernel(&req);
    return errno ? -1 : 0;
}

static bool have_net_admin(void)
{
    char status[4096];
    uint64_t caps;
    return specx_kfile_read("/proc/self/status", status, sizeof status) > 0 &&
           specx_kfile_key_hex(status, "CapEff:", &caps) && (caps >> CAP_NET_ADMIN_BIT & 1);
}

void doctor_check_network(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "idle (network)", "htb");
    int e = doctor_in_child(make_htb, NULL);
    if (e) {
        doctor_found(c, "no HTB qdisc can be made: %s", strerror(e));
        doctor_consequence(c, DOCTOR_DEGRADED,
                           "specx idle's background sends at the foreground's priority");
        doctor_fix(c, e == ENOENT ? "a kernel with sch_htb (CONFIG_NET_SCH_HTB, modprobe sch_htb)"
                                  : "run specx idle as root");
        return;
    }
    if (!have_net_admin()) {
        doctor_found(c, "HTB works, but this user lacks CAP_NET_ADMIN for the machine's "
                     "interfaces");
        doctor_consequence(c, DOCTOR_DEGRADED,
                           "specx idle's background sends at the foreground's priority");
        doctor_fix(c, "run specx idle as root");
        return;
    }
    doctor_found(c, "an HTB qdisc can be made (probed in a network namespace of its own)");
}
