/* See changes.h. */
#include "changes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "file_status.h"
#include "util.h"

#define JOURNAL "journal"
#define JOURNAL_MAGIC "specx-idle-journal 1\n"

void idle_upper_dir(char *out, size_t size, const char *state, unsigned index)
{
    snprintf(out, size, "%s/upper-%u", state, index);
}

void idle_work_dir(char *out, size_t size, const char *state, unsigned index)
{
    snprintf(out, size, "%s/work-%u", state, index);
}

/* OUT = A/B; false (errno ENAMETOOLONG) if it does not fit. */
static bool join(char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s/%s", a, b);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return false;
    }
    return true;
}

static int add(struct idle_changes *c, char type, unsigned dir, const char *rel)
{
    if (!specx_grow(&c->v, &c->cap, c->n, sizeof *c->v, 64))
        return -1;
    if (!(c->v[c->n].rel = strdup(rel)))
        return -1;
    c->v[c->n].type = type;
    c->v[c->n++].dir = dir;
    return 0;
}

void idle_changes_free(struct idle_changes *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i].rel);
    free(c->v);
    *c = (struct idle_changes){ 0 };
}

/* ---- reading the upper directory ---- */

/* nftw passes no argument of ours: the scan in progress. */
static struct {
    struct idle_changes *c;
    unsigned index;
    size_t upper_len;
    const char *dir;
} scan;

static bool is_whiteout(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0;
}

static bool is_opaque(const char *path)
{
    char value[2];
    return getxattr(path, "trusted.overlay.opaque", value, sizeof value) == 1 && value[0] == 'y';
}

/* A directory in the upper layer is new, or only holds what changed below it, or was emptied
 * and refilled (opaque); one that was there may also have had its status set. */
static int scan_dir(const char *path, const char *rel)
{
    char lower[PATH_MAX];
    struct stat was;
    snprintf(lower, sizeof lower, "%s%s%s", scan.dir, *rel ? "/" : "", rel);
    if (lstat(lower, &was) < 0 || !S_ISDIR(was.st_mode))
        return add(scan.c, CHANGE_MKDIR, scan.index, rel);
    if (is_opaque(path) && add(scan.c, CHANGE_CLEAR, scan.index, rel) < 0)
        return -1;
    /* A copy-up gives it LOWER's: one that differs was set by the command. */
    return idle_dir_status_differs(path, lower) ? add(scan.c, CHANGE_STATUS, scan.index, rel)
                                                : 0;
}

static int scan_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    const char *rel = path + scan.upper_len;
    rel += *rel == '/'; /* "" is the isolated directory itself */
    if (type == FTW_D)
        return scan_dir(path, rel);
    if (is_whiteout(st))
        return add(scan.c, CHANGE_DELETE, scan.index, rel);
    if (S_ISLNK(st->st_mode))
        return add(scan.c, CHANGE_LINK, scan.index, rel);
    if (S_ISREG(st->st_mode))
        return add(scan.c, CHANGE_WRITE, scan.index, rel);
    specx_warn("not committing %s/%s: only files, directories and symbolic links are", scan.dir,
               rel);
    return 0;
}

int idle_changes_scan(struct idle_changes *c, unsigned index, const char *upper, const char *dir)
{
    scan.c = c;
    scan.index = index;
    scan.upper_len = strlen(upper);
    scan.dir = dir;
    return nftw(upper, scan_entry, 64, FTW_PHYS) == 0 ? 0 : -1;
}

void idle_changes_print(FILE *out, const struct idle_changes *c, char (*dirs)[4096],
                        size_t limit)
{
    for (size_t i = 0; i < c->n && i < limit; i++) {
        const char *what = c->v[i].type == CHANGE_DELETE ? "removed"
                           : c->v[i].type == CHANGE_MKDIR ? "made"
                           : c->v[i].type == CHANGE_CLEAR ? "emptied"
                                                          : "changed";
        fprintf(out, "  %-8s %s/%s\n", what, dirs[c->v[i].dir], c->v[i].rel);
    }
    if (c->n > limit)
        fprintf(out, "  ... and %zu more\n", c->n - limit);
}

/* ---- the journal ---- */

int idle_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int idle_journal_write(const char *state, const struct idle_changes *c)
{
    char tmp[PATH_MAX], path[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/" JOURNAL ".new", state);
    snprintf(path, sizeof path, "%s/" JOURNAL, state);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -1;
    fputs(JOURNAL_MAGIC, f);
    for (size_t i = 0; i < c->n; i++)
        fprintf(f, "%c %u %zu %s\n", c->v[i].type, c->v[i].dir, strlen(c->v[i].rel),
                c->v[i].rel);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0)
        return -1;
    return idle_sync_dir(state);
}

