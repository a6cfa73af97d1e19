/* See files.h. */
#include "share/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/maps.h"
#include "kernel/proc_path.h"
#include "kernel/residency.h"
#include "common/util.h"

/* The main thread captures a job's set at the end of its turn while the prefetching thread may
 * be reading it: each works on a copy taken under this lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The file PATH_FD names (an O_PATH descriptor) opened for reading without touching its access
 * time (the job's files must look as they would without specx share), or -1. */
static int open_quietly(int path_fd)
{
    char path[SPECX_PROC_FD_PATH_MAX];
    specx_proc_fd_path(path, path_fd);
    int fd = open(path, O_RDONLY | O_NOATIME | O_CLOEXEC);
    if (fd < 0 && errno == EPERM)
        fd = open(path, O_RDONLY | O_CLOEXEC);
    return fd;
}

/* The file at PATH (a job's /proc/PID/fd/N or map_files link), open, if it is still the regular
 * file DEV/INO and not empty; its stat in ST. The job may have put something else there since
 * it was last looked at: it is looked at through O_PATH, which opens nothing, so that a FIFO
 * or a device in its place is never opened (which could block, or act) by specx share. */
static int open_checked(const char *path, dev_t dev, ino_t ino, struct stat *st)
{
    int path_fd = open(path, O_PATH | O_CLOEXEC);
    if (path_fd < 0)
        return -1;
    int fd = -1;
    if (fstat(path_fd, st) == 0 && S_ISREG(st->st_mode) && st->st_size > 0 &&
        st->st_dev == dev && st->st_ino == ino)
        fd = open_quietly(path_fd);
    close(path_fd);
    return fd;
}

/* The runs of pages of FD's first SIZE bytes whose residency is RESIDENT (mincore: no page
 * is read). *N runs, or NULL. */
static struct share_file_run *runs_where(int fd, off_t size, bool resident, size_t *n)
{
    *n = 0;
    size_t pages = (size_t)specx_pages_spanned(0, (uint64_t)size);
    unsigned char *vec = malloc(pages);
    struct share_file_run *runs = NULL;
    size_t cap = 0;
    if (vec && specx_uptodate_pages(fd, 0, (uint64_t)size, vec) == 0) {
        for (size_t i = 0; i < pages; i++) {
            if ((bool)(vec[i] & 1) != resident)
                continue;
            if (*n && runs[*n - 1].first + runs[*n - 1].count == i) {
                runs[*n - 1].count++;
                continue;
            }
            if (!specx_grow(&runs, &cap, *n, sizeof *runs, 16))
                break;
            runs[(*n)++] = (struct share_file_run){ i, 1 };
        }
    }
    free(vec);
    return runs;
}

/* How many of the pages of F's remembered runs, within its SIZE now, are not in the page
 * cache: cachestat over each run (a job's file has a few), not a look at each page. */
static uint64_t pages_missing(int fd, const struct share_file *f, off_t size)
{
    uint64_t pages = specx_pages_spanned(0, (uint64_t)size), missing = 0;
    for (size_t r = 0; r < f->nruns && f->runs[r].first < pages; r++) {
        uint64_t end = f->runs[r].first + f->runs[r].count;
        uint64_t count = (end < pages ? end : pages) - f->runs[r].first;
        int64_t cached = specx_cached_pages(fd, f->runs[r].first * SPECX_PAGE_SIZE,
                                            count * SPECX_PAGE_SIZE);
        if (cached >= 0 && (uint64_t)cached < count)
            missing += count - (uint64_t)cached;
    }
    return missing;
}

/* The file of SET that is DEV/INO, or NULL. */
static const struct share_file *file_of(const struct share_files *set, dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->files[i].dev == dev && set->files[i].ino == ino)
            return &set->files[i];
    return NULL;
}

/* A copy of the runs of WAS (the file FD, remembered at the job's last turn; NULL: none) if
 * they are still exactly its pages in the page cache: all of them there, and as many as
 * cachestat counts in the whole file. Most of a job's files (its libraries) do not change
 * between its turns, and mincore costs a lookup a page. *N runs, or NULL. */
static struct share_file_run *runs_unchanged(int fd, const struct share_file *was, off_t size,
                                             size_t *n)
{
    *n = 0;
    if (!was || pages_missing(fd, was, size) != 0)
        return NULL;
    uint64_t remembered = 0;
    for (size_t r = 0; r < was->nruns; r++)
        remembered += was->runs[r].count;
    int64_t cached = specx_cached_pages(fd, 0, (uint64_t)size);
    struct share_file_run *runs = NULL;
    if (cached >= 0 && (uint64_t)cached == remembered &&
        (runs = malloc(was->nruns * sizeof *runs))) {
        memcpy(runs, was->runs, was->nruns * sizeof *runs);
        *n = was->nruns;
    }
    return runs;
}

