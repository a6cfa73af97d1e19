/* See program_pagemap.h. Raw system calls: inside libspecx.so read() and pread() are the read
 * path's wrappers, which in the speculative process emulate reads of regular files (and a
 * pagemap's st_size is 0). */
#include "kernel/program_pagemap.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel/proc_path.h"
#include "kernel/raw.h"

/* pagemap has one entry per page of the program's address space (4 KiB on x86-64). */
#define PAGEMAP_PAGE 4096u

/* Descriptor numbers below the top of the table that the copy keeps for itself. */
#define OWN_FDS 64u

static int pagemap = -1;

int specx_fd_out_of_the_way(int fd)
{
    struct rlimit lim;
    if (fd < 0 || getrlimit(RLIMIT_NOFILE, &lim) < 0 || lim.rlim_cur < 2 * OWN_FDS)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(lim.rlim_cur - OWN_FDS));
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

bool specx_pagemap_open(pid_t program)
{
    if (pagemap >= 0)
        return true;
    char path[SPECX_PROC_PID_PATH_MAX];
    specx_proc_pid_path(path, program, "pagemap");
    pagemap = specx_fd_out_of_the_way(
        (int)specx_raw_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
    return pagemap >= 0;
}

size_t specx_pagemap_read(uintptr_t addr, size_t pages, uint64_t *entries)
{
    if (pagemap < 0)
        return 0;
    long got = specx_raw_syscall(SYS_pread64, pagemap, entries, pages * sizeof entries[0],
                       (off_t)(addr / PAGEMAP_PAGE * sizeof entries[0]));
    return got > 0 ? (size_t)got / sizeof entries[0] : 0;
}
