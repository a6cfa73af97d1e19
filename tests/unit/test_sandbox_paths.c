/* Unit tests of the sandbox's pure helpers: the /proc paths it builds without stdio, and which
 * file types a speculative process may open. */
#include "run/runtime/sandbox/privatize.h"
#include "kernel/proc_path.h"

#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "check.h"

static void test_proc_paths(void)
{
    char fd_path[SPECX_PROC_FD_PATH_MAX];
    specx_proc_fd_path(fd_path, 0);
    CHECK(strcmp(fd_path, "/proc/self/fd/0") == 0);
    specx_proc_fd_path(fd_path, 2147483647);
    CHECK(strcmp(fd_path, "/proc/self/fd/2147483647") == 0);

    char map_path[SPECX_PROC_MAP_FILES_PATH_MAX];
    specx_proc_map_files_path(map_path, 0x7f22cc7d7000UL, 0x7f22cc7d8000UL);
    CHECK(strcmp(map_path, "/proc/self/map_files/7f22cc7d7000-7f22cc7d8000") == 0);
    specx_proc_map_files_path(map_path, 0xffffffffffffffffUL, 0xffffffffffffffffUL);
    CHECK(strcmp(map_path, "/proc/self/map_files/ffffffffffffffff-ffffffffffffffff") == 0);
}

static struct stat of_type(mode_t type, unsigned int maj, unsigned int min)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_mode = type | 0644;
    st.st_rdev = makedev(maj, min);
    return st;
}

static void test_safe_file_type(void)
{
    struct stat st;
    CHECK(specx_safe_file_type((st = of_type(S_IFREG, 0, 0), &st)));
    CHECK(specx_safe_file_type((st = of_type(S_IFDIR, 0, 0), &st)));
    CHECK(specx_safe_file_type((st = of_type(S_IFCHR, 1, 3), &st)));  /* /dev/null */
    CHECK(specx_safe_file_type((st = of_type(S_IFCHR, 1, 9), &st)));  /* /dev/urandom */
    CHECK(!specx_safe_file_type((st = of_type(S_IFCHR, 1, 1), &st))); /* /dev/mem */
    CHECK(!specx_safe_file_type((st = of_type(S_IFCHR, 5, 0), &st))); /* /dev/tty */
    CHECK(!specx_safe_file_type((st = of_type(S_IFCHR, 5, 2), &st))); /* /dev/ptmx */
    CHECK(!specx_safe_file_type((st = of_type(S_IFBLK, 8, 0), &st)));
    CHECK(!specx_safe_file_type((st = of_type(S_IFIFO, 0, 0), &st)));
    CHECK(!specx_safe_file_type((st = of_type(S_IFSOCK, 0, 0), &st)));
    CHECK(!specx_safe_file_type((st = of_type(S_IFLNK, 0, 0), &st)));
}

int main(void)
{
    test_proc_paths();
    test_safe_file_type();
    return check_status();
}
