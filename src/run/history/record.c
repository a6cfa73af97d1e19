/* See record.h. */
#include "run/history/record.h"

#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "common/util.h"
#include "kernel/residency.h"

#define TABLE_SIZE 16384u /* above twice the trace's and a history's files together */
#define NONE UINT32_MAX
/* The command as the history keeps it (for `specx history show`): longer ones keep none. */
#define COMMAND_MAX (64u * 1024u)
#define MAPPED_MAX (256ull * 1024u * 1024u)

struct span {
    uint64_t off, end;
};

/* A file of the new history while it is built. */
struct bfile {
    uint64_t dev, ino, size;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    const char *path;
    struct span *covered; /* what its entries cover: sorted, disjoint */
    size_t ncovered, capcovered;
    uint32_t out;         /* its index in the history written, NONE before */
};

struct builder {
    struct bfile *files;
    size_t nfiles, capfiles;
    uint32_t table[TABLE_SIZE]; /* file index + 1 by dev and ino */
    struct history_entry *entries;
    size_t nentries, capentries;
};

static uint32_t slot_of(uint64_t dev, uint64_t ino)
{
    return (uint32_t)(((dev * 0x9e3779b97f4a7c15ull) ^ (ino * 0xff51afd7ed558ccdull)) >> 20) &
           (TABLE_SIZE - 1);
}

static struct bfile *find(struct builder *b, uint64_t dev, uint64_t ino, uint32_t **slot)
{
    for (uint32_t s = slot_of(dev, ino);; s = (s + 1) & (TABLE_SIZE - 1)) {
        *slot = &b->table[s];
        if (!b->table[s])
            return NULL;
        struct bfile *f = &b->files[b->table[s] - 1];
        if (f->dev == dev && f->ino == ino)
            return f;
    }
}

/* Adds a file (its identity and path), unless one of that dev and ino is there: then that. */
static struct bfile *add_file(struct builder *b, const struct bfile *proto)
{
    uint32_t *slot;
    struct bfile *f = find(b, proto->dev, proto->ino, &slot);
    if (f || b->nfiles >= TABLE_SIZE / 2 ||
        !specx_grow(&b->files, &b->capfiles, b->nfiles, sizeof *b->files, 64))
        return f;
    b->files[b->nfiles] = *proto;
    b->files[b->nfiles].out = NONE;
    *slot = (uint32_t)++b->nfiles;
    return &b->files[b->nfiles - 1];
}

