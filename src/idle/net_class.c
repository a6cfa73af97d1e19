/* See net_class.h. */
#include "idle/net_class.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

/* sk->priority = IDLE_NET_BG_CLASS; allow the socket. Four instructions: no object file. */
static const struct bpf_insn set_priority[] = {
    { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = (int32_t)IDLE_NET_BG_CLASS },
    { .code = BPF_STX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_1, .src_reg = BPF_REG_2,
      .off = offsetof(struct bpf_sock, priority) },
    { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
    { .code = BPF_JMP | BPF_EXIT },
};

int idle_net_classify(const struct specx_cgroup *group, char *err, size_t errsize)
{
    if (group->version != SPECX_CG_V2)
        return specx_format_error(err, errsize, "no cgroup v2 group to classify sockets in");
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_CGROUP_INET_SOCK_CREATE);
    int prog = bpf_prog_load(BPF_PROG_TYPE_CGROUP_SOCK, "specx_idle_net", "GPL", set_priority,
                             sizeof set_priority / sizeof set_priority[0], &opts);
    if (prog < 0)
        return specx_format_error(err, errsize, "cannot load the socket classifier: %s",
                                  strerror(errno));
    int dir = open(group->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 || bpf_prog_attach(prog, dir, BPF_CGROUP_INET_SOCK_CREATE, 0) < 0) {
        int e = errno;
        if (dir >= 0)
            close(dir);
        close(prog);
        return specx_format_error(err, errsize, "cannot attach the socket classifier: %s",
                                  strerror(e));
    }
    close(dir);
    return prog;
}

void idle_net_unclassify(const struct specx_cgroup *group, int prog_fd)
{
    int dir = open(group->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        bpf_prog_detach2(prog_fd, dir, BPF_CGROUP_INET_SOCK_CREATE);
        close(dir);
    }
}
