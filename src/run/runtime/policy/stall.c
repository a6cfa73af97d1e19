/* See stall.h. */
#include "run/runtime/policy/stall.h"

bool specx_stall_keeps_copy(const struct specx_stall_view *v)
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
