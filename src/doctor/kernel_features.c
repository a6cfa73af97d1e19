/* The kernel's features specx builds on, each probed by using it: the kernel version and
 * cachestat(2), PSI and its triggers, fanotify, overlayfs, userfaultfd, seccomp filters with
 * user notification, and ptrace (Yama). */
#include "doctor/doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/kfile.h"
#include "kernel/psi.h"

/* cachestat(2) arrived in Linux 6.5; the system headers may predate it. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

static void check_kernel_version(struct doctor_report *r)
{
    struct utsname u;
    unsigned major = 0, minor = 0;
    struct doctor_check *c = doctor_add(r, "run", "kernel");
    if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2) {
        doctor_found(c, "the kernel's release cannot be read");
        doctor_consequence(c, DOCTOR_DEGRADED, "the checks below say what works");
        return;
    }
    doctor_found(c, "Linux %s on %s", u.release, u.machine);
    if (major < 6 || (major == 6 && minor < 5)) {
        doctor_consequence(c, DOCTOR_DEGRADED, "older than 6.5, which specx is built for");
        doctor_fix(c, "Linux 6.5 or newer");
    }
}

/* cachestat(2) on the first page of FD: 0 or errno. */
static int cachestat_first_page(int fd)
{
    struct { uint64_t off, len; } range = { 0, 4096 };
    uint64_t counts[5];
    return syscall(__NR_cachestat, fd, &range, counts, 0) < 0 ? errno : 0;
}

/* cachestat(2) on a file this user made, then on one it can read but neither owns nor may
 * write: the kernel tells a file's page cache only to those who own it or may write it (or
 * have CAP_FOWNER), and mincore(2) has the same rule. */
static void check_cachestat(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "run, share", "cachestat");
    const char *others = "/etc/passwd";
    FILE *own = tmpfile();
    int own_e = own ? cachestat_first_page(fileno(own)) : errno;
    if (own)
        fclose(own);
    int fd = open(others, O_RDONLY | O_CLOEXEC);
    int others_e = fd < 0 ? errno : cachestat_first_page(fd);
    if (fd >= 0)
        close(fd);
    if (own_e != 0) {
        doctor_found(c, "cachestat(2) fails: %s", strerror(own_e));
        doctor_consequence(c, DOCTOR_DEGRADED,
                           "residency is asked through mincore(2), which maps each range first");
        doctor_fix(c, "Linux 6.5 or newer");
    } else if (others_e == EPERM) {
        doctor_found(c, "cachestat(2) answers for files this user owns or may write, not for "
                     "others' (%s: %s)", others, strerror(others_e));
        doctor_consequence(c, DOCTOR_DEGRADED,
                           "specx run cannot tell a stall on others' files (system files, shared "
                           "data): those reads pass uncounted, with no speculation");
        doctor_fix(c, "run specx as the owner of the data, or as root");
    } else {
        doctor_found(c, "cachestat(2) answers%s", others_e == 0 ? ", for others' files too" : "");
    }
}

static void check_psi(struct doctor_report *r)
{
    struct specx_psi psi;
    struct doctor_check *c = doctor_add(r, "run, idle", "psi");
    if (specx_psi_read("/proc/pressure/memory", &psi)) {
        doctor_found(c, "/proc/pressure/memory is readable (%.2f%% stalled over 10 s)",
                     psi.some.avg10);
        return;
    }
    int e = errno;
    doctor_found(c, "/proc/pressure/memory: %s", strerror(e));
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "run's memory control and idle's memory yield see no stalls in v2 groups");
    doctor_fix(c, e == EOPNOTSUPP ? "boot with psi=1" : "a kernel built with CONFIG_PSI=y");
}

