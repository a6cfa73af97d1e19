/* See isolation.h. */
#include "idle/isolation.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "idle/beneath.h"
#include "idle/file_status.h"
#include "idle/pathset.h"
#include "kernel/proc_path.h"
#include "idle/readset.h"
#include "idle/upper_complete.h"
#include "common/util.h"

#define DIRS_FILE "dirs"
#define JOURNAL_FILE "journal"
/* Changes listed before a question or by --commit never, before "... and N more". */
#define SHOW_CHANGES 50

/* True if A is B or lies below it. */
static bool within(const char *a, const char *b)
{
    size_t len = strlen(b);
    return strncmp(a, b, len) == 0 && (a[len] == '/' || a[len] == '\0' || len == 1);
}

static int check_dirs(struct idle_isolation *iso, const struct idle_options *o, char *err,
                      size_t errsize)
{
    for (size_t i = 0; i < o->nisolate; i++) {
        struct stat st;
        if (!realpath(o->isolate[i], iso->dirs[i]) || stat(iso->dirs[i], &st) < 0)
            return specx_format_error(err, errsize, "--isolate %s: %s", o->isolate[i],
                                      strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return specx_format_error(err, errsize, "--isolate %s: not a directory",
                                      o->isolate[i]);
        /* The overlay's options separate layers with ':' and options with ','. */
        if (strcmp(iso->dirs[i], "/") == 0 || strpbrk(iso->dirs[i], ",:\\"))
            return specx_format_error(err, errsize, "--isolate %s: cannot be isolated (the root, "
                                      "or a path with ',', ':' or '\\')", o->isolate[i]);
        iso->ids[i] = (struct idle_dir_id){ st.st_dev, st.st_ino };
        for (size_t j = 0; j < i; j++)
            if (within(iso->dirs[i], iso->dirs[j]) || within(iso->dirs[j], iso->dirs[i]))
                return specx_format_error(err, errsize, "--isolate %s and %s overlap",
                                          o->isolate[j], o->isolate[i]);
        iso->n = i + 1;
    }
    return 0;
}

/* The directories, by length, path and identity, for a recovery: written once, read back
 * by read_dirs. */
static int write_dirs(const struct idle_isolation *iso)
{
    FILE *f = idle_create_at(iso->state_fd, DIRS_FILE, O_EXCL);
    if (!f)
        return -1;
    for (size_t i = 0; i < iso->n; i++)
        fprintf(f, "%ju %ju %zu %s\n", (uintmax_t)iso->ids[i].dev, (uintmax_t)iso->ids[i].ino,
                strlen(iso->dirs[i]), iso->dirs[i]);
    return fclose(f);
}

/* Gives REL, in the run's state, the status of isolated directory I (the one the run
 * isolates, not a link or another put in its place since). */
static int give_status_of(const struct idle_isolation *iso, unsigned i, const char *rel)
{
    int dir = idle_open_isolated(iso->dirs[i], &iso->ids[i]);
    if (dir < 0)
        return -1;
    int rc = idle_dir_status_copy_at(dir, ".", iso->state_fd, rel);
    int e = errno;
    close(dir);
    errno = e;
    return rc;
}

/* The run's state: a locked directory of its own where runs keep theirs (state_dir.h), with
 * upper and work directories, and the list of directories for a recovery. */
static int make_state(struct idle_isolation *iso, char *err, size_t errsize)
{
    if (idle_state_root_open(&iso->root, true, err, errsize) < 0)
        return -1;
    for (size_t i = 0; i < iso->n; i++)
        if (within(iso->root.path, iso->dirs[i]) || within(iso->dirs[i], iso->root.path))
            return specx_format_error(err, errsize, "--isolate %s: holds or lies in %s, where "
                                      "the changes are kept apart", iso->dirs[i],
                                      iso->root.path);
    iso->state_fd = idle_state_make_run(&iso->root, iso->name, sizeof iso->name);
    if (iso->state_fd < 0)
        return specx_format_error(err, errsize, "cannot make the run's state in %s: %s",
                                  iso->root.path, strerror(errno));
    if (snprintf(iso->state, sizeof iso->state, "%s/%s", iso->root.path, iso->name) >=
        (int)sizeof iso->state)
        return specx_format_error(err, errsize, "cannot make the run's state in %s: %s",
                                  iso->root.path, strerror(ENAMETOOLONG));
    char path[PATH_MAX];
    const char *rel = path + strlen(iso->state) + 1; /* the same, in the run's directory */
    for (unsigned i = 0; i < iso->n; i++) {
        idle_upper_dir(path, sizeof path, iso->state, i);
        /* The overlay shows its root with the upper directory's owner, mode and attributes:
         * it gets the isolated directory's, so that the command sees it as it is (and a
         * change it makes to them is found against them at the commit). */
        int rc = mkdirat(iso->state_fd, rel, 0700);
        if (rc == 0)
            rc = give_status_of(iso, i, rel);
        if (rc == 0)
            idle_work_dir(path, sizeof path, iso->state, i);
        if (rc < 0 || mkdirat(iso->state_fd, rel, 0700) < 0)
            return specx_format_error(err, errsize, "cannot make %s: %s", path, strerror(errno));
    }
    if (write_dirs(iso) < 0)
        return specx_format_error(err, errsize, "cannot write %s/" DIRS_FILE ": %s", iso->state,
                                  strerror(errno));
    return 0;
}

int idle_isolation_prepare(struct idle_isolation *iso, const struct idle_options *o, char *err,
                           size_t errsize)
{
    *iso = (struct idle_isolation){ .watch_fd = -1, .state_fd = -1, .root.fd = -1 };
    if (check_dirs(iso, o, err, errsize) < 0)
        return -1;
    if (make_state(iso, err, errsize) < 0) {
        idle_isolation_abandon(iso);
        return -1;
    }
    for (size_t i = 0; i < iso->n; i++)
        if (idle_snapshot_take(&iso->before[i], iso->dirs[i]) < 0) {
            specx_format_error(err, errsize, "cannot read %s: %s", iso->dirs[i], strerror(errno));
            idle_isolation_abandon(iso);
            return -1;
        }
    return 0;
}

/* Descriptors the command would inherit (those not closed at exec) were opened in our mount
 * namespace, where no overlay covers the isolated directories: a path walked from a
 * directory's, with ".." if need be, reaches the real tree wherever the directory lies, and a
 * file open for writing in an isolated directory is written in place. Either is refused, not
 * reopened through the overlay: the open file description is shared with whoever passed it
 * (offset, flags, O_APPEND), and a second one would part the command's writes from theirs. */
static int refuse_escaping_descriptors(const struct idle_isolation *iso, char *err,
                                       size_t errsize)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return specx_format_error(err, errsize, "cannot list the command's descriptors: %s",
                                  strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        int fd = atoi(e->d_name), fdflags = fcntl(fd, F_GETFD), flags = fcntl(fd, F_GETFL);
        char link[SPECX_PROC_FD_PATH_MAX], path[PATH_MAX];
        struct stat st;
        const char *rel;
        if (e->d_name[0] == '.' || fd == dirfd(d) || fdflags < 0 || (fdflags & FD_CLOEXEC) ||
            fstat(fd, &st) < 0)
            continue;
        specx_proc_fd_path(link, fd);
        ssize_t len = readlink(link, path, sizeof path - 1);
        path[len > 0 ? len : 0] = '\0';
        bool writable = !(flags & O_PATH) && (flags & O_ACCMODE) != O_RDONLY;
        if (S_ISDIR(st.st_mode))
            rc = specx_format_error(err, errsize, "descriptor %d is open on the directory %s: "
                                    "through it the command would write around --isolate "
                                    "(close it for the command)", fd, path);
        else if (writable &&
                 idle_path_within(path, (char (*)[4096])iso->dirs, iso->n, &rel) >= 0)
            rc = specx_format_error(err, errsize, "descriptor %d is open for writing on %s, "
                                    "in an isolated directory: its writes would not be isolated "
                                    "(redirect it elsewhere)", fd, path);
    }
    closedir(d);
    return rc;
}

