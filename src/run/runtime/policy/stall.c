/* See stall.h. */
#include "run/runtime/policy/stall.h"

/* Whether the copy the stall finds is left to go on. Left alone: a copy still entering
 * (re-creating it at each stall would only start that over); a dry copy on track that has not
 * earned trust (on probation); and, unless a dry copy has earned its promotion to a live one,
 * a copy at a wait for readahead (no sign of divergence: it predicts beyond the window in
 * flight) or at another thread's stall (threads of a pool take turns at one queue, and the
 * copy runs on through all of it). A copy that ended by itself is never kept. */
static bool keeps_copy(const struct specx_stall_view *v)
{
    if (!v->running)
        return false;
    if (v->entering)
        return true;
    bool promoted = v->dry && v->earned;
    if (v->on_track && v->dry && !v->earned)
        return true;
    return !promoted && (v->arrived || v->other_thread);
}

enum specx_stall_action specx_stall_decide(const struct specx_stall_facts *f)
{
    if (!f->allowed)
        return SPECX_STALL_IGNORE;
    if (f->memory_stopped)
        return SPECX_STALL_STOP;
    /* Another stream's stall neither replaces nor promotes the copy; a real one (not a wait
     * for readahead) with no back-off on its file, the copy past entering, starts its own. */
    if (f->had_copy && f->copy.running && f->copy.other_stream)
        return f->copy.entering || f->copy.arrived || f->backing_off ? SPECX_STALL_KEEP
                                                                     : SPECX_STALL_NEW_STREAM;
    if (f->had_copy && keeps_copy(&f->copy))
        return SPECX_STALL_KEEP;
    return f->backing_off ? SPECX_STALL_BACK_OFF : SPECX_STALL_COPY;
}
