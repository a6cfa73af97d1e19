/* See store.h. */
#include "run/history/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/private_dir.h"
#include "common/util.h"
#include "run/history/command_key.h"

#define MAGIC "SPXHIST\n"
#define VERSION 1u
#define SUFFIX ".hist"

/* The file as it is on disk: this header, the files, the entries, the strings. Host byte
 * order: a history is a cache of this machine's reads, never moved elsewhere. */
struct disk_header {
    char magic[8];
    uint32_t version, header_size;
    uint64_t program, key;
    uint32_t nfiles, nentries, strings_size, argc;
    uint32_t runs, pad;
    uint64_t run_ns, bytes;
    uint64_t checksum; /* of the whole file, this field zero */
};

/* Where a user's store is: root's fixed, another user's after the XDG base directories. */
static bool choose_place(char *base, size_t size, const char **below)
{
    if (geteuid() == 0) {
        snprintf(base, size, "/var/cache");
        *below = "specx/history";
        return true;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/') {
        *below = "specx/history";
        return snprintf(base, size, "%s", xdg) < (int)size;
    }
    *below = ".cache/specx/history";
    return home && home[0] == '/' && snprintf(base, size, "%s", home) < (int)size;
}

int history_store_open(struct history_store *s, bool make, char *err, size_t errsize)
{
    char base[PATH_MAX];
    const char *below;
    s->fd = -1;
    if (!choose_place(base, sizeof base, &below)) {
        errno = ENOENT;
        return specx_format_error(err, errsize, "no private place for the history (neither "
                                  "XDG_CACHE_HOME nor HOME is an absolute path)");
    }
    /* XDG_CACHE_HOME need not exist yet (the base directory specification has it made
     * where it is missing); what is found there is checked as any other part. */
    if (make)
        mkdir(base, 0700);
    s->fd = specx_private_dir_open(base, below, make, "the history", s->path, sizeof s->path,
                                   err, errsize);
    return s->fd < 0 ? -1 : 0;
}

