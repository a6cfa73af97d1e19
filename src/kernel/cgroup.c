/* See cgroup.h. */
#include "kernel/cgroup.h"
#include "kernel/kfile.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The text of /proc/self/mounts fits here on any machine specx runs on; a longer one is cut,
 * and a hierarchy not in the cut part is reported missing rather than guessed. */
#define MOUNTS_SIZE 32768

/* Cuts BUF's first line off in place; returns the rest (NULL at the end). */
static char *next_line(char *line)
{
    char *end = strchr(line, '\n');
    if (!end)
        return NULL;
    *end = '\0';
    return end + 1;
}

/* True if comma-separated LIST has ITEM. */
static bool list_has(const char *list, const char *item)
{
    size_t len = strlen(item);
    for (const char *c = list;; c++) {
        size_t clen = strcspn(c, ",");
        if (clen == len && strncmp(c, item, len) == 0)
            return true;
        c += clen;
        if (*c != ',')
            return false;
    }
}

const char *specx_cgroup_path_in(char *buf, const char *controller, bool *v1)
{
    const char *v2_path = NULL;
    for (char *line = buf, *next; line && *line; line = next) {
        next = next_line(line);
        char *controllers = strchr(line, ':');
        char *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path)
            continue;
        *path++ = '\0';
        controllers++;
        if (*controllers == '\0')
            v2_path = path;
        else if (list_has(controllers, controller)) {
            *v1 = true;
            return path;
        }
    }
    *v1 = false;
    return v2_path;
}

const char *specx_cgroup_mount_in(char *buf, const char *controller, bool *v1)
{
    const char *v2_mount = NULL;
    for (char *line = buf, *next; line && *line; line = next) {
        next = next_line(line);
        char *field[4];
        char *save = NULL;
        int n = 0;
        for (char *tok = strtok_r(line, " ", &save); tok && n < 4; tok = strtok_r(NULL, " ", &save))
            field[n++] = tok;
        if (n < 4)
            continue;
        if (strcmp(field[2], "cgroup") == 0 && list_has(field[3], controller)) {
            *v1 = true;
            return field[1];
        }
        if (strcmp(field[2], "cgroup2") == 0 && !v2_mount)
            v2_mount = field[1];
    }
    *v1 = false;
    return v2_mount;
}

/* Joins A and B into OUT; false if it does not fit. */
static bool join(char *out, size_t size, const char *a, const char *b)
{
    int n = snprintf(out, size, "%s%s%s", a, *b == '/' ? "" : "/", b);
    return n > 0 && (size_t)n < size;
}

/* Reads the mounts and PID's groups into MOUNTS and GROUPS and finds in them the mount of the
 * hierarchy that has CONTROLLER and PID's path in it (pointers into the buffers). */
static int locate(pid_t pid, const char *controller, char *mounts, size_t mounts_size,
                  char *groups, size_t groups_size, const char **mount, const char **path,
                  enum specx_cg_version *version)
{
    char proc[64];
    bool mount_v1, group_v1;
    snprintf(proc, sizeof proc, pid ? "/proc/%d/cgroup" : "/proc/self/cgroup", (int)pid);
    if (specx_kfile_read("/proc/self/mounts", mounts, mounts_size) < 0 ||
        specx_kfile_read(proc, groups, groups_size) < 0)
        return -1;
    *mount = specx_cgroup_mount_in(mounts, controller, &mount_v1);
    *path = specx_cgroup_path_in(groups, controller, &group_v1);
    if (!*mount || !*path || mount_v1 != group_v1) {
        errno = ENOENT;
        return -1;
    }
    *version = mount_v1 ? SPECX_CG_V1 : SPECX_CG_V2;
    return 0;
}