/* Marks [off, end) covered in F, merging the spans it touches. */
static void cover(struct bfile *f, uint64_t off, uint64_t end)
{
    size_t lo = 0, hi = f->ncovered;
    while (lo < hi) { /* the first span that ends at or past OFF */
        size_t mid = (lo + hi) / 2;
        if (f->covered[mid].end < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t last = lo;
    while (last < f->ncovered && f->covered[last].off <= end)
        last++;
    if (last > lo) { /* spans lo .. last-1 merge into one */
        off = off < f->covered[lo].off ? off : f->covered[lo].off;
        end = end > f->covered[last - 1].end ? end : f->covered[last - 1].end;
        memmove(&f->covered[lo + 1], &f->covered[last],
                (f->ncovered - last) * sizeof *f->covered);
        f->ncovered -= last - lo - 1;
        f->covered[lo] = (struct span){ off, end };
        return;
    }
    if (!specx_grow(&f->covered, &f->capcovered, f->ncovered, sizeof *f->covered, 8))
        return;
    memmove(&f->covered[lo + 1], &f->covered[lo], (f->ncovered - lo) * sizeof *f->covered);
    f->covered[lo] = (struct span){ off, end };
    f->ncovered++;
}

static void add_piece(struct builder *b, uint32_t file, uint64_t off, uint64_t end,
                      uint64_t t_ns, uint32_t unused_runs)
{
    struct history_entry *last = b->nentries ? &b->entries[b->nentries - 1] : NULL;
    if (last && last->file == file && last->off + last->len == off &&
        last->unused_runs == unused_runs) {
        last->len += end - off;
        return;
    }
    if (b->nentries >= HISTORY_MAX_ENTRIES ||
        !specx_grow(&b->entries, &b->capentries, b->nentries, sizeof *b->entries, 256))
        return;
    b->entries[b->nentries++] = (struct history_entry){ .file = file, .off = off,
                                                        .len = end - off, .t_ns = t_ns,
                                                        .unused_runs = unused_runs };
}

/* Adds what of [off, end) of F is not covered yet, first read at T_NS. */
static void add_range(struct builder *b, struct bfile *f, uint64_t off, uint64_t end,
                      uint64_t t_ns, uint32_t unused_runs)
{
    end = end < f->size ? end : f->size;
    if (off >= end)
        return;
    uint32_t file = (uint32_t)(f - b->files);
    uint64_t at = off;
    for (size_t i = 0; i < f->ncovered && at < end; i++) {
        const struct span s = f->covered[i];
        if (s.end <= at)
            continue;
        if (s.off >= end)
            break;
        if (s.off > at)
            add_piece(b, file, at, s.off, t_ns, unused_runs);
        at = s.end > at ? s.end : at;
    }
    if (at < end)
        add_piece(b, file, at, end, t_ns, unused_runs);
    cover(f, off, end);
}

/* The files the trace names: untrusted, so only a NUL-ended absolute path counts. */
static void add_trace_files(struct builder *b, const struct specx_trace_header *t)
{
    const struct specx_trace_file *files = specx_trace_files(t);
    uint32_t n = __atomic_load_n(&t->files, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < n && i < SPECX_TRACE_MAX_FILES; i++) {
        const struct specx_trace_file *tf = &files[i];
        if (!__atomic_load_n(&tf->ready, __ATOMIC_ACQUIRE) || tf->path[0] != '/' ||
            !memchr(tf->path, '\0', sizeof tf->path))
            continue;
        add_file(b, &(struct bfile){ .dev = tf->dev, .ino = tf->ino, .size = tf->size,
                                     .mtime_sec = tf->mtime_sec, .mtime_nsec = tf->mtime_nsec,
                                     .path = tf->path });
    }
}

/* Of a range the program mapped, the pages in memory now that it has ended: its faults
 * brought them in (or they were there already, which a mapping made while not all was
 * cannot tell apart). At most MAPPED_MAX of a mapping is looked at. */
static void add_mapped(struct builder *b, struct bfile *f, const struct specx_trace_read *r)
{
    const struct history_file identity = { .dev = f->dev, .ino = f->ino, .size = f->size,
                                           .mtime_sec = f->mtime_sec,
                                           .mtime_nsec = f->mtime_nsec };
    uint64_t len = r->len < MAPPED_MAX ? r->len : MAPPED_MAX;
    uint64_t off = r->off & ~(uint64_t)(SPECX_PAGE_SIZE - 1);
    size_t pages = (size_t)specx_pages_spanned(off, len + (r->off - off));
    unsigned char *vec = malloc(pages ? pages : 1);
    int fd = vec ? history_file_open(&identity, f->path) : -1;
    if (fd >= 0 && specx_uptodate_pages(fd, off, (uint64_t)pages * SPECX_PAGE_SIZE, vec) == 0) {
        for (size_t i = 0; i < pages;) {
            size_t j = i;
            while (j < pages && (vec[j] & 1))
                j++;
            if (j > i)
                add_range(b, f, off + i * (uint64_t)SPECX_PAGE_SIZE,
                          off + j * (uint64_t)SPECX_PAGE_SIZE, r->t_ns, 0);
            i = j + 1;
        }
    }
    if (fd >= 0)
        close(fd);
    free(vec);
}

static void add_trace_reads(struct builder *b, const struct specx_trace_header *t)
{
    const struct specx_trace_read *reads = specx_trace_reads(t);
    uint32_t n = __atomic_load_n(&t->reads, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < n && i < SPECX_TRACE_MAX_READS; i++) {
        const struct specx_trace_read *r = &reads[i];
        uint32_t *slot;
        struct bfile *f = __atomic_load_n(&r->ready, __ATOMIC_ACQUIRE)
                              ? find(b, r->dev, r->ino, &slot) : NULL;
        if (!f || r->off + r->len <= r->off)
            continue;
        if (r->flags & SPECX_TRACE_MAPPED)
            add_mapped(b, f, r);
        else
            add_range(b, f, r->off, r->off + r->len, r->t_ns, 0);
    }
}

/* The old history's ranges this run did not read: kept while their file has not changed and
 * the replay has not brought them in for nothing too often. */
static void add_old(struct builder *b, const struct history *old,
                    const struct history_plan *plan)
{
    for (uint32_t i = 0; i < old->nentries; i++) {
        const struct history_entry *e = &old->entries[i];
        const struct history_file *of = &old->files[e->file];
        uint32_t unused = e->unused_runs + (history_plan_unread(plan, i) ? 1u : 0u);
        if (history_plan_read(plan, i) || history_plan_stale(plan, e->file) ||
            unused >= HISTORY_UNUSED_RUNS_MAX)
            continue;
        struct bfile *f = add_file(b, &(struct bfile){ .dev = of->dev, .ino = of->ino,
                                                       .size = of->size,
                                                       .mtime_sec = of->mtime_sec,
                                                       .mtime_nsec = of->mtime_nsec,
                                                       .path = history_path_of(old, of) });
        /* The same file seen changed in this run: the old ranges describe what it was. */
        if (f && f->size == of->size && f->mtime_sec == of->mtime_sec &&
            f->mtime_nsec == of->mtime_nsec)
            add_range(b, f, e->off, e->off + e->len, e->t_ns, unused);
    }
}

static int by_time(const void *a, const void *b)
{
    const struct history_entry *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    return (x->file > y->file) - (x->file < y->file);
}

/* Appends S (with its NUL) to the strings; its offset, or NONE when they are full. */
static uint32_t add_string(char **strings, uint32_t *size, const char *s)
{
    size_t len = strlen(s) + 1;
    if (*size + len > HISTORY_MAX_STRINGS)
        return NONE;
    char *grown = realloc(*strings, *size + len);
    if (!grown)
        return NONE;
    memcpy(grown + *size, s, len);
    *strings = grown;
    uint32_t at = *size;
    *size += (uint32_t)len;
    return at;
}

/* The history to write, from what was built: files that keep an entry, in order of use. */
static bool assemble(struct builder *b, const struct history_recording *rec,
                     struct history *h)
{
    uint32_t argc = 0;
    size_t command = strlen(rec->cwd) + 1;
    for (; rec->argv[argc]; argc++)
        command += strlen(rec->argv[argc]) + 1;
    if (command > COMMAND_MAX)
        return false;
    *h = (struct history){ .program = rec->program, .key = rec->key, .argc = argc,
                           .run_ns = rec->run_ns,
                           .runs = rec->old && rec->old->nentries ? rec->old->runs + 1 : 1 };
    add_string(&h->strings, &h->strings_size, rec->cwd);
    for (uint32_t i = 0; i < argc; i++)
        add_string(&h->strings, &h->strings_size, rec->argv[i]);
    h->files = calloc(b->nfiles + 1, sizeof *h->files);
    h->entries = calloc(b->nentries + 1, sizeof *h->entries);
    if (!h->strings || !h->files || !h->entries)
        return false;
    qsort(b->entries, b->nentries, sizeof *b->entries, by_time);
    for (size_t i = 0; i < b->nentries; i++) {
        struct bfile *f = &b->files[b->entries[i].file];
        if (f->out == NONE && h->nfiles < HISTORY_MAX_FILES) {
            uint32_t path = add_string(&h->strings, &h->strings_size, f->path);
            if (path == NONE)
                continue;
            h->files[h->nfiles] = (struct history_file){ .dev = f->dev, .ino = f->ino,
                                                         .size = f->size,
                                                         .mtime_sec = f->mtime_sec,
                                                         .mtime_nsec = f->mtime_nsec,
                                                         .path = path };
            f->out = h->nfiles++;
        }
        if (f->out == NONE)
            continue;
        h->entries[h->nentries] = b->entries[i];
        h->entries[h->nentries].file = f->out;
        h->bytes += b->entries[i].len;
        h->nentries++;
    }
    return true;
}

static void free_builder(struct builder *b)
{
    for (size_t i = 0; i < b->nfiles; i++)
        free(b->files[i].covered);
    free(b->files);
    free(b->entries);
    free(b);
}

void history_record(const struct history_recording *rec, struct history_counts *c)
{
    struct builder *b = calloc(1, sizeof *b);
    struct history h = { 0 };
    if (!b)
        return;
    add_trace_files(b, rec->trace);
    add_trace_reads(b, rec->trace);
    if (rec->old)
        add_old(b, rec->old, rec->plan);
    bool built = assemble(b, rec, &h);
    int64_t size = built && h.nentries > 0 ? history_save(rec->store, &h) : -1;
    if (size >= 0) {
        c->saved = true;
        c->recorded_entries = h.nentries;
        c->recorded_bytes = h.bytes;
        c->recorded_size = (uint64_t)size;
    } else if (built && h.nentries == 0 && rec->old && rec->old->nentries) {
        char name[64];
        history_name(rec->program, rec->key, name, sizeof name);
        history_remove(rec->store, name);
    }
    free(h.strings);
    free(h.files);
    free(h.entries);
    free_builder(b);
}
