/* See undo_log.h. */
#include "slowfs/undo_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static void free_names(struct undo_entry *e)
{
    free(e->name[0]);
    free(e->name[1]);
}

struct undo_entry *undo_log_add(struct undo_log *log, enum undo_kind kind, unsigned dir0,
                                const char *name0, unsigned dir1, const char *name1)
{
    if (!specx_grow(&log->v, &log->cap, log->n, sizeof *log->v, 64))
        return NULL;
    struct undo_entry e = {
        .kind = kind,
        .dir = { dir0, name1 ? dir1 : dir0 },
        .name = { strdup(name0), name1 ? strdup(name1) : NULL },
        .pending = { true, name1 != NULL },
    };
    if (!e.name[0] || (name1 && !e.name[1])) {
        free_names(&e);
        errno = ENOMEM;
        return NULL;
    }
    log->v[log->n] = e;
    return &log->v[log->n++];
}

void undo_log_drop_last(struct undo_log *log)
{
    free_names(&log->v[--log->n]);
}

void undo_log_synced(struct undo_log *log, unsigned dir,
                     void (*durable)(const struct undo_entry *, void *), void *arg)
{
    size_t kept = 0;
    for (size_t i = 0; i < log->n; i++) {
        struct undo_entry *e = &log->v[i];
        for (int k = 0; k < 2; k++)
            if (e->dir[k] == dir)
                e->pending[k] = false;
        if (e->pending[0] || e->pending[1]) {
            log->v[kept++] = *e;
            continue;
        }
        durable(e, arg);
        free_names(e);
    }
    log->n = kept;
}

void undo_log_clear(struct undo_log *log)
{
    for (size_t i = 0; i < log->n; i++)
        free_names(&log->v[i]);
    free(log->v);
    *log = (struct undo_log){ 0 };
}
