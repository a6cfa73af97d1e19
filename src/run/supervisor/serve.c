/* See serve.h. */
#include "run/supervisor/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel/clock.h"
#include "run/runtime/policy/horizon.h"
#include "run/runtime/policy/prefetch.h"
#include "kernel/proc_path.h"
#include "kernel/raw.h"
#include "kernel/residency.h"
#include "run/runtime/sandbox/privatize.h"

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

#define MAX_IOV 64
/* What a read returns when the copy must wait for its horizon. */
#define PARK INT64_MIN
/* Pages looked at by one residency query, and the data copied into the copy at once. */
#define STEP_PAGES 256u
#define STEP_BYTES ((uint64_t)STEP_PAGES * SPECX_PAGE_SIZE)

/* ---- answers ---- */

static void answer(struct served_copy *c, const struct seccomp_notif *req, int64_t val, int err)
{
    struct seccomp_notif_resp resp = { .id = req->id, .val = err ? 0 : val, .error = -err };
    ioctl(c->oc.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

static void let_through(struct served_copy *c, const struct seccomp_notif *req)
{
    struct seccomp_notif_resp resp = { .id = req->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
    ioctl(c->oc.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

/* ---- the copy's buffers ---- */

/* A read's destination in the copy's memory, as (address, length) segments. */
struct remote {
    struct iovec seg[MAX_IOV];
    int n;
};

/* Writes DATA into the bytes [AT, AT + LEN) of the destination. */
static int remote_put(pid_t pid, const struct remote *r, uint64_t at, const void *data,
                      uint64_t len)
{
    struct iovec local = { (void *)data, len }, out[MAX_IOV];
    int n = 0;
    for (int i = 0; i < r->n && len > 0; i++) {
        if (at >= r->seg[i].iov_len) {
            at -= r->seg[i].iov_len;
            continue;
        }
        uint64_t take = r->seg[i].iov_len - at < len ? r->seg[i].iov_len - at : len;
        out[n++] = (struct iovec){ (char *)r->seg[i].iov_base + at, take };
        len -= take;
        at = 0;
    }
    return process_vm_writev(pid, &local, 1, out, (unsigned long)n, 0) < 0 ? -EFAULT : 0;
}

static uint64_t remote_size(const struct remote *r)
{
    uint64_t n = 0;
    for (int i = 0; i < r->n; i++)
        n += r->seg[i].iov_len;
    return n;
}

/* The iovec array of readv/preadv at ADDR (COUNT entries) in the copy's memory. */
static int remote_from_iov(pid_t pid, uint64_t addr, uint64_t count, struct remote *r)
{
    if (count > MAX_IOV)
        return -EINVAL; /* the copy may not read more at once; it only predicts worse */
    struct iovec local = { r->seg, count * sizeof r->seg[0] };
    struct iovec remote = { (void *)addr, count * sizeof r->seg[0] };
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)local.iov_len)
        return -EFAULT;
    r->n = (int)count;
    return 0;
}

/* The copy's descriptor the call names in its first argument; NULL if none is open there. */
static struct copy_fd *call_fd(struct served_copy *c, const struct seccomp_notif *req)
{
    return copy_fds_resolve(&c->oc.fds, (int)req->data.args[0]);
}

/* ---- reads: data in memory is copied, the rest prefetched (§4.1.2) ---- */

struct fetch {
    uint64_t ino;
    uint64_t off, end; /* the missing range gathered so far */
};

static bool horizon_full(const struct served_copy *c, uint64_t next)
{
    uint64_t now = specx_now_ns();
    uint64_t outstanding_bytes = 0;
    for (unsigned i = c->log.passed; i < c->log.n; i++)
        outstanding_bytes += c->log.rec[i].len;
    return specx_horizon_should_park(predictions_outstanding(&c->log),
                                     predictions_oldest_age(&c->log, now), c->horizon) ||
           specx_horizon_over_bytes(outstanding_bytes, next, c->memcg_bytes) ||
           c->log.n == PREDICTIONS_MAX;
}

static void prefetch(int fd, uint64_t off, uint64_t len)
{
    for (uint64_t end = off + len; off < end;) {
        uint64_t n = specx_prefetch_call_len(off, end);
        specx_raw_fadvise(fd, (off_t)off, (off_t)n, POSIX_FADV_WILLNEED);
        off += n;
    }
}

/* Logs the gathered range and prefetches it (live copies), unless all of it is on its way
 * already (the program's own read, the kernel's readahead, another copy's prefetch). */
static void fetch_flush(struct served_copy *c, int fd, struct fetch *f)
{
    uint64_t len = f->end - f->off;
    if (len == 0)
        return;
    struct prediction p = { .ino = f->ino, .off = f->off, .len = len, .copy_read = c->read,
                            .made_ns = specx_now_ns() };
    predictions_add(&c->log, p);
    f->off = f->end;
    if (c->dry) {
        c->counts->predictions++;
        return;
    }
    int64_t cached = specx_cached_pages(fd, p.off, len);
    if (cached >= 0 && (uint64_t)cached == specx_pages_spanned(p.off, len))
        return; /* on its way already */
    prefetch(fd, p.off, len);
    c->counts->prefetches++;
    c->counts->bytes += len;
}

static void fetch_add(struct served_copy *c, int fd, struct fetch *f, uint64_t off, uint64_t end)
{
    if (off != f->end) {
        fetch_flush(c, fd, f);
        f->off = off;
    }
    f->end = end;
}

/* Copies [OFF, END) of file FD, all of it in memory, to the destination at AT. */
static int copy_resident(pid_t pid, int fd, const struct remote *r, uint64_t at, uint64_t off,
                         uint64_t end)
{
    static char buf[STEP_BYTES];
    while (off < end) {
        ssize_t n = specx_raw_pread(fd, buf, end - off, (off_t)off);
        if (n <= 0)
            return n < 0 ? -errno : 0;
        int err = remote_put(pid, r, at, buf, (uint64_t)n);
        if (err)
            return err;
        at += (uint64_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* One step (at most STEP_PAGES pages) of a read of [OFF, END) into the destination at AT. */
static int read_step(struct served_copy *c, int fd, struct fetch *f, const struct remote *r,
                     uint64_t at, uint64_t off, uint64_t end)
{
    unsigned char vec[STEP_PAGES];
    if (specx_uptodate_pages(fd, off, end - off, vec) < 0) { /* cannot tell: take it as missing */
        fetch_add(c, fd, f, off, end);
        return 0;
    }
    uint64_t first = off & ~(uint64_t)(SPECX_PAGE_SIZE - 1);
    for (uint64_t run = off; run < end;) {
        bool here = vec[(run - first) / SPECX_PAGE_SIZE] & 1;
        uint64_t run_end = (run & ~(uint64_t)(SPECX_PAGE_SIZE - 1)) + SPECX_PAGE_SIZE;
        while (run_end < end && (vec[(run_end - first) / SPECX_PAGE_SIZE] & 1) == here)
            run_end += SPECX_PAGE_SIZE;
        if (run_end > end)
            run_end = end;
        int err = 0;
        if (here)
            err = copy_resident(c->oc.pid, fd, r, at + (run - off), run, run_end);
        else
            fetch_add(c, fd, f, run, run_end);
        if (err)
            return err;
        run = run_end;
    }
    return 0;
}

/* Serves a read of up to the destination's size at OFF of file F. Returns the bytes read,
 * -errno, or PARK when the copy must wait for its horizon (nothing done then). */
static int64_t read_file(struct served_copy *c, struct copy_fd *f, const struct remote *r,
                         uint64_t off, bool nowait)
{
    struct stat st;
    if (fstat(f->own, &st) < 0)
        return -errno;
    uint64_t len = specx_clamp_to_eof(off, remote_size(r), (uint64_t)st.st_size);
    if (len == 0)
        return 0;
    /* The page cache's state of a file is told only to its owner or a writer (cachestat and
     * mincore answer others EPERM): then every page is taken for missing and the copy runs on
     * what its buffer held, as the runtime's copy does. The supervisor never waits for data. */
    int64_t cached = specx_cached_pages(f->own, off, len);
    bool known = cached >= 0;
    bool resident = known && (uint64_t)cached == specx_pages_spanned(off, len);
    if (!resident && nowait)
        return -EAGAIN; /* preadv2(RWF_NOWAIT) says so of data not in memory */
    if (!resident && horizon_full(c, len))
        return PARK;
    bool sequential = off == 0 || off == f->read_end;
    struct fetch fetch = { .ino = st.st_ino, .off = off, .end = off };
    for (uint64_t done = 0; done < len && known;) {
        uint64_t step = len - done < STEP_BYTES ? len - done : STEP_BYTES;
        int err = read_step(c, f->own, &fetch, r, done, off + done, off + done + step);
        if (err)
            return err;
        done += step;
    }
    if (!known)
        fetch_add(c, f->own, &fetch, off, off + len);
    if (fetch.end == off + len) /* the read ends in missing data: reach on as the program will */
        fetch_add(c, f->own, &fetch, fetch.off,
                  specx_prefetch_end(sequential, off + len, (uint64_t)st.st_size));
    fetch_flush(c, f->own, &fetch);
    f->read_end = off + len;
    c->read += len;
    return (int64_t)len;
}

/* read, pread64, readv, preadv, preadv2. */
static int64_t serve_read(struct served_copy *c, const struct seccomp_notif *req)
{
    int nr = req->data.nr;
    const __u64 *a = req->data.args;
    struct copy_fd *f = call_fd(c, req);
    if (!f || f->kind == COPY_FD_UNREADABLE)
        return -EBADF;
    bool vector = nr == SYS_readv || nr == SYS_preadv || nr == SYS_preadv2;
    bool at_pos = nr == SYS_read || nr == SYS_readv || (nr == SYS_preadv2 && (int64_t)a[3] == -1);
    if (f->kind == COPY_FD_DIR)
        return -EISDIR;
    if (f->kind == COPY_FD_OTHER) /* the program's pipe, socket or terminal: not the copy's */
        return at_pos ? 0 : -ESPIPE;
    struct remote r = { .n = 1, .seg = { { (void *)a[1], a[2] } } };
    if (vector) {
        int err = remote_from_iov(c->oc.pid, a[1], a[2], &r);
        if (err)
            return err;
    }
    uint64_t off = at_pos ? f->pos : a[3];
    bool nowait = nr == SYS_preadv2 && (a[5] & RWF_NOWAIT);
    int64_t n = read_file(c, f, &r, off, nowait);
    if (n > 0 && at_pos)
        f->pos += (uint64_t)n;
    return n;
}

/* ---- offsets and directories ---- */

static int64_t serve_lseek(struct served_copy *c, const struct seccomp_notif *req)
{
    int64_t off = (int64_t)req->data.args[1], size, pos;
    int whence = (int)req->data.args[2];
    struct copy_fd *f = call_fd(c, req);
    struct stat st;
    if (!f)
        return -EBADF;
    if (f->kind == COPY_FD_DIR)
        return (pos = lseek(f->own, (off_t)off, whence)) < 0 ? -errno : pos;
    if (f->kind != COPY_FD_FILE)
        return -ESPIPE;
    if (fstat(f->own, &st) < 0)
        return -errno;
    size = st.st_size;
    if ((whence == SEEK_DATA || whence == SEEK_HOLE) && (off < 0 || off >= size))
        return -ENXIO;
    switch (whence) {
    case SEEK_SET: pos = off; break;
    case SEEK_CUR: pos = (int64_t)f->pos + off; break;
    case SEEK_END: pos = size + off; break;
    case SEEK_DATA: pos = off; break; /* as for a file without holes */
    case SEEK_HOLE: pos = size; break;
    default: return -EINVAL;
    }
    if (pos < 0)
        return -EINVAL;
    f->pos = (uint64_t)pos;
    return pos;
}

static int64_t serve_getdents(struct served_copy *c, const struct seccomp_notif *req)
{
    const __u64 *a = req->data.args;
    struct copy_fd *f = call_fd(c, req);
    if (!f)
        return -EBADF;
    if (f->kind != COPY_FD_DIR)
        return -ENOTDIR;
    static char buf[64 * 1024];
    size_t want = a[2] < sizeof buf ? a[2] : sizeof buf;
    long n = syscall(req->data.nr, f->own, buf, want);
    if (n <= 0)
        return n < 0 ? -errno : 0;
    struct remote r = { .n = 1, .seg = { { (void *)a[1], (size_t)n } } };
    int err = remote_put(c->oc.pid, &r, 0, buf, (uint64_t)n);
    return err ? err : n;
}

/* ---- opens: checked like the open trap's (sandbox_open_trap.c), made read-only here ---- */

/* The string at ADDR in the copy's memory. */
static int remote_path(pid_t pid, uint64_t addr, char *path, size_t size)
{
    size_t got = 0;
    while (got < size) {
        uint64_t page_left = SPECX_PAGE_SIZE - (addr + got) % SPECX_PAGE_SIZE;
        size_t want = page_left < size - got ? page_left : size - got;
        struct iovec local = { path + got, want }, remote = { (void *)(addr + got), want };
        if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)want)
            return -EFAULT;
        if (memchr(path + got, '\0', want))
            return 0;
        got += want;
    }
    return -ENAMETOOLONG;
}

/* The directory a relative path of the copy starts from: its working directory, or a
 * directory it holds. Returns a descriptor to close, or -errno. */
static int start_dir(struct served_copy *c, int dirfd)
{
    if (dirfd == AT_FDCWD) {
        char cwd[SPECX_PROC_PID_PATH_MAX];
        specx_proc_pid_path(cwd, c->oc.pid, "cwd");
        int fd = open(cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
    }
    struct copy_fd *f = copy_fds_resolve(&c->oc.fds, dirfd);
    if (!f)
        return -EBADF;
    if (f->kind != COPY_FD_DIR)
        return -ENOTDIR;
    int fd = dup(f->own);
    return fd < 0 ? -errno : fd;
}

/* Opens PATH (relative to DIRFD) for the copy, read-only, if it is safe to read
 * (privatize.h). Returns the supervisor's descriptor or -errno; *DIR tells a directory. */
static int checked_open(struct served_copy *c, int dirfd, const char *path, int flags, bool *dir)
{
    int base = path[0] == '/' ? AT_FDCWD : start_dir(c, dirfd);
    if (base < 0 && base != AT_FDCWD)
        return base;
    int probe = openat(base, path, O_PATH | O_CLOEXEC | (flags & (O_NOFOLLOW | O_DIRECTORY)));
    int err = probe < 0 ? -errno : 0;
    if (base >= 0)
        close(base);
    if (err)
        return err;
    struct stat st;
    int fd = -1;
    err = specx_open_refusal(probe, flags, &st);
    if (err == 0) {
        char self[SPECX_PROC_FD_PATH_MAX];
        specx_proc_fd_path(self, probe);
        fd = specx_open_noatime(self, O_RDONLY | O_CLOEXEC | (flags & O_DIRECTORY));
        err = fd < 0 ? -errno : 0;
    }
    close(probe);
    *dir = S_ISDIR(st.st_mode);
    return err ? err : fd;
}

static void serve_open(struct served_copy *c, const struct seccomp_notif *req)
{
    bool at = req->data.nr == SYS_openat;
    const __u64 *a = req->data.args;
    char path[PATH_MAX];
    int flags = (int)(at ? a[2] : a[1]);
    int err = remote_path(c->oc.pid, at ? a[1] : a[0], path, sizeof path);
    bool dir = false;
    int own = err ? err : checked_open(c, at ? (int)a[0] : AT_FDCWD, path, flags, &dir);
    if (own < 0) {
        answer(c, req, 0, -own);
        return;
    }
    struct seccomp_notif_addfd add = { .id = req->id, .flags = SECCOMP_ADDFD_FLAG_SEND,
                                       .srcfd = (uint32_t)own,
                                       .newfd_flags = (uint32_t)(flags & O_CLOEXEC) };
    int fd = ioctl(c->oc.listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
    if (fd < 0) {
        close(own);
        return; /* the copy is gone, or its call was interrupted: nothing was given */
    }
    copy_fds_opened(&c->oc.fds, fd, own, dir ? COPY_FD_DIR : COPY_FD_FILE);
    c->counts->opens++;
}

/* A descriptor the copy inherited exists only in the supervisor's table (copy_fds.h): its
 * close succeeds there, as the program's would; one opened for the copy is closed in it. */
static void serve_close(struct served_copy *c, const struct seccomp_notif *req)
{
    int fd = (int)req->data.args[0];
    const struct copy_fd *f = fd >= 0 && fd < COPY_FDS_MAX ? &c->oc.fds.fd[fd] : NULL;
    bool inherited = f && f->kind != COPY_FD_NONE && !f->in_copy;
    copy_fds_closed(&c->oc.fds, fd);
    if (inherited)
        answer(c, req, 0, 0);
    else
        let_through(c, req);
}

bool serve_call(struct served_copy *c, const struct seccomp_notif *req)
{
    int64_t v;
    switch (req->data.nr) {
    case SYS_open:
    case SYS_openat:
        serve_open(c, req);
        c->counts->calls++;
        return true;
    case SYS_close:
        serve_close(c, req);
        c->counts->calls++;
        return true;
    case SYS_lseek: v = serve_lseek(c, req); break;
    case SYS_getdents:
    case SYS_getdents64: v = serve_getdents(c, req); break;
    default: v = serve_read(c, req); break;
    }
    if (v == PARK)
        return false;
    answer(c, req, v < 0 ? 0 : v, v < 0 ? (int)-v : 0);
    c->counts->calls++;
    return true;
}

