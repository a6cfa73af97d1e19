/* See psi.h. */
#include "kernel/psi.h"
#include "kernel/kfile.h"

#include <stdio.h>
#include <string.h>

/* One line: "some avg10=0.12 avg60=0.05 avg300=0.01 total=12345". */
static bool parse_line(const char *line, struct specx_psi_line *out)
{
    unsigned long long total;
    if (sscanf(line, "%*s avg10=%lf avg60=%lf avg300=%lf total=%llu", &out->avg10, &out->avg60,
               &out->avg300, &total) != 4)
        return false;
    out->total_us = total;
    return true;
}

bool specx_psi_parse(const char *text, struct specx_psi *psi)
{
    memset(psi, 0, sizeof *psi);
    const char *full = strstr(text, "full ");
    psi->has_full = full && parse_line(full, &psi->full);
    return strncmp(text, "some ", 5) == 0 && parse_line(text, &psi->some);
}

bool specx_psi_read(const char *path, struct specx_psi *psi)
{
    char text[256];
    return specx_kfile_read(path, text, sizeof text) > 0 && specx_psi_parse(text, psi);
}

bool specx_psi_path(const struct specx_cgroup *cg, const char *resource, char *path, size_t size)
{
    int n = cg && cg->version == SPECX_CG_V2
                ? snprintf(path, size, "%s/%s.pressure", cg->dir, resource)
                : snprintf(path, size, "/proc/pressure/%s", resource);
    return n > 0 && (size_t)n < size;
}