/* Where the command's working directory lies in an isolated directory, the directory it
 * inherited is the one the overlay now covers, and a relative path from it would reach the
 * real tree. It is entered again by its path (CWD, taken before the overlays were mounted),
 * which must now lead into the overlay without a symbolic link: else the command does not
 * start. Elsewhere it stays: paths from it cross into the overlays where they lie. */
static int enter_cwd_again(const struct idle_isolation *iso, const char *cwd, char *err,
                           size_t errsize)
{
    const char *rel;
    if (idle_path_within(cwd, (char (*)[4096])iso->dirs, iso->n, &rel) < 0)
        return 0;
    struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                            .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
    int fd = (int)syscall(SYS_openat2, AT_FDCWD, cwd, &how, sizeof how);
    struct statfs fs;
    if (fd >= 0 && fstatfs(fd, &fs) == 0 && fs.f_type != OVERLAYFS_SUPER_MAGIC)
        errno = EXDEV;
    else if (fd >= 0 && fchdir(fd) == 0) {
        close(fd);
        return 0;
    }
    int e = errno;
    if (fd >= 0)
        close(fd);
    return specx_format_error(err, errsize, "the working directory %s cannot be entered "
                              "through its overlay: %s", cwd, strerror(e));
}

int idle_isolation_enter(const struct idle_isolation *iso, char *err, size_t errsize)
{
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return specx_format_error(err, errsize, "the working directory has no path (%s): "
                                  "--isolate cannot tell whether it lies in an isolated "
                                  "directory", strerror(errno));
    if (refuse_escaping_descriptors(iso, err, errsize) < 0)
        return -1;
    /* Private: the overlays are the command's alone, and nothing it mounts leaks out. */
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return specx_format_error(err, errsize, "cannot isolate /: %s", strerror(errno));
    for (unsigned i = 0; i < iso->n; i++) {
        char upper[PATH_MAX], work[PATH_MAX], options[3 * PATH_MAX + 64];
        idle_upper_dir(upper, sizeof upper, iso->state, i);
        idle_work_dir(work, sizeof work, iso->state, i);
        /* Set, not left to the module's defaults, which distributions change: without
         * metadata-only copies the upper layer holds each changed file whole; with redirects a
         * directory of the lower layer can be renamed (without, the overlay answers EXDEV, as
         * across file systems); with the index, every name of a file with several shows it
         * changed once one was (the kernel turns it off where a layer has no file handles).
         * upper_complete.h makes the upper layer whole from the last two. */
        snprintf(options, sizeof options, "lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=on,"
                 "metacopy=off,index=on", iso->dirs[i], upper, work);
        if (mount("overlay", iso->dirs[i], "overlay", 0, options) < 0)
            return specx_format_error(err, errsize, "cannot isolate %s: %s", iso->dirs[i],
                                      strerror(errno));
    }
    return enter_cwd_again(iso, cwd, err, errsize);
}

