/* Private file offsets and copy-on-write mappings for the speculative process (§4.1.1, first
 * restriction). See privatize.h. Only system calls here: the caller is a child cloned from a
 * possibly multithreaded program, so malloc and stdio locks may be held by threads it lost. */
#include "run/runtime/sandbox/privatize.h"
#include "kernel/kfile.h"
#include "kernel/maps.h"
#include "kernel/proc_path.h"
#include "kernel/raw.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

bool specx_safe_file_type(const struct stat *st)
{
    if (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode))
        return true;
    /* Memory devices (major 1): null 3, zero 5, full 7, random 8, urandom 9. */
    if (S_ISCHR(st->st_mode) && major(st->st_rdev) == 1) {
        unsigned int minor_nr = minor(st->st_rdev);
        return minor_nr == 3 || minor_nr == 5 || minor_nr == 7 || minor_nr == 8 || minor_nr == 9;
    }
    return false;
}

/* Regular files whose reads take data away from someone else. */
static bool consumed_by_reading(int fd, const struct stat *st)
{
    struct statfs fs;
    if (fstatfs(fd, &fs) < 0)
        return true;
    if (fs.f_type == DEBUGFS_MAGIC || fs.f_type == TRACEFS_MAGIC)
        return true;
    struct stat kmsg;
    return fs.f_type == PROC_SUPER_MAGIC && stat("/proc/kmsg", &kmsg) == 0 &&
           kmsg.st_ino == st->st_ino && kmsg.st_dev == st->st_dev;
}

bool specx_safe_to_read(int fd, const struct stat *st)
{
    return specx_safe_file_type(st) && !consumed_by_reading(fd, st);
}

/* --- descriptors --------------------------------------------------------------------------- */

int specx_open_refusal(int probe, long flags, struct stat *st)
{
    memset(st, 0, sizeof *st);
    if (fstat(probe, st) < 0 || !specx_safe_to_read(probe, st))
        /* O_NOFOLLOW on a symbolic link: what the open itself would have said. */
        return S_ISLNK(st->st_mode) ? -ELOOP : -EPERM;
    if ((flags & O_ACCMODE) == O_RDWR && S_ISDIR(st->st_mode))
        return -EISDIR; /* what an O_RDWR open of a directory says */
    return 0;
}

int specx_open_noatime(const char *path, int flags)
{
    int fd = open(path, flags | O_NOATIME);
    return fd < 0 && errno == EPERM ? open(path, flags) : fd;
}

/* Flags of the original description that change what a read returns; the rest (write mode,
 * O_APPEND) is moot in a process that cannot write. */
#define READ_AFFECTING_FLAGS (O_DIRECT | O_NOATIME | O_NONBLOCK)

/* Where the copy finds the program's descriptors: the table of the thread that cloned it, which
 * it no longer holds (specx_privatize_fds). */
struct program_fds {
    pid_t pid, tid;
};

/* The octal number after "flags:" in TEXT (an fdinfo file), or false. */
static bool parse_fdinfo_flags(const char *text, unsigned *flags)
{
    const char *f = strstr(text, "flags:");
    if (!f)
        return false;
    for (f += 6; *f == '\t' || *f == ' '; f++)
        ;
    *flags = 0;
    for (; *f >= '0' && *f <= '7'; f++)
        *flags = *flags * 8 + (unsigned)(*f - '0');
    return true;
}

/* The offset and open flags (O_CLOEXEC included) of the program's descriptor FD now; false if
 * it is not open any more. */
static bool program_fd_info(const struct program_fds *prog, int fd, uint64_t *pos,
                            unsigned *flags)
{
    char path[SPECX_PROC_TASK_FD_PATH_MAX], text[512];
    specx_proc_task_fd_path(path, prog->pid, prog->tid, "fdinfo", fd);
    return specx_kfile_read(path, text, sizeof text) > 0 &&
           specx_kfile_key_u64(text, "pos:", pos) && parse_fdinfo_flags(text, flags);
}

