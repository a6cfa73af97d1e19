/* treesum: reads every regular file under DIR, in directory order, with plain read(2) calls
 * and prints their count, total size and a checksum. Built statically (-static), it stands for
 * the programs the preload runtime cannot see: Go tools, musl or -static C */
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static uint64_t files, bytes, checksum = 1469598103934665603ull; /* FNV-1a offset basis */

static void add(const unsigned char *p, ssize_t n)
{
    for (ssize_t i = 0; i < n; i++)
        checksum = (checksum ^ p[i]) * 1099511628211ull;
    bytes += (uint64_t)n;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    static unsigned char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        add(buf, n);
    close(fd);
    files++;
    return n < 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: treesum DIR\n");
        return 2;
    }
    if (nftw(argv[1], visit, 64, FTW_PHYS) != 0)
        return 1;
    printf("files %" PRIu64 " bytes %" PRIu64 " checksum %016" PRIx64 "\n", files, bytes,
           checksum);
    return 0;
}
