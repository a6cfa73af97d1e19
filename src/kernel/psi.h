/* Pressure stall information (PSI): the share of time tasks stalled on memory, I/O or CPU,
 * system-wide (/proc/pressure/RESOURCE) or per cgroup (RESOURCE.pressure, a core v2 file, so
 * it exists in v2 groups even where the memory controller is on v1). Its users sample the
 * "total" counters rather than arm a trigger: without CAP_SYS_RESOURCE (which root lacks on
 * the development machines) the kernel takes only trigger windows of whole 2 s, and such a
 * trigger can lag pressure by up to 2 s (docs/design/idle.md, Memory). */
#ifndef SPECX_KERNEL_PSI_H
#define SPECX_KERNEL_PSI_H

#include "kernel/cgroup.h"

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

#endif