/* A new, private description of the file the program's FD names, opened with FLAGS: through
 * an O_PATH descriptor first (all FLAGS asks for if it has O_PATH), which opens no driver and
 * sends no file-system request, so that a file whose opening or reading has effects is never
 * opened (specx_safe_to_read). -1 when there is none. */
static int open_program_file(const struct program_fds *prog, int fd, int flags)
{
    char path[SPECX_PROC_TASK_FD_PATH_MAX];
    specx_proc_task_fd_path(path, prog->pid, prog->tid, "fd", fd);
    int probe = open(path, O_PATH | O_CLOEXEC);
    if (probe < 0 || (flags & O_PATH))
        return probe;
    struct stat st;
    int copy = -1;
    if (fstat(probe, &st) == 0 && specx_safe_to_read(probe, &st)) {
        char self[SPECX_PROC_FD_PATH_MAX];
        specx_proc_fd_path(self, probe);
        copy = specx_open_noatime(self, flags | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
    }
    close(probe);
    return copy;
}

/* The copy's own description in place of the program's FD (offset POS, open flags FLAGS): the
 * program's file read-only at its offset (directories too: getdents continues from the
 * position); O_PATH again for an O_PATH descriptor (it has no offset and reads nothing);
 * /dev/null write-only where the program's is write-only (reads fail as the program's would).
 * -1 for everything else, which becomes /dev/null. */
static int private_description(const struct program_fds *prog, int fd, uint64_t pos,
                               unsigned flags)
{
    if ((flags & O_ACCMODE) == O_WRONLY)
        return open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (flags & O_PATH)
        return open_program_file(prog, fd, O_PATH);
    int copy = open_program_file(prog, fd,
                                 O_RDONLY | O_CLOEXEC | O_NOCTTY | (flags & READ_AFFECTING_FLAGS));
    if (copy >= 0 && pos > 0 && lseek(copy, (off_t)pos, SEEK_SET) != (off_t)pos) {
        close(copy);
        copy = -1;
    }
    return copy;
}

/* Puts the copy's own description (or /dev/null) at FD, with the program's close-on-exec
 * flag. A descriptor the program closed meanwhile stays closed. */
static int privatize_fd(const struct program_fds *prog, int fd, int devnull)
{
    uint64_t pos;
    unsigned flags;
    if (!program_fd_info(prog, fd, &pos, &flags))
        return 0;
    int copy = private_description(prog, fd, pos, flags);
    int dup_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
    if (copy == fd) /* it came out at the number itself */
        return fcntl(fd, F_SETFD, dup_flags ? FD_CLOEXEC : 0) < 0 ? -errno : 0;
    int ok = dup3(copy >= 0 ? copy : devnull, fd, dup_flags);
    int err = errno;
    if (copy >= 0)
        close(copy);
    return ok < 0 ? -err : 0;
}

/* Parses a decimal descriptor number; -1 for "." and "..". */
static int parse_fd_name(const char *name)
{
    int fd = 0;
    if (*name < '0' || *name > '9')
        return -1;
    for (; *name; name++)
        fd = fd * 10 + (*name - '0');
    return fd;
}

struct linux_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* Moves the new descriptor FD above every number the program uses (its table's size,
 * FDSize), so that filling the program's numbers never lands on it. */
static int above_program_fds(const struct program_fds *prog, int fd)
{
    char path[SPECX_PROC_PID_PATH_MAX], text[4096];
    uint64_t size = 0;
    specx_proc_pid_path(path, prog->tid, "status");
    if (fd < 0 || specx_kfile_read(path, text, sizeof text) <= 0 ||
        !specx_kfile_key_u64(text, "FDSize:", &size) || size > INT_MAX - 2) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)size);
    close(fd);
    return high;
}

int specx_detach_fds(void)
{
    return specx_raw_syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) < 0 ? -errno : 0;
}