int idle_journal_read(const char *state, struct idle_changes *c)
{
    char path[PATH_MAX], magic[sizeof JOURNAL_MAGIC];
    snprintf(path, sizeof path, "%s/" JOURNAL, state);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int rc = fgets(magic, sizeof magic, f) && strcmp(magic, JOURNAL_MAGIC) == 0 ? 0 : -1;
    char type;
    unsigned dir;
    size_t len;
    while (rc == 0 && fscanf(f, "%c %u %zu ", &type, &dir, &len) == 3) {
        char *rel = malloc(len + 1);
        if (!rel || fread(rel, 1, len, f) != len || fgetc(f) != '\n') {
            free(rel);
            rc = -1;
            break;
        }
        rel[len] = '\0';
        rc = add(c, type, dir, rel);
        free(rel);
    }
    fclose(f);
    if (rc < 0)
        errno = EINVAL;
    return rc;
}

/* ---- applying ---- */

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

void idle_remove_tree(const char *path)
{
    nftw(path, remove_entry, 64, FTW_DEPTH | FTW_PHYS);
}

/* LEFT bytes from IN to OUT. copy_file_range works within one file system (and between some
 * of one type); the upper directory is under /var/tmp, DIR may be anywhere (a tmpfs /tmp):
 * there it refuses (EXDEV), and the bytes go through a buffer. */
static int copy_bytes(int in, int out, off_t left)
{
    ssize_t n = 0;
    while (left > 0 && (n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0)) > 0)
        left -= n;
    if (left == 0)
        return 0;
    if (n == 0 || (errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP && errno != ENOSYS))
        return -1;
    char buf[65536];
    for (; left > 0; left -= n)
        if ((n = read(in, buf, left < (off_t)sizeof buf ? (size_t)left : sizeof buf)) <= 0 ||
            write(out, buf, (size_t)n) != n)
            return -1;
    return 0;
}

int idle_copy_file(const char *from, const char *tmp)
{
    /* Only a regular file, as its caller saw it: not a link or a FIFO put in its place. */
    int in = open(from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0)
        return -1;
    struct stat st;
    int out = -1;
    if (fstat(in, &st) == 0) {
        if (S_ISREG(st.st_mode))
            out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        else
            errno = EINVAL;
    }
    int rc = out < 0 ? -1 : copy_bytes(in, out, st.st_size);
    if (rc == 0) {
        idle_status_copy(in, out);
        futimens(out, (struct timespec[2]){ st.st_atim, st.st_mtim });
        rc = fsync(out);
    }
    int e = errno;
    if (out >= 0)
        close(out);
    close(in);
    errno = e;
    return rc;
}

/* What is in DIR but not in its upper counterpart UPPER goes: the command emptied DIR. */
static int clear_dir(const char *dir, const char *upper)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        char in_upper[PATH_MAX], target[PATH_MAX];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (!join(in_upper, sizeof in_upper, upper, e->d_name) ||
            !join(target, sizeof target, dir, e->d_name)) {
            closedir(d);
            return -1;
        }
        if (lstat(in_upper, &st) < 0 || is_whiteout(&st))
            idle_remove_tree(target);
    }
    closedir(d);
    return 0;
}

/* LINK_FROM: the target of an earlier change that names the same upper file (a hard link the
 * command made), to be linked rather than copied; NULL for a file of its own. */
static int apply_one(const struct idle_change *ch, const char *target, const char *from,
                     const char *tmp, const char *link_from)
{
    struct stat st, there;
    switch (ch->type) {
    case CHANGE_MKDIR:
        if (lstat(target, &there) == 0 && !S_ISDIR(there.st_mode))
            idle_remove_tree(target);
        /* Private until it has its status: the umask does not decide its mode. */
        if (mkdir(target, 0700) < 0 && errno != EEXIST)
            return -1;
        return idle_dir_status_copy(from, target);
    case CHANGE_STATUS:
        return idle_dir_status_copy(from, target);
    case CHANGE_CLEAR:
        return clear_dir(target, from);
    case CHANGE_DELETE:
        idle_remove_tree(target);
        return lstat(target, &there) == 0 ? -1 : 0;
    case CHANGE_LINK: {
        char link[PATH_MAX];
        ssize_t len = readlink(from, link, sizeof link - 1);
        if (len < 0 || lstat(from, &st) < 0)
            return -1;
        link[len] = '\0';
        if (symlink(link, tmp) < 0)
            return -1;
        lchown(tmp, st.st_uid, st.st_gid);
        break;
    }
    case CHANGE_WRITE:
        if ((link_from ? link(link_from, tmp) : idle_copy_file(from, tmp)) < 0)
            return -1;
        break;
    default:
        errno = EINVAL;
        return -1;
    }
    if (lstat(target, &there) == 0 && S_ISDIR(there.st_mode))
        idle_remove_tree(target); /* a directory the command replaced by a file */
    if (rename(tmp, target) < 0)
        return -1;
    /* Two links to one file: rename left both (an application repeated after a crash). */
    return link_from && unlink(tmp) < 0 && errno != ENOENT ? -1 : 0;
}