/* Adds the file the job reaches at PATH, with its pages in the page cache now, if it is a
 * regular file not in SET yet and has any; BEFORE: the set of the job's last turn. */
static void add_file(struct share_files *set, const struct share_files *before, const char *path)
{
    struct stat st;
    /* Only regular files: opening a job's pipe or device, even for a moment, is visible to
     * it (a pipe's reader that closes would not make its writer's next write fail). */
    if (set->n == SHARE_FILES_MAX || stat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
        st.st_size == 0 || file_of(set, st.st_dev, st.st_ino))
        return;
    int fd = open_checked(path, st.st_dev, st.st_ino, &st);
    if (fd < 0)
        return;
    struct share_file f = { .dev = st.st_dev, .ino = st.st_ino };
    snprintf(f.path, sizeof f.path, "%s", path);
    f.runs = runs_unchanged(fd, file_of(before, st.st_dev, st.st_ino), st.st_size, &f.nruns);
    if (!f.runs)
        f.runs = runs_where(fd, st.st_size, true, &f.nruns);
    close(fd);
    if (f.nruns == 0) {
        free(f.runs);
        return;
    }
    struct share_file *grown = realloc(set->files, (set->n + 1) * sizeof *grown);
    if (!grown) {
        free(f.runs);
        return;
    }
    set->files = grown;
    set->files[set->n++] = f;
}

/* The files PID maps (/proc/PID/map_files names each mapping's file as the process sees it).
 * A library's segments are consecutive mappings of one file: it is looked at once. */
static void add_mapped(struct share_files *set, const struct share_files *before, pid_t pid)
{
    char *text;
    size_t size;
    long len = specx_maps_read_of((int)pid, &text, &size);
    if (len < 0)
        return;
    struct specx_mapping last = { 0 };
    for (char *line = text; line < text + len && *line;) {
        struct specx_mapping m;
        line = specx_maps_parse_line(line, &m);
        if (m.inode == 0 || m.path[0] != '/' || (m.inode == last.inode && m.dev == last.dev))
            continue;
        last = m;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/map_files/%lx-%lx", (int)pid, m.start, m.end);
        add_file(set, before, path);
    }
    munmap(text, size);
}

/* The files PID has open. */
static void add_open(struct share_files *set, const struct share_files *before, pid_t pid)
{
    char dir[32];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        char path[64];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/fd/%.16s", (int)pid, e->d_name);
        add_file(set, before, path);
    }
    closedir(d);
}

static void free_set(struct share_files *set)
{
    for (size_t i = 0; i < set->n; i++)
        free(set->files[i].runs);
    free(set->files);
    *set = (struct share_files){ 0 };
}

/* A copy of SET taken under the lock; its runs arrays are its own. */
static struct share_files copy_of(const struct share_files *set)
{
    struct share_files copy = { 0 };
    pthread_mutex_lock(&lock);
    copy.files = calloc(set->n ? set->n : 1, sizeof *copy.files);
    for (size_t i = 0; copy.files && i < set->n; i++) {
        struct share_file f = set->files[i];
        f.runs = malloc(f.nruns * sizeof *f.runs);
        if (!f.runs)
            break;
        memcpy(f.runs, set->files[i].runs, f.nruns * sizeof *f.runs);
        copy.files[copy.n++] = f;
    }
    pthread_mutex_unlock(&lock);
    return copy;
}

static void replace(struct share_files *set, struct share_files *with)
{
    pthread_mutex_lock(&lock);
    struct share_files old = *set;
    *set = *with;
    pthread_mutex_unlock(&lock);
    free_set(&old);
}

void share_files_capture(struct share_files *set, const struct specx_cgroup *cg)
{
    pid_t pids[SPECX_CGROUP_PROCS_MAX];
    long n = specx_cgroup_procs(cg, pids, SPECX_CGROUP_PROCS_MAX);
    struct share_files fresh = { 0 };
    /* SET is read here without the lock: only this thread changes it. */
    for (long i = 0; i < n; i++) {
        add_mapped(&fresh, set, pids[i]);
        add_open(&fresh, set, pids[i]);
    }
    replace(set, &fresh);
}

void share_files_clear(struct share_files *set)
{
    struct share_files none = { 0 };
    replace(set, &none);
}

