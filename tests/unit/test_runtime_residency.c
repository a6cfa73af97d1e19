/* Residency (src/kernel/residency.c): cachestat(2) and, on a kernel without it, the mincore
 * fallback must give the same answer. The kernel without cachestat is simulated with a
 * seccomp filter that fails it with ENOSYS, as such a kernel would. */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kernel/residency.h"

#define FILE_SIZE (5 * SPECX_PAGE_SIZE + 100)

static int make_cached_file(void)
{
    char path[] = "/tmp/specx-test-residency-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    char buf[FILE_SIZE];
    memset(buf, 'x', sizeof buf);
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf); /* written: in the page cache */
    return fd;
}

static void check_answers(int fd)
{
    CHECK(specx_cached_pages(fd, 0, FILE_SIZE) == 6);
    CHECK(specx_cached_pages(fd, SPECX_PAGE_SIZE + 1, 10) == 1);
    CHECK(specx_cached_pages(fd, 4000, 200) == 2); /* straddles a page boundary */
    CHECK(specx_cached_pages(-1, 0, 100) == -1); /* an error is never a stall */
}

static void disable_cachestat(void)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    CHECK(ctx);
    CHECK(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), 451, 0) == 0);
    CHECK(seccomp_load(ctx) == 0);
    seccomp_release(ctx);
}

int main(void)
{
    int fd = make_cached_file();
    check_answers(fd);
    CHECK(!specx_residency_fallback());
    disable_cachestat();
    check_answers(fd);
    CHECK(specx_residency_fallback());
    puts("ok");
    return check_status();
}
