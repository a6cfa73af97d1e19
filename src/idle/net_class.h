/* The background's packets in a class of their own (Eggert 2002 ch. 4: idle-time networking
 * needs the background's packets told apart from the foreground's where they queue). Every
 * socket the command makes gets the priority IDLE_NET_BG_CLASS at creation, from a
 * BPF_CGROUP_INET_SOCK_CREATE program on its v2 group (bpf_sock.priority is writable there);
 * HTB takes a leaf class straight from a packet's priority (net_queue.h). */
#ifndef IDLE_NET_CLASS_H
#define IDLE_NET_CLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/cgroup.h"

/* The qdisc handle 1de0: and its classes: the root, the foreground's (the default), the
 * background's. */
#define IDLE_NET_HANDLE 0x1de00000u
#define IDLE_NET_ROOT_CLASS 0x1de00001u
#define IDLE_NET_FG_CLASS 0x1de00010u
#define IDLE_NET_BG_CLASS 0x1de00020u

/* Attaches the program to GROUP (a v2 group). Returns the program's descriptor (keep it to
 * detach), or -1 with a one-line reason in err. The attachment ends with the group. */
int idle_net_classify(const struct specx_cgroup *group, char *err, size_t errsize);

/* Detaches it: sockets made from now on are ordinary (the deadline's promotion). */
void idle_net_unclassify(const struct specx_cgroup *group, int prog_fd);

#endif
