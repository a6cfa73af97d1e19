/* Pressure stall information (PSI): the share of time tasks stalled on memory, I/O or CPU,
 * system-wide (/proc/pressure/RESOURCE) or per cgroup (RESOURCE.pressure, a core v2 file, so
 * it exists in v2 groups even where the memory controller is on v1), and triggers that wake a
 * poll(2) when stalls exceed a threshold within a window: how `specx idle` and the memory
 * control of `specx run` learn of pressure the moment it begins. */
#ifndef SPECX_KERNEL_PSI_H
#define SPECX_KERNEL_PSI_H

#include "cgroup.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct specx_psi_line {
    double avg10, avg60, avg300; /* percent of wall time stalled, decayed averages */
    uint64_t total_us;           /* stalled time since boot (or the group's birth) */
};

struct specx_psi {
    struct specx_psi_line some; /* at least one task stalled */
    struct specx_psi_line full; /* all non-idle tasks stalled (absent for system-wide CPU) */
    bool has_full;
};

/* Parses the text of a pressure file. False if it has no "some" line. */
bool specx_psi_parse(const char *text, struct specx_psi *psi);

/* Reads and parses pressure file PATH. */
bool specx_psi_read(const char *path, struct specx_psi *psi);

/* PATH of RESOURCE's ("memory", "io", "cpu") pressure file for CG, or system-wide if CG is
 * NULL or a v1 group (v1 has no per-group PSI). False if it does not fit. */
bool specx_psi_path(const struct specx_cgroup *cg, const char *resource, char *path, size_t size);

/* Opens pressure file PATH with a trigger: poll(2) reports POLLPRI on the returned descriptor
 * when tasks stalled ("full" if FULL, else "some") for more than STALL_US within any WINDOW_US
 * The kernel takes 500 ms <= WINDOW_US <= 10 s, and without CAP_SYS_RESOURCE (as in many
 * containers, and on the development machines even as root) only whole multiples of 2 s,
 * checked at its 2 s averaging period: such a trigger can lag pressure by up to 2 s, so a
 * controller that must react faster also samples the "total" counters itself.
 * Returns the descriptor (close it to remove the trigger), or -1 with errno. */
int specx_psi_trigger(const char *path, bool full, unsigned stall_us, unsigned window_us);

#endif