/* Pages of a file to read: the part of a remembered run that is not in the page cache. */
struct missing {
    int fd;
    uint64_t first, count;
};

struct missing_list {
    struct missing *m;
    size_t n, cap;
    uint64_t pages;
};

/* Adds the pages of F's remembered runs that are not in the page cache now, in file order,
 * until the list holds MAX_PAGES; the file stays open in FD for the reads (or is closed if
 * none is missing). */
static void find_missing(const struct share_file *f, struct missing_list *l, uint64_t max_pages)
{
    struct stat st;
    int fd = open_checked(f->path, f->dev, f->ino, &st);
    if (fd < 0)
        return;
    if (pages_missing(fd, f, st.st_size) == 0) {
        close(fd); /* the common case: a page by page look (mincore) only where one is missing */
        return;
    }
    size_t nabsent;
    struct share_file_run *absent = runs_where(fd, st.st_size, false, &nabsent);
    size_t before = l->n;
    /* Both lists are in file order: walk them together and keep their overlaps. */
    for (size_t a = 0, r = 0; a < nabsent && r < f->nruns && l->pages < max_pages;) {
        uint64_t lo = absent[a].first > f->runs[r].first ? absent[a].first : f->runs[r].first;
        uint64_t a_end = absent[a].first + absent[a].count;
        uint64_t r_end = f->runs[r].first + f->runs[r].count;
        uint64_t hi = a_end < r_end ? a_end : r_end;
        if (lo < hi && specx_grow(&l->m, &l->cap, l->n, sizeof *l->m, 64)) {
            uint64_t count = hi - lo < max_pages - l->pages ? hi - lo : max_pages - l->pages;
            l->m[l->n++] = (struct missing){ fd, lo, count };
            l->pages += count;
        }
        if (a_end < r_end)
            a++;
        else
            r++;
    }
    free(absent);
    if (l->n == before)
        close(fd);
}

static struct missing_list missing_of(const struct share_files *set, uint64_t max_pages)
{
    struct missing_list l = { 0 };
    struct share_files copy = copy_of(set);
    for (size_t i = 0; i < copy.n && l.pages < max_pages; i++)
        find_missing(&copy.files[i], &l, max_pages);
    free_set(&copy);
    return l;
}

static void close_all(struct missing_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (i == 0 || l->m[i].fd != l->m[i - 1].fd)
            close(l->m[i].fd);
    free(l->m);
}

uint64_t share_files_missing(const struct share_files *set)
{
    struct share_files copy = copy_of(set);
    uint64_t pages = 0;
    for (size_t i = 0; i < copy.n; i++) {
        struct stat st;
        int fd = open_checked(copy.files[i].path, copy.files[i].dev, copy.files[i].ino, &st);
        if (fd < 0)
            continue;
        pages += pages_missing(fd, &copy.files[i], st.st_size);
        close(fd);
    }
    free_set(&copy);
    return pages * SPECX_PAGE_SIZE;
}

/* In the helper: readahead of every missing run at once (the device merges and orders them),
 * then a byte of each page read, which waits for its read to arrive. */
static _Noreturn void read_missing(const struct missing_list *l, const struct specx_cgroup *cg)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (specx_cgroup_attach(cg, 0) < 0)
        _exit(1);
    for (size_t i = 0; i < l->n; i++)
        posix_fadvise(l->m[i].fd, (off_t)(l->m[i].first * SPECX_PAGE_SIZE),
                      (off_t)(l->m[i].count * SPECX_PAGE_SIZE), POSIX_FADV_WILLNEED);
    char byte;
    for (size_t i = 0; i < l->n; i++)
        for (uint64_t p = l->m[i].first; p < l->m[i].first + l->m[i].count; p++)
            if (pread(l->m[i].fd, &byte, 1, (off_t)(p * SPECX_PAGE_SIZE)) <= 0)
                break;
    _exit(0);
}

uint64_t share_files_prefetch(const struct share_files *set, const struct specx_cgroup *charge_to,
                              uint64_t max_bytes)
{
    struct missing_list l = missing_of(set, max_bytes / SPECX_PAGE_SIZE);
    uint64_t bytes = l.pages * SPECX_PAGE_SIZE;
    pid_t helper = l.n ? fork() : -1;
    if (helper == 0)
        read_missing(&l, charge_to);
    if (helper > 0)
        while (waitpid(helper, NULL, 0) < 0 && errno == EINTR)
            ;
    close_all(&l);
    return helper > 0 ? bytes : 0;
}
