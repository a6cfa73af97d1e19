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

static int scan_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    const char *rel = path + scan.upper_len;
    if (*rel == '\0')
        return 0; /* the directory itself */
    rel++;
    if (type == FTW_D) {
        /* A directory in the upper layer is new, or only holds what changed below it. */
        char lower[PATH_MAX];
        struct stat was;
        snprintf(lower, sizeof lower, "%s/%s", scan.dir, rel);
        bool existed = lstat(lower, &was) == 0 && S_ISDIR(was.st_mode);
        if (!existed && add(scan.c, CHANGE_MKDIR, scan.index, rel) < 0)
            return -1;
        return existed && is_opaque(path) ? add(scan.c, CHANGE_CLEAR, scan.index, rel) : 0;
    }
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

/* nftw: makes a file or directory of a run's state durable. Links and whiteouts are only
 * entries, durable with their directory. */
static int sync_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_DP && !S_ISREG(st->st_mode))
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc < 0 && errno != EINVAL ? -1 : 0;
}

int idle_journal_write(const char *state, const struct idle_changes *c)
{
    /* What the journal relies on is durable before it is: the upper layers, the list of
     * directories, the names of the state directory and of the root that holds it. A journal
     * that outlived them at a power cut would finish the commit with files missing or empty;
     * one that vanished with them would leave it half done. */
    if (nftw(state, sync_entry, 64, FTW_DEPTH | FTW_PHYS) != 0)
        return -1;
    char above[PATH_MAX];
    snprintf(above, sizeof above, "%s", state);
    for (int up = 0; up < 2; up++) {
        *strrchr(above, '/') = '\0';
        if (idle_sync_dir(above[0] ? above : "/") < 0)
            return -1;
    }
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

static void copy_status(int fd, const struct stat *st)
{
    fchown(fd, st->st_uid, st->st_gid);
    fchmod(fd, st->st_mode & 07777);
    futimens(fd, (struct timespec[2]){ st->st_atim, st->st_mtim });
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

/* A copy of the upper file FROM at TMP, synced: the rename that follows publishes it whole. */
static int copy_file(const char *from, const char *tmp)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    struct stat st;
    int out = fstat(in, &st) == 0 ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
    int rc = out < 0 ? -1 : copy_bytes(in, out, st.st_size);
    if (rc == 0) {
        copy_status(out, &st);
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

static int apply_one(const struct idle_change *ch, const char *target, const char *from,
                     const char *tmp)
{
    struct stat st, there;
    switch (ch->type) {
    case CHANGE_MKDIR:
        if (lstat(target, &there) == 0 && !S_ISDIR(there.st_mode))
            idle_remove_tree(target);
        if (lstat(from, &st) < 0 || (mkdir(target, st.st_mode & 07777) < 0 && errno != EEXIST))
            return -1;
        return lchown(target, st.st_uid, st.st_gid);
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
        if (copy_file(from, tmp) < 0)
            return -1;
        break;
    default:
        errno = EINVAL;
        return -1;
    }
    if (lstat(target, &there) == 0 && S_ISDIR(there.st_mode))
        idle_remove_tree(target); /* a directory the command replaced by a file */
    return rename(tmp, target);
}

int idle_changes_apply(const struct idle_changes *c, char (*dirs)[4096], const char *state,
                       pid_t run, char *err, size_t errsize)
{
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
        if (!fits || apply_one(ch, target, from, tmp) < 0) {
            int e = errno;
            unlink(tmp);
            return specx_format_error(err, errsize, "cannot commit %s: %s", target, strerror(e));
        }
    }
    /* The renames, directories made and removals are durable once the directory holding
     * each target is synced (syncfs is not enough: FUSE does not pass it on); only then may
     * the journal go. EINVAL: a file system that cannot sync a directory. */
    char synced[PATH_MAX] = "";
    for (size_t i = 0; i < c->n; i++) {
        char parent[PATH_MAX];
        join(parent, sizeof parent, dirs[c->v[i].dir], c->v[i].rel); /* fitted above */
        *strrchr(parent, '/') = '\0';
        if (strcmp(parent, synced) == 0)
            continue;
        if (idle_sync_dir(parent) < 0 && errno != EINVAL)
            return specx_format_error(err, errsize, "cannot commit %s: %s", parent,
                                      strerror(errno));
        strcpy(synced, parent);
    }
    return 0;
}