int specx_privatize_fds(pid_t program, pid_t thread)
{
    const struct program_fds prog = { program, thread };
    char dir_path[SPECX_PROC_TASK_FD_PATH_MAX];
    specx_proc_task_fd_path(dir_path, program, thread, "fd", -1);
    int devnull = above_program_fds(&prog, open("/dev/null", O_RDWR | O_CLOEXEC));
    int dir = above_program_fds(&prog, open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    int err = devnull < 0 || dir < 0 ? -EACCES : 0;
    /* Streaming is safe: every descriptor opened meanwhile is closed before the next read. */
    char buf[4096] __attribute__((aligned(8)));
    long n = 0;
    while (err == 0 && (n = specx_raw_syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long pos = 0; pos < n && err == 0;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + pos);
            int fd = parse_fd_name(d->d_name);
            if (fd >= 0 && fd != dir && fd != devnull)
                err = privatize_fd(&prog, fd, devnull);
            pos += d->d_reclen;
        }
    }
    if (err == 0 && n < 0)
        err = -errno;
    if (dir >= 0)
        close(dir);
    if (devnull >= 0)
        close(devnull);
    return err;
}

/* --- mappings ------------------------------------------------------------------------------ */

/* Set by specx_privatize_mappings: see internal_shmem_dev. */
static dev_t shmem_dev;
/* Whether copy_over ran since specx_privatize_mappings began. */
static bool copied_any;

/* Opens PATH read-only if it is the regular file mapped by M. It is looked at before it is
 * opened: opening a device again runs its driver's open. Returns the descriptor or -1. */
static int open_if_same_regular_file(const char *path, const struct specx_mapping *m)
{
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != m->inode ||
        st.st_dev != m->dev)
        return -1;
    return specx_open_noatime(path, O_RDONLY | O_CLOEXEC);
}

/* See privatize.h. Only regular files qualify (shmem objects are regular): a private mapping
 * of a device or an anonymous inode (io_uring rings) could still reach the object, so the
 * caller copies those (or, for devices, refuses). */
int specx_open_mapped_file(const struct specx_mapping *m)
{
    char map_file[SPECX_PROC_MAP_FILES_PATH_MAX];
    specx_proc_map_files_path(map_file, m->start, m->end);
    int fd = open_if_same_regular_file(map_file, m);
    return fd >= 0 || m->path[0] != '/' ? fd : open_if_same_regular_file(m->path, m);
}

/* Pages whose residency one mincore call reports (the vector is on the stack). */
#define RESIDENCY_STEP 4096ul

/* Copies N bytes, populating the destination in one call rather than a fault per page
 * (measured 20-25% faster). */
static void populate_and_copy(char *dst, const char *src, size_t n)
{
    specx_raw_madvise(dst, n, MADV_POPULATE_WRITE);
    memcpy(dst, src, n);
}

/* Copies the pages of [src, src+len) that are resident into DST (fresh zero memory). For
 * shared memory of the kernel's internal shmem mount (shared anonymous, SysV, memfd) a page
 * that is not resident was never written, so it is zero already: PostgreSQL's 128 MiB buffer
 * pool took 60-85 ms to copy whole at every creation of a speculative process, though only a
 * few MiB of it held data. Without swap this is exact; a page swapped out reads as zero here,
 * which can mislead the copy but never the program. */
static void copy_resident_pages(char *dst, const char *src, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec[RESIDENCY_STEP];
    for (size_t off = 0; off < len; off += RESIDENCY_STEP * page) {
        size_t step = len - off < RESIDENCY_STEP * page ? len - off : RESIDENCY_STEP * page;
        if (mincore((void *)(src + off), step, vec) < 0) {
            populate_and_copy(dst + off, src + off, step);
            continue;
        }
        size_t pages = step / page;
        for (size_t i = 0; i < pages;) {
            size_t j = i;
            while (j < pages && (vec[j] & 1))
                j++;
            if (j > i)
                populate_and_copy(dst + off + i * page, src + off + i * page, (j - i) * page);
            i = j + 1;
        }
    }
}

/* Copies [addr, addr+len) into a private anonymous mapping and moves that over the original:
 * mremap replaces the range atomically, so no instant exists where the address is unmapped.
 * With SPARSE, only the resident pages are copied (copy_resident_pages). */
