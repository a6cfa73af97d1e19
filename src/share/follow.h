/* specx share --follow CGROUP...: prefetching for a rotation someone else drives. */
#ifndef SHARE_FOLLOW_H
#define SHARE_FOLLOW_H

#include "share/options.h"

/* Follows the groups named by o->jobs (one path each) until every one is gone (exit status
 * 0) or a signal arrives on SIGFD (128 + its number). */
int share_follow(const struct share_options *o, int sigfd);

#endif
