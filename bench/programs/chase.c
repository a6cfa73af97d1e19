/* chase: a workload speculation cannot help (the "no slower" bar). It follows a chain of
 * blocks through a file, and the offset of every read comes from the data of the read before
 * it, so a speculative copy that skips a non-resident read cannot know where to go next
 * (Fraser & Chang 2003, §2: "a speculative process will incorrectly predict future accesses if
 * they depend on non-resident data").
 *
 * The file (written by `specx bench`'s generator) is a 4 KiB header ("SPECXCHN", block count,
 * block size) followed by the blocks; each block starts with the little-endian 64-bit index of
 * the next block, and the chain is one cycle through all blocks. The program prints how many
 * hops it made and a checksum of everything it read, so runs can be compared. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checksum.h"
#include "le64.h"
#include "read_exact.h"
#include "common/util.h"

#define HEADER_SIZE 4096
#define MAGIC "SPECXCHN"

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: chase [--hops N] FILE\n"
        "\n"
        "Follows the chain of blocks in FILE for N hops (default: all blocks), reading each\n"
        "block with pread at the offset the previous block names, and prints the number of\n"
        "hops and a checksum of the data read.\n");
}

int main(int argc, char **argv)
{
    specx_set_progname("chase");
    uint64_t hops = 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--hops") == 0 && i + 1 < argc) {
            if (!specx_parse_u64(argv[++i], 1, UINT64_MAX, &hops))
                specx_die(2, "--hops takes a whole number >= 1, not '%s'", argv[i]);
        } else {
            specx_die(2, "unknown option '%s'; see 'chase --help'", argv[i]);
        }
    }
    if (i + 1 != argc)
        specx_die(2, "expected one FILE; see 'chase --help'");
    const char *path = argv[i];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        specx_die(1, "%s: %s", path, strerror(errno));

    unsigned char header[HEADER_SIZE];
    read_exact(fd, header, sizeof header, 0, 0, path);
    uint64_t blocks = load_le64(header + 8), block_size = load_le64(header + 16);
    if (memcmp(header, MAGIC, 8) != 0 || blocks == 0 || block_size < 8 || block_size > (1 << 20))
        specx_die(1, "%s: not a chase file", path);
    if (hops == 0 || hops > blocks)
        hops = blocks;

    unsigned char *block = malloc(block_size);
    if (!block)
        specx_die(1, "out of memory");
    uint64_t next = 0, sum = CHECKSUM_INIT;
    for (uint64_t h = 0; h < hops; h++) {
        read_exact(fd, block, block_size, (off_t)(HEADER_SIZE + next * block_size), 0, path);
        sum = checksum_add(sum, block, block_size);
        next = load_le64(block);
        if (next >= blocks)
            specx_die(1, "%s: block %" PRIu64 " names block %" PRIu64 " of %" PRIu64, path, h,
                      next, blocks);
    }
    printf("%" PRIu64 " hops, checksum %016" PRIx64 "\n", hops, sum);
    free(block);
    close(fd);
    return 0;
}