void idle_isolation_drop_lock(struct idle_isolation *iso)
{
    if (iso->state[0] && iso->state_fd >= 0)
        close(iso->state_fd);
    iso->state_fd = -1;
}

void idle_isolation_watch(struct idle_isolation *iso, pid_t pid)
{
    iso->watch_fd = idle_readset_watch(pid, iso->dirs, iso->n);
    if (iso->watch_fd < 0) {
        specx_warn("cannot see what the command reads (fanotify: %s): any change by others "
                   "in the isolated directories will count as a conflict", strerror(errno));
        iso->read_set_lost = true;
    }
}

bool idle_isolation_upper_path(const struct idle_isolation *iso, const char *link, char *out,
                               size_t size)
{
    char path[PATH_MAX], upper[PATH_MAX];
    const char *rel;
    ssize_t len = readlink(link, path, sizeof path - 1);
    if (len < 0)
        return false;
    path[len] = '\0';
    long i = idle_path_within(path, (char (*)[4096])iso->dirs, iso->n, &rel);
    if (i < 0)
        return false;
    idle_upper_dir(upper, sizeof upper, iso->state, (unsigned)i);
    int n = snprintf(out, size, "%s/%s", upper, rel);
    return n > 0 && (size_t)n < size;
}

void idle_isolation_drain(struct idle_isolation *iso)
{
    if (iso->watch_fd >= 0)
        idle_readset_drain(iso->watch_fd, iso->dirs, iso->n, iso->read, &iso->read_set_lost);
}

static void add_conflict(struct idle_isolation *iso, size_t dir, const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s%s%s", iso->dirs[dir], *rel ? "/" : "", rel);
    idle_pathset_add(&iso->conflicts, path);
}

/* Everything under DIR that differs from its snapshot: when the read set is not known, any
 * change by others may be one the command depended on. */
static void conflict_anywhere(struct idle_isolation *iso, size_t dir)
{
    struct idle_snapshot now;
    if (idle_snapshot_take(&now, iso->dirs[dir]) < 0) {
        add_conflict(iso, dir, "");
        return;
    }
    const struct idle_snapshot *both[2] = { &iso->before[dir], &now };
    for (size_t s = 0; s < 2; s++)
        for (size_t i = 0; i < both[s]->n; i++)
            if (idle_snapshot_changed(&iso->before[dir], iso->dirs[dir], both[s]->entries[i].rel))
                add_conflict(iso, dir, both[s]->entries[i].rel);
    idle_snapshot_free(&now);
}

/* Ch. 8's validation: the command's changes go in only if nobody else changed, since it
 * started, a file or directory it read or one it changed. */
