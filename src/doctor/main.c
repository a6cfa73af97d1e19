/* specx doctor: what this machine gives specx and what it does not, each line with its
 * consequence and its fix. Exit status 0 when specx has everything it uses here, 1 when
 * something is missing or degraded (specx still runs), 2 on bad usage. */
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "doctor/doctor.h"

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: specx doctor [--json] [--cgroup]\n"
        "\n"
        "Probes what this machine gives specx: the kernel and cachestat(2), cgroups v1/v2 and\n"
        "whether this user can make groups, PSI and its triggers, memory.oom.group, fanotify,\n"
        "overlayfs, userfaultfd, seccomp user notification, ptrace, each disk's I/O scheduler,\n"
        "io.cost, HTB, swap and zram. One line a check: its status (ok, degraded, missing),\n"
        "what depends on it, what was found, the consequence and the fix.\n"
        "\n"
        "  --json     the same as JSON, for scripts\n"
        "  --cgroup   only where the cgroup controllers are (JSON with --json)\n"
        "  --help     this text\n"
        "\n"
        "Exit status: 0 everything specx uses is here, 1 something is missing or degraded\n"
        "(specx still runs), 2 bad usage.\n");
}

int main(int argc, char **argv)
{
    specx_set_progname("specx doctor");
    bool json = false, cgroup = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--cgroup") == 0)
            cgroup = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else
            specx_die(2, "unknown argument '%s'; see 'specx doctor --help'", argv[i]);
    }
    if (cgroup) {
        if (json)
            doctor_print_cgroup_json();
        else
            doctor_print_cgroup_text();
        return 0;
    }
    struct doctor_report report = { 0 };
    doctor_check_kernel(&report);
    doctor_check_cgroups(&report);
    doctor_check_io(&report);
    doctor_check_network(&report);
    if (json)
        doctor_print_json(&report);
    else
        doctor_print_table(&report);
    return doctor_exit_status(&report);
}