static void sync_fs_of(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        syncfs(fd);
        close(fd);
    }
}

/* An upper file a change writes, for finding the command's hard links. */
struct upper_file {
    dev_t dev;
    ino_t ino;
    size_t change;
};

static int by_file(const void *a, const void *b)
{
    const struct upper_file *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->change < y->change ? -1 : x->change > y->change;
}

/* For each change of C, the first one whose upper file is the same: the overlay keeps the
 * command's hard links as links of one upper file (its index off), and the commit links them
 * likewise. Most changes are their own first. NULL if memory runs out. */
static size_t *first_names(const struct idle_changes *c, const char *state)
{
    size_t *first = malloc((c->n ? c->n : 1) * sizeof *first);
    struct upper_file *files = malloc((c->n ? c->n : 1) * sizeof *files);
    size_t n = 0;
    for (size_t i = 0; first && files && i < c->n; i++) {
        char upper[PATH_MAX], from[PATH_MAX];
        struct stat st;
        first[i] = i;
        idle_upper_dir(upper, sizeof upper, state, c->v[i].dir);
        if (c->v[i].type == CHANGE_WRITE && join(from, sizeof from, upper, c->v[i].rel) &&
            lstat(from, &st) == 0 && st.st_nlink > 1)
            files[n++] = (struct upper_file){ st.st_dev, st.st_ino, i };
    }
    if (first && files) {
        qsort(files, n, sizeof *files, by_file);
        for (size_t k = 1; k < n; k++)
            if (files[k].dev == files[k - 1].dev && files[k].ino == files[k - 1].ino)
                first[files[k].change] = first[files[k - 1].change];
    } else {
        free(first);
        first = NULL;
    }
    free(files);
    return first;
}

int idle_changes_apply(const struct idle_changes *c, char (*dirs)[4096], const char *state,
                       pid_t run, char *err, size_t errsize)
{
    size_t *first = first_names(c, state);
    if (!first)
        return specx_format_error(err, errsize, "cannot commit: %s", strerror(errno));
    for (size_t i = 0; i < c->n; i++) {
        const struct idle_change *ch = &c->v[i];
        char upper[PATH_MAX], from[PATH_MAX], target[PATH_MAX], tmp[PATH_MAX];
        idle_upper_dir(upper, sizeof upper, state, ch->dir);
        /* The temporary name beside the target: the rename stays within one file system. */
        char name[64];
        snprintf(name, sizeof name, ".specx-idle-%d-%zu", (int)run, i);
        bool fits = join(from, sizeof from, upper, ch->rel) &&
                    join(target, sizeof target, dirs[ch->dir], ch->rel);
        char *slash = strrchr(target, '/');
        *slash = '\0';
        fits = fits && join(tmp, sizeof tmp, target, name);
        *slash = '/';
        if (fits)
            unlink(tmp); /* left by an application that was interrupted */
        char earlier[PATH_MAX];
        const struct idle_change *same = &c->v[first[i]];
        bool linked = first[i] != i;
        fits = fits && (!linked || join(earlier, sizeof earlier, dirs[same->dir], same->rel));
        if (!fits || apply_one(ch, target, from, tmp, linked ? earlier : NULL) < 0) {
            int e = errno;
            unlink(tmp);
            free(first);
            return specx_format_error(err, errsize, "cannot commit %s: %s", target, strerror(e));
        }
    }
    free(first);
    /* The renames are durable once each directory's file system is synced (the changes of
     * one directory are together in C): only then may the journal go. */
    for (size_t i = 0; i < c->n; i++)
        if (i == 0 || c->v[i].dir != c->v[i - 1].dir)
            sync_fs_of(dirs[c->v[i].dir]);
    return 0;
}