static void validate(struct idle_isolation *iso)
{
    for (size_t d = 0; d < iso->n; d++) {
        if (iso->read_set_lost) {
            conflict_anywhere(iso, d);
            continue;
        }
        struct idle_pathset *read = &iso->read[d];
        for (size_t i = 0; i < read->n; i++)
            if (idle_snapshot_changed(&iso->before[d], iso->dirs[d], read->paths[i]))
                add_conflict(iso, d, read->paths[i]);
    }
    for (size_t i = 0; !iso->read_set_lost && i < iso->changes.n; i++) {
        const struct idle_change *ch = &iso->changes.v[i];
        if (idle_snapshot_changed(&iso->before[ch->dir], iso->dirs[ch->dir], ch->rel))
            add_conflict(iso, ch->dir, ch->rel);
    }
    idle_pathset_sort(&iso->conflicts);
}

/* --commit ask: the question goes to the terminal, whatever the command's input was. */
static bool user_agrees(const struct idle_isolation *iso)
{
    FILE *tty = fopen("/dev/tty", "r+e");
    if (!tty) {
        specx_warn("--commit ask: no terminal to ask on; not committing");
        return false;
    }
    fprintf(tty, "specx idle: the command made %zu change%s:\n", iso->changes.n,
            iso->changes.n == 1 ? "" : "s");
    idle_changes_print(tty, &iso->changes, (char (*)[4096])iso->dirs, SHOW_CHANGES);
    fprintf(tty, "Commit them? [y/N] ");
    fflush(tty);
    char answer[16] = "";
    bool yes = fgets(answer, sizeof answer, tty) && (answer[0] == 'y' || answer[0] == 'Y');
    fclose(tty);
    return yes;
}

static void commit(struct idle_isolation *iso)
{
    if (idle_journal_write(iso->state_fd, &iso->changes) < 0) {
        snprintf(iso->failure, sizeof iso->failure, "cannot write the commit's journal in %s: %s",
                 iso->state, strerror(errno));
        iso->outcome = ISOLATION_INCOMPLETE;
        return;
    }
    if (idle_changes_apply(&iso->changes, iso->dirs, iso->ids, iso->state_fd, iso->name,
                           iso->failure, sizeof iso->failure) < 0) {
        iso->outcome = ISOLATION_INCOMPLETE; /* the journal stays: a later run finishes it */
        return;
    }
    iso->outcome = ISOLATION_COMMITTED;
}

void idle_isolation_finish(struct idle_isolation *iso, enum idle_commit mode)
{
    idle_isolation_drain(iso);
    if (iso->watch_fd >= 0)
        close(iso->watch_fd);
    iso->watch_fd = -1;
    bool scanned = true;
    for (size_t d = 0; d < iso->n; d++) {
        char upper[PATH_MAX], index[PATH_MAX];
        idle_upper_dir(upper, sizeof upper, iso->state, (unsigned)d);
        idle_work_dir(index, sizeof index, iso->state, (unsigned)d);
        strncat(index, "/index", sizeof index - strlen(index) - 1);
        /* What it completes the upper layer with from DIR counts as read: it is committed as
         * it is now. */
        int dir = idle_open_isolated(iso->dirs[d], &iso->ids[d]);
        if (dir < 0 || idle_upper_complete(upper, index, dir, &iso->before[d], &iso->read[d]) < 0
            || idle_changes_scan(&iso->changes, (unsigned)d, upper, iso->dirs[d]) < 0) {
            snprintf(iso->failure, sizeof iso->failure, "cannot read the changes in %s: %s",
                     upper, strerror(errno));
            scanned = false; /* nothing is applied that was not read whole */
        }
        if (dir >= 0)
            close(dir);
        idle_pathset_sort(&iso->read[d]);
    }
    if (scanned && iso->changes.n)
        validate(iso);
    /* What others change while the question is open counts too: validated again after a
     * yes (the first validation spares the user a question whose answer could not count). */
    bool agreed = !iso->conflicts.n && iso->changes.n && mode == COMMIT_ASK && user_agrees(iso);
    if (agreed)
        validate(iso);
    if (!scanned || iso->conflicts.n)
        iso->outcome = ISOLATION_CONFLICT;
    else if (iso->changes.n == 0)
        iso->outcome = ISOLATION_UNCHANGED;
    else if (mode == COMMIT_NEVER || (mode == COMMIT_ASK && !agreed))
        iso->outcome = ISOLATION_DISCARDED;
    else
        commit(iso);
    if (iso->outcome != ISOLATION_INCOMPLETE)
        idle_isolation_abandon(iso);
}