/* Arms a trigger on the machine's memory pressure with a window of WINDOW_US; 0 or errno. */
static int arm_psi_trigger(unsigned window_us)
{
    char text[64];
    int fd = open("/proc/pressure/memory", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int len = snprintf(text, sizeof text, "some 150000 %u", window_us);
    int e = write(fd, text, (size_t)len + 1) < 0 ? errno : 0;
    close(fd);
    return e;
}

/* specx samples PSI's totals rather than arming triggers, so a trigger's limits cost nothing
 * here; the line says what a trigger would get, which is what decided that design. */
static void check_psi_triggers(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "none (sampled)", "psi-triggers");
    int short_window = arm_psi_trigger(1000000), long_window = arm_psi_trigger(2000000);
    if (short_window == 0)
        doctor_found(c, "a trigger with a 1 s window can be armed");
    else if (long_window == 0)
        doctor_found(c, "triggers only with windows of whole 2 s: a 1 s window is refused (%s): "
                     "no CAP_SYS_RESOURCE", strerror(short_window));
    else
        doctor_found(c, "no trigger can be armed (%s)%s", strerror(long_window),
                     long_window == EPERM ? ": no CAP_SYS_RESOURCE" : "");
    if (short_window != 0)
        doctor_consequence(c, DOCTOR_OK,
                           "none: specx samples PSI every 50 ms instead of arming a trigger");
}

static void check_fanotify(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "idle --isolate", "fanotify");
    /* What specx idle asks for: an unlimited queue, and a mark on a whole mount. */
    int fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE,
                           O_RDONLY | O_LARGEFILE | O_CLOEXEC);
    int e = fd < 0 ? errno
            : fanotify_mark(fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN | FAN_ONDIR, AT_FDCWD,
                            "/") < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    if (e == 0) {
        doctor_found(c, "fanotify watches a whole mount");
        return;
    }
    doctor_found(c, "fanotify %s: %s", fd < 0 ? "cannot start" : "cannot watch a mount",
                 strerror(e));
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "idle --isolate cannot see what the command reads: any change by others "
                       "in the isolated directories counts as a conflict");
    doctor_fix(c, e == EPERM ? "run specx idle as root (CAP_SYS_ADMIN)"
                             : "a kernel built with CONFIG_FANOTIFY=y");
}

/* The probe's directories, in a fresh one of its own, and what overlayfs makes in its work
 * directory (removed first). */
static const char *const overlay_dirs[] = { "lower", "upper", "work", "merged" };
static const char *const overlay_made[] = { "work/work", "work/index" };

/* In a mount namespace of its own, as specx idle --isolate does; in directory TOP. */
static int mount_overlay(void *top)
{
    if (chdir(top) < 0 || unshare(CLONE_NEWNS) < 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("overlay", "merged", "overlay", 0, "lowerdir=lower,upperdir=upper,workdir=work") < 0)
        return -1;
    return umount("merged");
}

/* Makes the probe's directories in TOP and mounts the overlay: 0 or errno. */
static int probe_overlay(char *top)
{
    int dir = open(top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return errno;
    int e = 0;
    for (size_t i = 0; i < sizeof overlay_dirs / sizeof *overlay_dirs && !e; i++)
        e = mkdirat(dir, overlay_dirs[i], 0700) < 0 ? errno : 0;
    if (!e)
        e = doctor_in_child(mount_overlay, top);
    for (size_t i = 0; i < sizeof overlay_made / sizeof *overlay_made; i++)
        unlinkat(dir, overlay_made[i], AT_REMOVEDIR);
    for (size_t i = 0; i < sizeof overlay_dirs / sizeof *overlay_dirs; i++)
        unlinkat(dir, overlay_dirs[i], AT_REMOVEDIR);
    close(dir);
    return e;
}

static void check_overlayfs(struct doctor_report *r)
{
    char top[PATH_MAX];
    struct doctor_check *c = doctor_add(r, "idle --isolate", "overlayfs");
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int n = snprintf(top, sizeof top, "%s/specx-doctor-XXXXXX", tmp);
    int e = n < 0 || (size_t)n >= sizeof top ? ENAMETOOLONG : !mkdtemp(top) ? errno : 0;
    if (e) {
        doctor_found(c, "not probed: no directory can be made in %s: %s", tmp, strerror(e));
        doctor_consequence(c, DOCTOR_DEGRADED, "whether specx idle --isolate can run is unknown");
        doctor_fix(c, "set TMPDIR to a directory this user may write");
        return;
    }
    e = probe_overlay(top);
    rmdir(top);
    if (e == 0) {
        doctor_found(c, "an overlay mounts in a private mount namespace");
        return;
    }
    doctor_found(c, "no overlay could be mounted: %s", strerror(e));
    doctor_consequence(c, DOCTOR_MISSING, "specx idle --isolate cannot run");
    doctor_fix(c, e == EPERM ? "run specx idle --isolate as root (CAP_SYS_ADMIN)"
                             : "a kernel with overlayfs (CONFIG_OVERLAY_FS, modprobe overlay)");
}

/* As a speculative copy opens it (src/run/runtime/refork/lazy_fill.c): the full kind, else the one
 * limited to faults in user mode, which vm.unprivileged_userfaultfd=0 still allows. */
static void check_userfaultfd(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "run --refork=fast", "userfaultfd");
    uint64_t sysctl = 0;
    bool have_sysctl = specx_kfile_read_u64("/proc/sys/vm/unprivileged_userfaultfd", &sysctl);
    bool user_mode = false;
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == EPERM) {
        user_mode = true;
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    }
    struct uffdio_api api = { .api = UFFD_API };
    int e = fd < 0 ? errno : ioctl(fd, UFFDIO_API, &api) < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    char setting[64] = "";
    if (have_sysctl)
        snprintf(setting, sizeof setting, " (vm.unprivileged_userfaultfd=%llu)",
                 (unsigned long long)sysctl);
    if (e == 0) {
        doctor_found(c, "userfaultfd works%s%s",
                     user_mode ? ", for faults in user mode only, which is what copies take" : "",
                     setting);
        return;
    }
    doctor_found(c, "userfaultfd fails: %s%s", strerror(e), setting);
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "run's copies are plain clones: each refork copies the program's page "
                       "tables, slower for large programs");
    doctor_fix(c, e == EPERM ? "sysctl vm.unprivileged_userfaultfd=1"
                             : "a kernel built with CONFIG_USERFAULTFD=y");
}

