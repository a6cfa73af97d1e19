#include "common/paths.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Build-tree directories that hold components, relative to SPECX_BUILD_ROOT. */
static const char *const build_subdirs[] = {
    "src/run", "src/slowfs", "src/share", "src/idle", "src/doctor", "src/run/runtime", "bench",
    "bench/programs", NULL,
};

static bool running_from_build_tree(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return false;
    exe[n] = '\0';
    size_t root_len = strlen(SPECX_BUILD_ROOT);
    return strncmp(exe, SPECX_BUILD_ROOT, root_len) == 0 && exe[root_len] == '/';
}

static int append_dir(char *buf, size_t size, size_t *used, const char *dir, const char *sub)
{
    int n = snprintf(buf + *used, size - *used, "%s%s%s%s", *used ? ":" : "", dir,
                     sub ? "/" : "", sub ? sub : "");
    if (n < 0 || (size_t)n >= size - *used)
        return -1;
    *used += (size_t)n;
    return 0;
}

int specx_search_path(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    const char *env = getenv(SPECX_PATH_ENV);
    if (env && *env && append_dir(buf, size, &used, env, NULL) < 0)
        return -1;
    if (running_from_build_tree()) {
        for (const char *const *sub = build_subdirs; *sub; sub++)
            if (append_dir(buf, size, &used, SPECX_BUILD_ROOT, *sub) < 0)
                return -1;
        return 0;
    }
    if (append_dir(buf, size, &used, SPECX_LIBEXECDIR, NULL) < 0 ||
        append_dir(buf, size, &used, SPECX_PKGLIBDIR, NULL) < 0)
        return -1;
    return 0;
}

int specx_find_component(const char *name, char *out, size_t size)
{
    char list[4 * PATH_MAX];
    if (specx_search_path(list, sizeof list) < 0)
        return -1;
    for (char *save = NULL, *dir = strtok_r(list, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save)) {
        int n = snprintf(out, size, "%s/%s", dir, name);
        if (n > 0 && (size_t)n < size && access(out, F_OK) == 0)
            return 0;
    }
    return -1;
}