int specx_cgroup_where(pid_t pid, const char *controller, struct specx_cgroup_where *where)
{
    char mounts[MOUNTS_SIZE], groups[4096];
    const char *mount, *path;
    if (locate(pid, controller, mounts, sizeof mounts, groups, sizeof groups, &mount, &path,
               &where->version) < 0)
        return -1;
    if (strlen(mount) >= sizeof where->mount || strlen(path) >= sizeof where->path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(where->mount, mount);
    strcpy(where->path, path);
    return 0;
}

int specx_cgroup_of(pid_t pid, const char *controller, struct specx_cgroup *cg)
{
    char mounts[MOUNTS_SIZE], groups[4096];
    const char *mount, *path;
    if (locate(pid, controller, mounts, sizeof mounts, groups, sizeof groups, &mount, &path,
               &cg->version) < 0)
        return -1;
    int n = snprintf(cg->dir, sizeof cg->dir, "%s%s", mount, strcmp(path, "/") == 0 ? "" : path);
    if (n < 0 || (size_t)n >= sizeof cg->dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* True if CONTROLLER is (or can be made) enabled for CG's children on v2. */
static bool v2_can_delegate(const struct specx_cgroup *cg, const char *controller)
{
    char enabled[512], request[64];
    if (specx_cgroup_read(cg, "cgroup.subtree_control", enabled, sizeof enabled) < 0)
        return false;
    for (char *save = NULL, *c = strtok_r(enabled, " \n", &save); c; c = strtok_r(NULL, " \n", &save))
        if (strcmp(c, controller) == 0)
            return true;
    snprintf(request, sizeof request, "+%s", controller);
    return specx_cgroup_write(cg, "cgroup.subtree_control", request) == 0;
}

/* Core v2 files need no controller: only real controllers must be delegated. */
static bool is_v2_core(const char *controller)
{
    return controller == NULL || strcmp(controller, "freezer") == 0 ||
           strcmp(controller, SPECX_CG_CORE) == 0;
}

bool specx_cgroup_parent(const struct specx_cgroup *cg, struct specx_cgroup *parent)
{
    /* Only a hierarchy's root lacks v2's cgroup.type; only a v1 root has cgroup.sane_behavior. */
    char text[32];
    bool root = cg->version == SPECX_CG_V2
                    ? specx_cgroup_read(cg, "cgroup.type", text, sizeof text) < 0
                    : specx_cgroup_read(cg, "cgroup.sane_behavior", text, sizeof text) >= 0;
    char *slash = strrchr(cg->dir, '/');
    if (root || !slash || slash == cg->dir)
        return false;
    *parent = *cg;
    parent->dir[slash - cg->dir] = '\0';
    return true;
}

int specx_cgroup_parent_for(const char *controller, struct specx_cgroup *parent)
{
    if (specx_cgroup_of(0, controller, parent) < 0)
        return -1;
    if (parent->version == SPECX_CG_V1 || is_v2_core(controller))
        return 0;
    /* The nearest group up from our own that may have CONTROLLER for its children: under it,
     * the limits of the groups above still hold (a systemd slice's MemoryMax, a job's group);
     * the root only when nothing nearer can (v2's "no internal processes" rule refuses it
     * below any group that holds processes, as our own usually does). */
    do {
        if (v2_can_delegate(parent, controller))
            return 0;
    } while (specx_cgroup_parent(parent, parent));
    errno = ENOTSUP;
    return -1;
}

int specx_cgroup_make(const struct specx_cgroup *parent, const char *name,
                      const char *controller, struct specx_cgroup *child)
{
    if (strchr(name, '/') || !*name) {
        errno = EINVAL;
        return -1;
    }
    if (parent->version == SPECX_CG_V2 && !is_v2_core(controller) &&
        !v2_can_delegate(parent, controller)) {
        errno = ENOTSUP;
        return -1;
    }
    child->version = parent->version;
    if (!join(child->dir, sizeof child->dir, parent->dir, name)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdir(child->dir, 0755);
}

int specx_cgroup_attach(const struct specx_cgroup *cg, pid_t pid)
{
    char text[32];
    snprintf(text, sizeof text, "%d\n", (int)pid);
    return specx_cgroup_write(cg, "cgroup.procs", text);
}

long specx_cgroup_procs(const struct specx_cgroup *cg, pid_t *pids, size_t max)
{
    char text[65536];
    long len = specx_cgroup_read(cg, "cgroup.procs", text, sizeof text - 1);
    if (len < 0)
        return -1;
    text[len] = '\0';
    size_t n = 0;
    for (char *p = text, *end; *p && n < max; p = end) {
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 0)
            pids[n++] = (pid_t)pid;
    }
    return (long)n;
}

long specx_cgroup_procs_tree(const struct specx_cgroup *cg, bool self, pid_t *pids, size_t max)
{
    long n = self ? specx_cgroup_procs(cg, pids, max) : 0;
    DIR *dir = opendir(cg->dir);
    if (n < 0 || !dir) {
        if (dir)
            closedir(dir);
        return -1;
    }
    struct dirent *e;
    struct specx_cgroup child = { .version = cg->version };
    while ((e = readdir(dir)) && (size_t)n < max) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
            !join(child.dir, sizeof child.dir, cg->dir, e->d_name))
            continue;
        long k = specx_cgroup_procs_tree(&child, true, pids + n, max - (size_t)n);
        n += k > 0 ? k : 0;
    }
    closedir(dir);
    return n;
}

bool specx_proc_stat_cpu_ticks(const char *text, uint64_t *ticks)
{
    const char *p = strrchr(text, ')');
    /* After ") ": state (field 3), then fields 4-13, then utime, stime, cutime, cstime. */
    for (int field = 3; p && field <= 14; field++)
        p = strchr(p + 1, ' ');
    unsigned long long t[4];
    if (!p || sscanf(p, " %llu %llu %llu %llu", &t[0], &t[1], &t[2], &t[3]) != 4)
        return false;
    *ticks = t[0] + t[1] + t[2] + t[3];
    return true;
}

static uint64_t process_cpu_ns(pid_t pid)
{
    char path[64], text[1024];
    uint64_t ticks;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    long len = specx_kfile_read(path, text, sizeof text);
    if (len <= 0 || !specx_proc_stat_cpu_ticks(text, &ticks))
        return 0;
    return ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

uint64_t specx_cgroup_cpu_ns(const struct specx_cgroup *cg)
{
    uint64_t usec;
    if (cg->version == SPECX_CG_V2)
        return specx_cgroup_key_u64(cg, "cpu.stat", "usage_usec", &usec) ? usec * 1000 : 0;
    pid_t pids[SPECX_CGROUP_PROCS_MAX];
    long n = specx_cgroup_procs(cg, pids, SPECX_CGROUP_PROCS_MAX);
    uint64_t ns = 0;
    for (long i = 0; i < n; i++)
        ns += process_cpu_ns(pids[i]);
    return ns;
}

bool specx_cgroup_is_empty(const struct specx_cgroup *cg)
{
    char text[64];
    uint64_t populated;
    if (cg->version == SPECX_CG_V2 &&
        specx_cgroup_key_u64(cg, "cgroup.events", "populated", &populated))
        return populated == 0;
    return specx_cgroup_read(cg, "cgroup.procs", text, sizeof text) == 0;
}

int specx_cgroup_remove(const struct specx_cgroup *cg, int timeout_ms)
{
    const struct timespec pause = { 0, 10 * 1000 * 1000 };
    for (int waited = 0;; waited += 10) {
        if (rmdir(cg->dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY || waited >= timeout_ms)
            return -1;
        nanosleep(&pause, NULL);
    }
}

bool specx_cgroup_file(const struct specx_cgroup *cg, const char *file, char *path, size_t size)
{
    if (join(path, size, cg->dir, file))
        return true;
    errno = ENAMETOOLONG;
    return false;
}

long specx_cgroup_read(const struct specx_cgroup *cg, const char *file, char *buf, size_t size)
{
    char path[PATH_MAX];
    if (!specx_cgroup_file(cg, file, path, sizeof path))
        return -1;
    return specx_kfile_read(path, buf, size);
}

int specx_cgroup_write(const struct specx_cgroup *cg, const char *file, const char *text)
{
    char path[PATH_MAX];
    if (!specx_cgroup_file(cg, file, path, sizeof path))
        return -1;
    return specx_kfile_write(path, text);
}

bool specx_cgroup_u64(const struct specx_cgroup *cg, const char *file, uint64_t *out)
{
    char value[64];
    return specx_cgroup_read(cg, file, value, sizeof value) > 0 &&
           specx_kfile_parse_u64(value, out);
}

bool specx_cgroup_key_u64(const struct specx_cgroup *cg, const char *file, const char *key,
                          uint64_t *out)
{
    char text[8192];
    return specx_cgroup_read(cg, file, text, sizeof text) > 0 && specx_kfile_key_u64(text, key, out);
}