static int copy_over(unsigned long addr, size_t len, int prot, bool sparse)
{
    void *src = (void *)addr;
    if (!(prot & PROT_READ) && mprotect(src, len, prot | PROT_READ) < 0)
        return -errno;
    void *copy =
        specx_raw_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED)
        return -errno;
    copied_any = true;
    if (sparse)
        copy_resident_pages(copy, src, len);
    else
        populate_and_copy(copy, src, len);
    if (mprotect(copy, len, prot) < 0 ||
        mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, src) == MAP_FAILED) {
        int err = -errno;
        munmap(copy, len);
        return err;
    }
    return 0;
}

/* The device of the kernel's internal shmem mount, which backs shared anonymous, SysV and
 * memfd memory (a memfd shows it), or 0 (none: then nothing is copied sparsely). */
static dev_t internal_shmem_dev(void)
{
    int fd = (int)specx_raw_syscall(SYS_memfd_create, "specx", MFD_CLOEXEC);
    struct stat st;
    dev_t dev = fd >= 0 && fstat(fd, &st) == 0 ? st.st_dev : 0;
    if (fd >= 0)
        close(fd);
    return dev;
}

/* Whether M maps a device: reading device memory (registers) can itself be a side effect, so
 * such a mapping is not copied and the sandbox is refused instead. */
static bool maps_device(const struct specx_mapping *m)
{
    struct stat st;
    return m->path[0] == '/' && stat(m->path, &st) == 0 &&
           (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && st.st_ino == m->inode &&
           st.st_dev == m->dev;
}

/* Makes [start, end), a part of shared mapping M, private. A file-backed range is mapped again
 * MAP_PRIVATE from the same file: no data is copied or read, the child sees the same page-cache
 * pages until it writes (copy-on-write, exactly the paper's wording). */
static int privatize_range(const struct specx_mapping *m, unsigned long start, unsigned long end)
{
    bool sparse = m->dev != 0 && m->dev == shmem_dev;
    int fd = specx_open_mapped_file(m);
    if (fd < 0)
        return maps_device(m) ? -EPERM : copy_over(start, end - start, m->prot, sparse);
    void *at = specx_raw_mmap((void *)start, end - start, m->prot, MAP_PRIVATE | MAP_FIXED, fd,
                              (off_t)(m->offset + (start - m->start)));
    close(fd);
    return at == MAP_FAILED ? copy_over(start, end - start, m->prot, sparse) : 0;
}

/* Privatizes [start, end) of M minus the KEEP regions (the runtime's control region stays
 * shared: it is how the child reports its prefetches). */
static int privatize_outside(const struct specx_mapping *m, unsigned long start, unsigned long end,
                             const struct specx_region *keep, size_t nkeep)
{
    unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < nkeep; i++) {
        /* Whole pages: a mapping is shared or private page by page. */
        unsigned long ks = (unsigned long)keep[i].addr & ~(page - 1);
        unsigned long ke = ((unsigned long)keep[i].addr + keep[i].len + page - 1) & ~(page - 1);
        if (ks < end && ke > start) {
            int err = ks > start ? privatize_outside(m, start, ks, keep, nkeep) : 0;
            return err == 0 && ke < end ? privatize_outside(m, ke, end, keep, nkeep) : err;
        }
    }
    return privatize_range(m, start, end);
}

int specx_privatize_mappings(const struct specx_region *keep, size_t nkeep, bool *copied)
{
    shmem_dev = internal_shmem_dev();
    copied_any = false;
    char *buf = NULL;
    size_t size = 0;
    long len = specx_maps_read(&buf, &size);
    if (len < 0)
        return (int)len;
    int err = 0;
    for (char *line = buf; err == 0 && *line;) {
        struct specx_mapping m;
        line = specx_maps_parse_line(line, &m);
        if (m.shared)
            err = privatize_outside(&m, m.start, m.end, keep, nkeep);
    }
    munmap(buf, size);
    *copied = copied_any;
    return err;
}
