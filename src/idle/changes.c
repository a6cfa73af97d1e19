/* See changes.h. */
#include "idle/changes.h"

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

#include "idle/beneath.h"
#include "idle/file_status.h"
#include "idle/pathset.h"
#include "common/util.h"

#define JOURNAL "journal"
#define JOURNAL_MAGIC "specx-idle-journal 1\n"

#define UPPER "upper-%u"

void idle_upper_dir(char *out, size_t size, const char *state, unsigned index)
{
    snprintf(out, size, "%s/" UPPER, state, index);
}

void idle_work_dir(char *out, size_t size, const char *state, unsigned index)
{
    snprintf(out, size, "%s/work-%u", state, index);
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

/* ---- durability ---- */

/* Makes what FD is durable: a file's data, a directory's entries. EINVAL: a file system that
 * cannot sync it, where there is nothing more to do. */
static int make_durable(int fd)
{
    return fsync(fd) < 0 && errno != EINVAL ? -1 : 0;
}

static int make_tree_durable(int dir);

/* make_tree_durable for entry NAME of DIR: a regular file, or a directory and all below it. */
static int make_entry_durable(int dir, const char *name, bool is_dir)
{
    /* O_NONBLOCK: no wait on a FIFO put in the file's place meanwhile. */
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                    (is_dir ? O_DIRECTORY : 0));
    if (fd < 0)
        return -1;
    int rc = is_dir ? make_tree_durable(fd) : make_durable(fd);
    close(fd);
    return rc;
}

/* Makes the regular files and directories below directory DIR durable, depth first, then DIR
 * itself. Symbolic links, whiteouts and the like are only entries, durable with their
 * directory; no link is followed. */
static int make_tree_durable(int dir)
{
    DIR *d = specx_opendir_at(dir, ".");
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            rc = -1;
        else if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
            rc = make_entry_durable(dir, e->d_name, S_ISDIR(st.st_mode));
    }
    closedir(d);
    return rc < 0 ? -1 : make_durable(dir);
}

/* Makes the run's state STATE_FD durable, and its name: everything below it, it, and the runs'
 * state directory that holds it (state_dir.c made the directories above durable). */
static int make_state_durable(int state_fd)
{
    if (make_tree_durable(state_fd) < 0)
        return -1;
    int root = openat(state_fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = root < 0 ? -1 : make_durable(root);
    if (root >= 0)
        close(root);
    return rc;
}

/* ---- the journal ---- */

int idle_journal_write(int state_fd, const struct idle_changes *c)
{
    /* What the journal relies on is durable before it is: the upper layers and the list of
     * directories, and the names that lead to them. A journal that outlived them at a power
     * cut would finish the commit with files missing or empty; one that vanished with them
     * would leave it half done. */
    if (make_state_durable(state_fd) < 0)
        return -1;
    FILE *f = idle_create_at(state_fd, JOURNAL ".new", O_TRUNC);
    if (!f)
        return -1;
    fputs(JOURNAL_MAGIC, f);
    for (size_t i = 0; i < c->n; i++)
        fprintf(f, "%c %u %zu %s\n", c->v[i].type, c->v[i].dir, strlen(c->v[i].rel),
                c->v[i].rel);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || renameat(state_fd, JOURNAL ".new", state_fd, JOURNAL) < 0)
        return -1;
    return fsync(state_fd);
}

/* A change the commit can apply: a known one to a path by plain names below an isolated
 * directory, or to the status of that directory itself (REL ""). */
static bool change_valid(char type, const char *rel)
{
    if (type == '\0' || !strchr("MCWLDS", type))
        return false;
    return *rel ? idle_rel_valid(rel) : type == CHANGE_STATUS;
}

/* An entry the commit can apply: a valid change in one of the NDIRS directories. */
static bool entry_valid(char type, unsigned dir, size_t ndirs, const char *rel)
{
    return dir < ndirs && change_valid(type, rel);
}

