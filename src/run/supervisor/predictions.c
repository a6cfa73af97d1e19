/* See predictions.h. */
#include "run/supervisor/predictions.h"

void predictions_reset(struct prediction_log *l)
{
    l->n = l->passed = 0;
}

bool predictions_add(struct prediction_log *l, struct prediction p)
{
    if (l->n == PREDICTIONS_MAX)
        return false;
    l->rec[l->n++] = p;
    return true;
}

void predictions_pass_read(struct prediction_log *l, uint64_t program_read)
{
    while (l->passed < l->n && l->rec[l->passed].copy_read <= program_read)
        l->passed++;
}

bool predictions_stalled_at(struct prediction_log *l, uint64_t ino, uint64_t off)
{
    for (unsigned i = 0; i < l->n; i++) {
        const struct prediction *p = &l->rec[i];
        if (p->ino == ino && off >= p->off && off < p->off + p->len) {
            if (i > l->passed)
                l->passed = i;
            return true;
        }
    }
    return false;
}

unsigned predictions_outstanding(const struct prediction_log *l)
{
    return l->n - l->passed;
}

uint64_t predictions_oldest_age(const struct prediction_log *l, uint64_t now)
{
    return l->passed < l->n ? now - l->rec[l->passed].made_ns : 0;
}
