/* Talking to a running slowfs through its mount point: statistics, unmounting, power cuts. */
#ifndef SLOWFS_CONTROL_H
#define SLOWFS_CONTROL_H

#include <stdbool.h>

/* Prints the statistics of the slowfs mounted at mountpoint (JSON or a table) to stdout.
 * Returns the exit status. */
int control_stats(const char *mountpoint, bool json);

/* Unmounts the slowfs at mountpoint and waits (a few seconds at most) for its server to
 * exit. Returns the exit status. */
int control_unmount(const char *mountpoint);

/* Cuts the power of the --volatile-cache slowfs at mountpoint (volatile.h). Returns the exit
 * status. */
int control_power_cut(const char *mountpoint);

#endif