int idle_journal_read(int state_fd, size_t ndirs, struct idle_changes *c)
{
    char magic[sizeof JOURNAL_MAGIC];
    int fd = openat(state_fd, JOURNAL, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = fgets(magic, sizeof magic, f) && strcmp(magic, JOURNAL_MAGIC) == 0 ? 0 : -1;
    char type;
    unsigned dir;
    size_t len;
    /* Entry by entry to the end: anything that is not one, even a part, fails. One space
     * before REL, which may be empty (the isolated directory's own status). */
    for (int n; rc == 0 && (n = fscanf(f, "%c %u %zu", &type, &dir, &len)) != EOF;) {
        char *rel = n == 3 && fgetc(f) == ' ' && len < PATH_MAX ? malloc(len + 1) : NULL;
        if (!rel || fread(rel, 1, len, f) != len || fgetc(f) != '\n') {
            free(rel);
            rc = -1;
            break;
        }
        rel[len] = '\0';
        rc = strlen(rel) == len && entry_valid(type, dir, ndirs, rel) ? add(c, type, dir, rel)
                                                                       : -1;
        free(rel);
    }
    if (ferror(f))
        rc = -1;
    fclose(f);
    if (rc < 0)
        errno = EINVAL;
    return rc;
}

/* ---- applying ---- */

/* LEFT bytes from IN to OUT. copy_file_range works within one file system (and between some
 * of one type); the upper directory is under /var/lib, DIR may be anywhere (a tmpfs /tmp):
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

int idle_copy_file(int from, const char *name, int to_dir, const char *to)
{
    /* Only a regular file, as its caller saw it: not a link or a FIFO put in its place. */
    int in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0)
        return -1;
    struct stat st;
    int out = -1;
    if (fstat(in, &st) == 0) {
        if (S_ISREG(st.st_mode))
            out = openat(to_dir, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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

/* What is in directory NAME of TO but not in its upper counterpart (NAME in FROM) goes: the
 * command emptied it. The removals are durable once NAME is synced, as it is here. */
static int clear_dir(int from, int to, const char *name)
{
    int dir = openat(to, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return errno == ENOENT ? 0 : -1;
    int upper = openat(from, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = upper >= 0 ? fdopendir(dir) : NULL;
    if (!d) {
        int e = errno;
        close(dir);
        if (upper >= 0)
            close(upper);
        errno = e;
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (fstatat(upper, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || is_whiteout(&st))
            idle_remove_tree_at(dir, e->d_name);
    }
    int rc = make_durable(dir);
    closedir(d);
    close(upper);
    return rc;
}

/* The upper file NAME in FROM is of TYPE (S_IFREG, ...); its status in *ST. */
static int upper_is(int from, const char *name, mode_t type, struct stat *st)
{
    if (fstatat(from, name, st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    if ((st->st_mode & S_IFMT) == type)
        return 0;
    errno = EINVAL; /* the journal says otherwise: not this run's upper layer */
    return -1;
}

/* Where a change's target is: NAME in directory DIR. */
struct place {
    int dir;
    const char *name;
};

/* Applies CH, whose last component is NAME in directory TO of the target and FROM of the upper
 * layer, through the temporary name TMP beside it. LINKED: the target of an earlier change
 * that names the same upper file (a hard link the command made), to be linked rather than
 * copied; NULL for a file of its own. */
static int apply_one(const struct idle_change *ch, int from, int to, const char *name,
                     const char *tmp, const struct place *linked)
{
    struct stat st, there;
    switch (ch->type) {
    case CHANGE_MKDIR:
        if (fstatat(to, name, &there, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(there.st_mode))
            idle_remove_tree_at(to, name);
        /* Private until it has its status: the umask does not decide its mode. */
        if (upper_is(from, name, S_IFDIR, &st) < 0 ||
            (mkdirat(to, name, 0700) < 0 && errno != EEXIST))
            return -1;
        return idle_dir_status_copy_at(from, name, to, name);
    case CHANGE_STATUS:
        return idle_dir_status_copy_at(from, name, to, name);
    case CHANGE_CLEAR:
        return clear_dir(from, to, name);
    case CHANGE_DELETE:
        idle_remove_tree_at(to, name);
        if (fstatat(to, name, &there, AT_SYMLINK_NOFOLLOW) < 0)
            return 0;
        errno = ENOTEMPTY;
        return -1;
    case CHANGE_LINK: {
        char link[PATH_MAX];
        ssize_t len = upper_is(from, name, S_IFLNK, &st) < 0
                          ? -1 : readlinkat(from, name, link, sizeof link - 1);
        if (len < 0)
            return -1;
        link[len] = '\0';
        if (symlinkat(link, to, tmp) < 0)
            return -1;
        fchownat(to, tmp, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
        break;
    }
    case CHANGE_WRITE:
        if (upper_is(from, name, S_IFREG, &st) < 0 ||
            (linked ? linkat(linked->dir, linked->name, to, tmp, 0)
                    : idle_copy_file(from, name, to, tmp)) < 0)
            return -1;
        break;
    default:
        errno = EINVAL;
        return -1;
    }
    if (fstatat(to, name, &there, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(there.st_mode))
        idle_remove_tree_at(to, name); /* a directory the command replaced by a file */
    if (renameat(to, tmp, to, name) < 0)
        return -1;
    /* Two links to one file: rename left both (an application repeated after a crash). */
    return linked && unlinkat(to, tmp, 0) < 0 && errno != ENOENT ? -1 : 0;
}

int idle_open_isolated(const char *path, const struct idle_dir_id *id)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != id->dev || st.st_ino != id->ino)) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    return fd;
}

/* Opens the directory that holds REL below DIRFD, its last component in *NAME; for REL "" (a
 * change to the isolated directory's own status), DIRFD itself, anew, as ".". */
static int open_parent(int dirfd, const char *rel, const char **name)
{
    if (*rel)
        return idle_open_parent_beneath(dirfd, rel, name);
    *name = ".";
    return openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Closes those of A, B and C that are open, errno kept. */
static void close_all(int a, int b, int c)
{
    int e = errno;
    int fds[] = { a, b, c };
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    errno = e;
}

/* CH and NEXT change entries of one directory: of the same isolated directory, and the same
 * path up to REL's last '/' (none for an entry of the isolated directory, and for REL "", its
 * own status). */
static bool same_parent(const struct idle_change *ch, const struct idle_change *next)
{
    const char *a = strrchr(ch->rel, '/'), *b = strrchr(next->rel, '/');
    size_t la = a ? (size_t)(a - ch->rel) : 0, lb = b ? (size_t)(b - next->rel) : 0;
    return ch->dir == next->dir && la == lb && memcmp(ch->rel, next->rel, la) == 0;
}

/* Applies change number I, CH, from the upper directory UPPER to the isolated one TARGET; SAME
 * is the earlier change whose upper file is CH's (NULL: none). Each path, below each
 * directory, is reached without following links: no entry leads out of either. Where SYNC,
 * the directory that holds CH's target is synced after it (syncfs would not do: FUSE does
 * not pass it on to its server). */
static int apply_change(const struct idle_change *ch, size_t i, const struct idle_change *same,
                        int upper, int target, const char *run, bool sync)
{
    const char *name;
    char tmp[NAME_MAX + 1];
    /* The temporary name beside the target: the rename stays within one file system. */
    snprintf(tmp, sizeof tmp, ".specx-idle-%s-%zu", run, i);
    if (!change_valid(ch->type, ch->rel)) {
        errno = EINVAL;
        return -1;
    }
    int from = open_parent(upper, ch->rel, &name);
    int to = from >= 0 ? open_parent(target, ch->rel, &name) : -1;
    struct place linked = { -1, NULL };
    if (to >= 0 && same)
        linked.dir = idle_open_parent_beneath(target, same->rel, &linked.name);
    int rc = -1;
    if (to >= 0 && (!same || linked.dir >= 0)) {
        unlinkat(to, tmp, 0); /* left by an application that was interrupted */
        rc = apply_one(ch, from, to, name, tmp, same ? &linked : NULL);
        if (rc == 0 && sync)
            rc = make_durable(to);
        if (rc < 0) {
            int e = errno;
            unlinkat(to, tmp, 0);
            errno = e;
        }
    }
    close_all(from, to, linked.dir);
    return rc;
}

/* The upper directory of isolated directory DIR, opened below the run's state STATE_FD. */
static int open_upper(int state_fd, unsigned dir)
{
    char name[32];
    snprintf(name, sizeof name, UPPER, dir);
    return idle_open_beneath(state_fd, name, O_RDONLY | O_DIRECTORY, 0);
}

/* Opens the upper directory and the isolated directory of DIR for a commit. */
static int open_dir_pair(unsigned dir, char (*dirs)[4096], const struct idle_dir_id *ids,
                         int state_fd, int *upper, int *target)
{
    *upper = open_upper(state_fd, dir);
    *target = *upper >= 0 ? idle_open_isolated(dirs[dir], &ids[dir]) : -1;
    return *target < 0 ? -1 : 0;
}

static void close_dir_pair(int *upper, int *target)
{
    if (*upper >= 0)
        close(*upper);
    if (*target >= 0)
        close(*target);
    *upper = *target = -1;
}

/* An upper file a change writes, for finding the command's hard links. */
struct upper_file {
    unsigned dir;
    dev_t dev;
    ino_t ino;
    size_t change;
};

static int by_file(const void *a, const void *b)
{
    const struct upper_file *x = a, *y = b;
    if (x->dir != y->dir)
        return x->dir < y->dir ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->change < y->change ? -1 : x->change > y->change;
}

/* The file REL in UPPER, found without following links; its status in *ST. */
static int upper_stat(int upper, const char *rel, struct stat *st)
{
    const char *name;
    int dir = idle_open_parent_beneath(upper, rel, &name);
    if (dir < 0)
        return -1;
    int rc = fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW);
    close(dir);
    return rc;
}

/* For each change of C, the first one whose upper file is the same: the overlay keeps the
 * command's hard links as links of one upper file (upper_complete.h), and the commit links
 * them likewise. Most changes are their own first; one whose upper file cannot be reached is
 * too (its application then fails). NULL if memory runs out. */
static size_t *first_names(const struct idle_changes *c, int state_fd)
{
    size_t *first = malloc((c->n ? c->n : 1) * sizeof *first);
    struct upper_file *files = malloc((c->n ? c->n : 1) * sizeof *files);
    size_t n = 0;
    int upper = -1;
    for (size_t i = 0; first && files && i < c->n; i++) {
        const struct idle_change *ch = &c->v[i];
        struct stat st;
        first[i] = i;
        if (i == 0 || ch->dir != c->v[i - 1].dir) { /* the changes of one directory together */
            if (upper >= 0)
                close(upper);
            upper = open_upper(state_fd, ch->dir);
        }
        if (ch->type == CHANGE_WRITE && upper >= 0 && upper_stat(upper, ch->rel, &st) == 0 &&
            S_ISREG(st.st_mode) && st.st_nlink > 1)
            files[n++] = (struct upper_file){ ch->dir, st.st_dev, st.st_ino, i };
    }
    if (upper >= 0)
        close(upper);
    if (first && files) {
        qsort(files, n, sizeof *files, by_file);
        for (size_t k = 1; k < n; k++)
            if (files[k].dir == files[k - 1].dir && files[k].dev == files[k - 1].dev &&
                files[k].ino == files[k - 1].ino)
                first[files[k].change] = first[files[k - 1].change];
    } else {
        free(first);
        first = NULL;
    }
    free(files);
    return first;
}

int idle_changes_apply(const struct idle_changes *c, char (*dirs)[4096],
                       const struct idle_dir_id *ids, int state_fd, const char *run, char *err,
                       size_t errsize)
{
    size_t *first = first_names(c, state_fd);
    if (!first)
        return specx_format_error(err, errsize, "cannot commit: %s", strerror(errno));
    int upper = -1, target = -1, rc = 0;
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        const struct idle_change *ch = &c->v[i];
        /* The changes of one directory are together in C. */
        if (i == 0 || ch->dir != c->v[i - 1].dir) {
            close_dir_pair(&upper, &target);
            if (open_dir_pair(ch->dir, dirs, ids, state_fd, &upper, &target) < 0) {
                rc = errno == ESTALE
                         ? specx_format_error(err, errsize, "cannot commit to %s: not the "
                                              "directory that was isolated", dirs[ch->dir])
                         : specx_format_error(err, errsize, "cannot commit to %s: %s",
                                              dirs[ch->dir], strerror(errno));
                break;
            }
        }
        const struct idle_change *same = first[i] != i ? &c->v[first[i]] : NULL;
        /* A change is durable once the directory holding its target is synced, and only then
         * may the journal go: the directory is synced after the last of a row of changes to
         * it. */
        bool last_there = i + 1 == c->n || !same_parent(ch, &c->v[i + 1]);
        if (apply_change(ch, i, same, upper, target, run, last_there) < 0)
            rc = specx_format_error(err, errsize, "cannot commit %s/%s: %s", dirs[ch->dir],
                                    ch->rel, strerror(errno));
    }
    close_dir_pair(&upper, &target);
    free(first);
    return rc;
}