void history_store_close(struct history_store *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

void history_name(uint64_t program, uint64_t key, char *name, size_t size)
{
    snprintf(name, size, "%016" PRIx64 "-%016" PRIx64 SUFFIX, program, key);
}

static bool is_history_name(const char *name)
{
    uint64_t program, key;
    char rest[8];
    return strlen(name) == 33 + strlen(SUFFIX) &&
           sscanf(name, "%16" SCNx64 "-%16" SCNx64 "%7s", &program, &key, rest) == 3 &&
           strcmp(rest, SUFFIX) == 0;
}

/* ---- the lock ---- */

#define LOCK_NAME "lock"

int history_lock(const struct history_store *s, uint64_t key, bool exclusive, int wait_ms)
{
    int fd = openat(s->fd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        close(fd);
        return -1;
    }
    /* One byte per key, anywhere in the first 2^40: two keys share one only by chance, and
     * then merely wait for each other. */
    struct flock lock = { .l_type = exclusive ? F_WRLCK : F_RDLCK, .l_whence = SEEK_SET,
                          .l_start = (off_t)(key >> 24), .l_len = 1 };
    for (int waited = 0; fcntl(fd, F_OFD_SETLK, &lock) < 0; waited++) {
        if ((errno != EAGAIN && errno != EACCES && errno != EINTR) || waited >= wait_ms) {
            close(fd);
            return -1;
        }
        usleep(1000);
    }
    return fd;
}

/* ---- reading ---- */

/* The whole of file NAME, if it may be trusted as ours: a regular file (no link followed),
 * owned by us, open to nobody else, one link, within the size bound. */
static char *read_ours(const struct history_store *s, const char *name, size_t *len,
                       char *err, size_t errsize)
{
    int fd = openat(s->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            specx_format_error(err, errsize, "history %s refused: %s", name,
                               errno == ELOOP ? "a symbolic link" : strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) < 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_uid != geteuid())
        why = "owned by another user";
    else if (st.st_mode & 077)
        why = "open to other users";
    else if (st.st_nlink != 1)
        why = "a file with other links";
    else if (st.st_size > HISTORY_FILE_MAX)
        why = "larger than a history can be";
    else if ((size_t)st.st_size < sizeof(struct disk_header))
        why = "truncated";
    char *buf = why ? NULL : malloc((size_t)st.st_size);
    if (!why && !buf)
        why = strerror(ENOMEM);
    if (buf && pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
        why = "changed while read";
    close(fd);
    if (why) {
        free(buf);
        specx_format_error(err, errsize, "history %s refused: %s", name, why);
        errno = EINVAL;
        return NULL;
    }
    *len = (size_t)st.st_size;
    return buf;
}

static uint64_t checksum_of(const char *buf, size_t len)
{
    struct disk_header *hdr = (struct disk_header *)buf;
    uint64_t saved = hdr->checksum;
    hdr->checksum = 0;
    uint64_t sum = command_key_hash(buf, len, COMMAND_KEY_SEED);
    hdr->checksum = saved;
    return sum;
}

/* Why the header does not describe a history of LEN bytes, or NULL. */
static const char *header_wrong(const struct disk_header *hdr, size_t len)
{
    if (memcmp(hdr->magic, MAGIC, 8) != 0)
        return "not a history file";
    if (hdr->version != VERSION || hdr->header_size != sizeof *hdr)
        return "a version this specx does not read";
    if (hdr->nfiles > HISTORY_MAX_FILES || hdr->nentries > HISTORY_MAX_ENTRIES ||
        hdr->strings_size > HISTORY_MAX_STRINGS || hdr->argc == 0)
        return "counts out of bounds";
    uint64_t want = sizeof *hdr + (uint64_t)hdr->nfiles * sizeof(struct history_file) +
                    (uint64_t)hdr->nentries * sizeof(struct history_entry) + hdr->strings_size;
    if (want != len)
        return len < want ? "truncated" : "longer than its contents";
    return NULL;
}

/* Why the strings do not hold cwd, ARGC arguments and every file's path, or NULL. */
static const char *strings_wrong(const struct history *h)
{
    if (h->strings_size == 0 || h->strings[h->strings_size - 1] != '\0')
        return "strings not terminated";
    uint32_t at = 0;
    for (uint32_t i = 0; i <= h->argc; i++) {
        if (at >= h->strings_size)
            return "fewer arguments than it says";
        at += (uint32_t)strlen(h->strings + at) + 1;
    }
    for (uint32_t i = 0; i < h->nfiles; i++)
        if (h->files[i].path < at || h->files[i].path >= h->strings_size ||
            h->strings[h->files[i].path] != '/')
            return "a file's path out of bounds";
    return NULL;
}

static const char *entries_wrong(const struct history *h)
{
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < h->nentries; i++) {
        const struct history_entry *e = &h->entries[i];
        if (e->file >= h->nfiles || e->len == 0 || e->off + e->len < e->off ||
            e->off + e->len > h->files[e->file].size)
            return "an entry out of bounds";
        bytes += e->len;
    }
    return bytes == h->bytes ? NULL : "entries do not add up";
}

/* Takes BUF (LEN bytes) apart into H, if it is a valid history. */
static const char *parse(char *buf, size_t len, struct history *h)
{
    const struct disk_header *hdr = (const struct disk_header *)buf;
    const char *why = header_wrong(hdr, len);
    if (why)
        return why;
    if (checksum_of(buf, len) != hdr->checksum)
        return "checksum does not match";
    *h = (struct history){ .program = hdr->program, .key = hdr->key, .runs = hdr->runs,
                           .argc = hdr->argc, .run_ns = hdr->run_ns, .bytes = hdr->bytes,
                           .nfiles = hdr->nfiles, .nentries = hdr->nentries,
                           .strings_size = hdr->strings_size };
    char *p = buf + sizeof *hdr;
    h->files = (struct history_file *)p;
    p += (size_t)h->nfiles * sizeof *h->files;
    h->entries = (struct history_entry *)p;
    p += (size_t)h->nentries * sizeof *h->entries;
    h->strings = p;
    if ((why = strings_wrong(h)) || (why = entries_wrong(h)))
        return why;
    return NULL;
}

int history_load(const struct history_store *s, const char *name, struct history *h,
                 char *err, size_t errsize)
{
    size_t len;
    *h = (struct history){ 0 };
    if (err)
        err[0] = '\0';
    char *buf = read_ours(s, name, &len, err, errsize);
    if (!buf)
        return errno == ENOENT ? 1 : -1;
    const char *why = parse(buf, len, h);
    char own[64];
    if (!why) {
        history_name(h->program, h->key, own, sizeof own);
        if (strcmp(own, name) != 0)
            why = "it is another command's";
    }
    if (why) {
        free(buf);
        *h = (struct history){ 0 };
        return specx_format_error(err, errsize, "history %s refused: %s", name, why);
    }
    h->owned = buf;
    struct stat st;
    if (fstatat(s->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        h->used_sec = st.st_mtim.tv_sec;
    return 0;
}

void history_free(struct history *h)
{
    free(h->owned);
    *h = (struct history){ 0 };
}

struct latest {
    const struct history_store *s;
    char prefix[24], skip[64]; /* names of the program's histories; the one to leave out */
    char name[64];
    int64_t mtime;
};

static void consider(const char *name, void *arg)
{
    struct latest *l = arg;
    struct stat st;
    if (strncmp(name, l->prefix, strlen(l->prefix)) != 0 || strcmp(name, l->skip) == 0 ||
        fstatat(l->s->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    if (!l->name[0] || st.st_mtim.tv_sec > l->mtime) {
        snprintf(l->name, sizeof l->name, "%s", name);
        l->mtime = st.st_mtim.tv_sec;
    }
}

int history_load_latest_of(const struct history_store *s, uint64_t program, uint64_t skip_key,
                           struct history *h, char *err, size_t errsize)
{
    struct latest l = { .s = s };
    snprintf(l.prefix, sizeof l.prefix, "%016" PRIx64 "-", program);
    history_name(program, skip_key, l.skip, sizeof l.skip);
    history_each(s, consider, &l);
    if (!l.name[0]) {
        *h = (struct history){ 0 };
        return 1;
    }
    return history_load(s, l.name, h, err, errsize);
}

/* ---- writing ---- */

static char *serialize(const struct history *h, size_t *len)
{
    size_t files = (size_t)h->nfiles * sizeof *h->files;
    size_t entries = (size_t)h->nentries * sizeof *h->entries;
    *len = sizeof(struct disk_header) + files + entries + h->strings_size;
    char *buf = calloc(1, *len);
    if (!buf)
        return NULL;
    struct disk_header *hdr = (struct disk_header *)buf;
    *hdr = (struct disk_header){ .version = VERSION, .header_size = sizeof *hdr,
                                 .program = h->program, .key = h->key, .nfiles = h->nfiles,
                                 .nentries = h->nentries, .strings_size = h->strings_size,
                                 .argc = h->argc, .runs = h->runs, .run_ns = h->run_ns,
                                 .bytes = h->bytes };
    memcpy(hdr->magic, MAGIC, 8);
    char *p = buf + sizeof *hdr;
    memcpy(p, h->files, files);
    memcpy(p + files, h->entries, entries);
    memcpy(p + files + entries, h->strings, h->strings_size);
    hdr->checksum = checksum_of(buf, *len);
    return buf;
}

struct aged {
    char name[64];
    int64_t mtime;
    uint64_t size;
};

struct usage {
    const struct history_store *s;
    struct aged *all;
    size_t n, cap;
};

static void collect(const char *name, void *arg)
{
    struct usage *u = arg;
    struct stat st;
    if (fstatat(u->s->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !specx_grow(&u->all, &u->cap, u->n, sizeof *u->all, 64))
        return;
    struct aged *a = &u->all[u->n++];
    snprintf(a->name, sizeof a->name, "%s", name);
    a->mtime = st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec;
    a->size = (uint64_t)st.st_size;
}

static int older_first(const void *a, const void *b)
{
    const struct aged *x = a, *y = b;
    return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

/* Removes the least recently used histories until the store is within its bounds. */
static void evict(const struct history_store *s)
{
    struct usage u = { .s = s };
    history_each(s, collect, &u);
    uint64_t total = 0;
    for (size_t i = 0; i < u.n; i++)
        total += u.all[i].size;
    qsort(u.all, u.n, sizeof *u.all, older_first);
    for (size_t i = 0, left = u.n; i < u.n && (total > HISTORY_STORE_MAX ||
                                               left > HISTORY_STORE_FILES); i++, left--) {
        unlinkat(s->fd, u.all[i].name, 0);
        total -= u.all[i].size;
    }
    free(u.all);
}

int64_t history_save(const struct history_store *s, const struct history *h)
{
    size_t len;
    char *buf = serialize(h, &len);
    if (!buf)
        return -1;
    char name[64], tmp[96];
    history_name(h->program, h->key, name, sizeof name);
    snprintf(tmp, sizeof tmp, ".%s.%d", name, (int)getpid());
    int fd = openat(s->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
    free(buf);
    if (fd >= 0 && close(fd) < 0)
        ok = false;
    if (!ok || renameat(s->fd, tmp, s->fd, name) < 0) {
        if (fd >= 0)
            unlinkat(s->fd, tmp, 0);
        return -1;
    }
    evict(s);
    return (int64_t)len;
}

void history_touch(const struct history_store *s, const struct history *h)
{
    char name[64];
    history_name(h->program, h->key, name, sizeof name);
    utimensat(s->fd, name, NULL, AT_SYMLINK_NOFOLLOW);
}

void history_each(const struct history_store *s, void (*each)(const char *name, void *arg),
                  void *arg)
{
    DIR *d = specx_opendir_at(s->fd, ".");
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        if (is_history_name(e->d_name))
            each(e->d_name, arg);
    closedir(d);
}

int history_remove(const struct history_store *s, const char *name)
{
    if (!is_history_name(name)) {
        errno = EINVAL;
        return -1;
    }
    return unlinkat(s->fd, name, 0);
}

static bool same_identity(const struct stat *st, const struct history_file *f)
{
    return S_ISREG(st->st_mode) && (uint64_t)st->st_dev == f->dev &&
           (uint64_t)st->st_ino == f->ino && (uint64_t)st->st_size == f->size &&
           st->st_mtim.tv_sec == f->mtime_sec && (uint32_t)st->st_mtim.tv_nsec == f->mtime_nsec;
}

int history_file_open(const struct history_file *f, const char *path)
{
    struct stat st;
    if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !same_identity(&st, f))
        return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0 && (fstat(fd, &st) < 0 || !same_identity(&st, f))) {
        close(fd);
        return -1;
    }
    return fd;
}

const char *history_path_of(const struct history *h, const struct history_file *f)
{
    return h->strings + f->path;
}

const char *history_cwd(const struct history *h)
{
    return h->strings;
}

const char *history_arg(const struct history *h, uint32_t i)
{
    const char *p = h->strings;
    for (uint32_t k = 0; k <= i; k++)
        p += strlen(p) + 1;
    return p;
}
