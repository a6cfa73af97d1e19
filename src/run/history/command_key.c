/* See command_key.h. */
#include "run/history/command_key.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t command_key_hash(const void *buf, size_t len, uint64_t seed)
{
    const unsigned char *p = buf;
    uint64_t h = seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The executable NAME names, found as execvp finds it (a name with a slash is a path; else the
 * first regular, executable file of that name along PATH). 0 with its status; -1 if none. */
static int find_executable(const char *name, struct stat *st)
{
    if (strchr(name, '/'))
        return stat(name, st);
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/bin:/usr/bin";
    for (const char *dir = path;; dir++) {
        size_t n = strcspn(dir, ":");
        char full[PATH_MAX];
        if (snprintf(full, sizeof full, "%.*s%s%s", (int)n, n ? dir : ".", "/", name) <
                (int)sizeof full &&
            stat(full, st) == 0 && S_ISREG(st->st_mode) && access(full, X_OK) == 0)
            return 0;
        dir += n;
        if (!*dir)
            return -1;
    }
}

int command_key_of(char *const argv[], const char *cwd, struct command_key *k)
{
    struct stat st;
    if (find_executable(argv[0], &st) < 0)
        return -1;
    uint64_t identity[4] = { st.st_dev, st.st_ino, (uint64_t)st.st_size,
                             (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
                                 (uint64_t)st.st_mtim.tv_nsec };
    k->program = command_key_hash(identity, sizeof identity, COMMAND_KEY_SEED);
    /* Each string with its NUL, so that ("ab", "c") and ("a", "bc") differ. */
    uint64_t h = command_key_hash(&k->program, sizeof k->program, COMMAND_KEY_SEED);
    h = command_key_hash(cwd, strlen(cwd) + 1, h);
    for (size_t i = 0; argv[i]; i++)
        h = command_key_hash(argv[i], strlen(argv[i]) + 1, h);
    k->key = h;
    return 0;
}