/* Installs a filter that allows everything, asking for a listener if *WANT_LISTENER; 0 or -1
 * with errno. */
static int install_filter(void *want_listener)
{
    struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog prog = { .len = 1, .filter = &allow };
    unsigned flags = *(bool *)want_listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -1;
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) < 0 ? -1 : 0;
}

static void check_seccomp(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "run", "seccomp");
    bool plain = false, with_listener = true;
    int filter = doctor_in_child(install_filter, &plain);
    int listener = filter ? filter : doctor_in_child(install_filter, &with_listener);
    if (filter) {
        doctor_found(c, "no seccomp filter can be installed: %s", strerror(filter));
        doctor_consequence(c, DOCTOR_MISSING,
                           "specx run cannot seal a speculative copy: it runs programs without "
                           "speculation");
        doctor_fix(c, "a kernel built with CONFIG_SECCOMP_FILTER=y");
    } else if (listener) {
        doctor_found(c, "seccomp filters work, user notification does not: %s",
                     strerror(listener));
        doctor_consequence(c, DOCTOR_DEGRADED,
                           "static and Go programs run without speculation (their copies are "
                           "served through user notification)");
        doctor_fix(c, "Linux 5.0 or newer");
    } else {
        doctor_found(c, "seccomp filters and user notification work");
    }
}

/* What specx run's supervisor does to a static or Go program it launched: seize it. */
static int seize_a_child(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0) {
        pause();
        _exit(0);
    }
    int e = ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0 ? errno : 0;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return e;
}

static void check_ptrace(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "run (static, Go)", "ptrace");
    uint64_t scope;
    char yama[64] = "no Yama";
    if (specx_kfile_read_u64("/proc/sys/kernel/yama/ptrace_scope", &scope))
        snprintf(yama, sizeof yama, "Yama ptrace_scope %llu", (unsigned long long)scope);
    int e = seize_a_child();
    if (e == 0) {
        doctor_found(c, "a child can be traced (%s)", yama);
        return;
    }
    doctor_found(c, "a child cannot be traced: %s (%s)", strerror(e), yama);
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "static and Go programs run without speculation (the supervisor holds "
                       "their threads with ptrace)");
    doctor_fix(c, "sysctl kernel.yama.ptrace_scope=1 (or 0)");
}

void doctor_check_kernel(struct doctor_report *r)
{
    check_kernel_version(r);
    check_cachestat(r);
    check_psi(r);
    check_psi_triggers(r);
    check_fanotify(r);
    check_overlayfs(r);
    check_userfaultfd(r);
    check_seccomp(r);
    check_ptrace(r);
}