struct idle_isolation_figures idle_isolation_figures(const struct idle_isolation *iso)
{
    struct idle_isolation_figures f = {
        .ndirs = iso->n, .outcome = iso->outcome, .changes = iso->changes.n,
        .read_set_lost = iso->read_set_lost, .conflicts = iso->conflicts.paths,
        .nconflicts = iso->conflicts.n,
    };
    for (size_t i = 0; i < iso->n; i++)
        f.dirs[i] = iso->dirs[i];
    return f;
}

void idle_isolation_abandon(struct idle_isolation *iso)
{
    if (iso->state[0]) {
        idle_state_remove_run(&iso->root, iso->name);
        close(iso->state_fd);
        iso->state_fd = -1;
        iso->state[0] = '\0';
    }
    if (iso->root.path[0])
        idle_state_root_close(&iso->root);
    for (size_t i = 0; i < IDLE_MAX_ISOLATE; i++) {
        idle_snapshot_free(&iso->before[i]);
        idle_pathset_free(&iso->read[i]);
    }
    if (iso->watch_fd >= 0)
        close(iso->watch_fd);
    iso->watch_fd = -1;
}

/* The directories of the run whose state is STATE_FD, from its list: how many, or -1 if the
 * list does not check out (each an absolute path by plain names, the list whole). */
static long read_dirs(int state_fd, char (*dirs)[4096], struct idle_dir_id *ids)
{
    int fd = openat(state_fd, DIRS_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    long n = 0;
    uintmax_t dev, ino;
    size_t len;
    while (n >= 0 && fscanf(f, "%ju %ju %zu ", &dev, &ino, &len) == 3) {
        if (n == IDLE_MAX_ISOLATE || len >= sizeof dirs[n] ||
            fread(dirs[n], 1, len, f) != len || fgetc(f) != '\n') {
            n = -1;
            break;
        }
        dirs[n][len] = '\0';
        if (strlen(dirs[n]) != len || dirs[n][0] != '/' || !idle_rel_valid(dirs[n] + 1))
            n = -1;
        else
            ids[n++] = (struct idle_dir_id){ (dev_t)dev, (ino_t)ino };
    }
    if (n >= 0 && fgetc(f) != EOF)
        n = -1;
    fclose(f);
    return n;
}

struct recovery {
    const struct idle_state_root *root;
    int finished;
    bool failed;
};

/* The run whose state is FD (NAME in the root) ended without finishing: finish its commit if
 * it had begun one, else drop its changes. A commit whose directory list or journal does not
 * check out is not applied: its state stays, for the user to look at. */
static void recover_run(int fd, const char *name, void *arg)
{
    struct recovery *r = arg;
    struct idle_changes changes = { 0 };
    char dirs[IDLE_MAX_ISOLATE][4096], err[PATH_MAX + 256];
    struct idle_dir_id ids[IDLE_MAX_ISOLATE];
    if (faccessat(fd, JOURNAL_FILE, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
        specx_warn("dropping the uncommitted changes of an earlier run (%s/%s) that was killed",
                   r->root->path, name);
        idle_state_remove_run(r->root, name);
        return;
    }
    long n = read_dirs(fd, dirs, ids);
    int rc = n < 0 ? -1 : idle_journal_read(fd, (size_t)n, &changes);
    if (rc < 0) {
        specx_warn("not finishing the commit of an earlier run (%s/%s): its %s does not check "
                   "out; left as it is", r->root->path, name,
                   n < 0 ? "list of directories" : "journal");
        r->failed = true;
    } else if (idle_changes_apply(&changes, dirs, ids, fd, name, err, sizeof err) < 0) {
        specx_warn("cannot finish the interrupted commit of an earlier run (%s/%s): %s",
                   r->root->path, name, err);
        r->failed = true;
    } else {
        specx_warn("finished the interrupted commit of an earlier run (%s/%s)", r->root->path,
                   name);
        idle_state_remove_run(r->root, name);
        r->finished++;
    }
    idle_changes_free(&changes);
}

int idle_isolation_recover(bool say_unsafe)
{
    struct idle_state_root root;
    char err[PATH_MAX + 256];
    if (idle_state_root_open(&root, false, err, sizeof err) < 0) {
        if (errno == ENOENT)
            return 0; /* no run of this user ever kept state */
        if (say_unsafe)
            specx_warn("%s", err);
        return -1;
    }
    struct recovery r = { .root = &root };
    idle_state_each_ended(&root, recover_run, &r);
    idle_state_root_close(&root);
    return r.failed ? -1 : r.finished;
}
