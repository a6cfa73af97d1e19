/* Storage: the scheduler of each disk and whether it honours the idle I/O class that
 * speculative copies, share's prefetches and idle's background run in; FUSE, which specx slowfs
 * mounts its emulated device with; the page cache's drop, which cold benchmark runs need; swap
 * space; zram. */
#include "doctor/doctor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "kernel/kfile.h"

/* Devices whose requests another device serves (loop, device-mapper stacks below) or that have
 * no request queue (zram, ram disks): their scheduler orders nothing that reaches a disk. */
static bool virtual_device(const char *name)
{
    return strncmp(name, "loop", 4) == 0 || strncmp(name, "zram", 4) == 0 ||
           strncmp(name, "ram", 3) == 0 || strncmp(name, "dm-", 3) == 0 ||
           strncmp(name, "md", 2) == 0 || strncmp(name, "nbd", 3) == 0;
}

/* The scheduler in use, from a queue/scheduler text such as "none [mq-deadline] kyber bfq". */
static bool scheduler_in_use(const char *text, char *out, size_t size)
{
    const char *open = strchr(text, '['), *close = open ? strchr(open, ']') : NULL;
    if (!close)
        return false;
    snprintf(out, size, "%.*s", (int)(close - open - 1), open + 1);
    return true;
}

static void check_disk(struct doctor_report *r, const char *name)
{
    char path[320], text[256], sched[32];
    uint64_t sectors = 0, aging_ms = 0;
    snprintf(path, sizeof path, "/sys/block/%s/size", name);
    if (!specx_kfile_read_u64(path, &sectors) || sectors == 0)
        return;
    snprintf(path, sizeof path, "/sys/block/%s/queue/scheduler", name);
    if (specx_kfile_read(path, text, sizeof text) <= 0 ||
        !scheduler_in_use(text, sched, sizeof sched))
        return;
    struct doctor_check *c = doctor_add(r, "run, share, idle", "io-sched %s", name);
    /* mq-deadline keeps a queue per class since Linux 5.14, and says so by its aging knob. */
    snprintf(path, sizeof path, "/sys/block/%s/queue/iosched/prio_aging_expire", name);
    bool deadline_classes = strcmp(sched, "mq-deadline") == 0 &&
                            specx_kfile_read_u64(path, &aging_ms);
    if (strcmp(sched, "bfq") == 0 || strcmp(sched, "cfq") == 0) {
        doctor_found(c, "%s: %s honours the idle I/O class", name, sched);
        return;
    }
    if (deadline_classes) {
        doctor_found(c, "%s: mq-deadline honours the idle I/O class (served after the others; "
                     "an idle request waits at most %llu ms)", name,
                     (unsigned long long)aging_ms);
        return;
    }
    doctor_found(c, "%s: %s ignores the idle I/O class", name, sched);
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "background reads (run's copies, share's prefetches, idle's command) "
                       "compete with the foreground's on this disk");
    doctor_fix(c, "echo bfq > /sys/block/%s/queue/scheduler%s", name,
               strstr(text, "bfq") ? "" : " (after modprobe bfq)");
}

static void check_schedulers(struct doctor_report *r)
{
    size_t before = r->n;
    DIR *dir = specx_opendir_at(AT_FDCWD, "/sys/block");
    for (struct dirent *e; dir && (e = readdir(dir));)
        if (e->d_name[0] != '.' && !virtual_device(e->d_name))
            check_disk(r, e->d_name);
    if (dir)
        closedir(dir);
    if (r->n == before)
        doctor_found(doctor_add(r, "run, share, idle", "io-sched"),
                     "no disk with a request queue is visible here");
}

/* specx slowfs mounts with allow_other and controls the page cache: root only. */
static void check_fuse(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "slowfs, bench", "fuse");
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    if (e) {
        doctor_found(c, "/dev/fuse cannot be opened: %s", strerror(e));
        doctor_consequence(c, DOCTOR_MISSING, "specx slowfs cannot mount, specx bench cannot run");
        doctor_fix(c, e == ENOENT ? "modprobe fuse" : "run specx slowfs and specx bench as root");
    } else if (geteuid() != 0) {
        doctor_found(c, "/dev/fuse opens, but this user is not root");
        doctor_consequence(c, DOCTOR_MISSING,
                           "specx slowfs runs as root only (allow_other mounts, cache control), "
                           "and specx bench with it");
        doctor_fix(c, "run specx slowfs and specx bench as root");
    } else {
        doctor_found(c, "/dev/fuse opens");
    }
}

/* Opened for writing only: a write would empty the machine's page cache. */
static void check_drop_caches(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "bench (cold runs)", "drop_caches");
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        doctor_found(c, "/proc/sys/vm/drop_caches can be written");
        return;
    }
    doctor_found(c, "/proc/sys/vm/drop_caches: %s", strerror(errno));
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "specx bench cannot empty the page cache before a cold run");
    doctor_fix(c, "run specx bench as root");
}

/* Swap space in use, in KiB, from /proc/swaps; -1 if it cannot be read. */
static long long swap_kib(int *devices)
{
    char text[4096];
    long long total = 0;
    *devices = 0;
    if (specx_kfile_read("/proc/swaps", text, sizeof text) < 0)
        return -1;
    char *line = strchr(text, '\n'); /* past the header */
    for (char *save = NULL, *l = line ? strtok_r(line, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        long long size;
        if (sscanf(l, "%*s %*s %lld", &size) == 1) {
            total += size;
            (*devices)++;
        }
    }
    return total;
}

static void check_swap(struct doctor_report *r)
{
    int devices;
    long long kib = swap_kib(&devices);
    struct doctor_check *c = doctor_add(r, "share, run", "swap");
    if (kib > 0) {
        doctor_found(c, "%lld MiB of swap on %d device(s)", kib / 1024, devices);
        return;
    }
    doctor_found(c, "no swap space");
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "specx share's frozen jobs cannot be paged out, so together they must fit "
                       "in memory; no swapped page for run or share to bring back early");
    doctor_fix(c, "add swap: zram (zramctl --find --size 2G, mkswap, swapon) or a swap file");
}

static void check_zram(struct doctor_report *r)
{
    struct doctor_check *c = doctor_add(r, "bench", "zram");
    if (access("/sys/class/zram-control", F_OK) == 0) {
        doctor_found(c, "zram devices can be added");
        return;
    }
    doctor_found(c, "no zram (the module is not loaded, or the kernel lacks it)");
    doctor_consequence(c, DOCTOR_DEGRADED,
                       "specx bench makes the swap space of its swap workloads on a file instead "
                       "(a local disk, not FUSE or tmpfs)");
    doctor_fix(c, "modprobe zram");
}

void doctor_check_io(struct doctor_report *r)
{
    check_schedulers(r);
    check_fuse(r);
    check_drop_caches(r);
    check_swap(r);
    check_zram(r);
}
