/* refork: a program with a large resident set that stalls on reads (Fraser & Chang 2003, §5:
 * the swapping applications whose page tables made the basic refork slow, Table 3, and whose
 * writes made plain copy-on-write costly, Table 4).
 *
 * It fills MIB MiB of anonymous memory, then reads READS blocks of 4 KiB from FILE. By default
 * each block's offset depends on the data of the block before and on the memory, so that a
 * speculative copy cannot predict it: the program stalls, and the runtime reforks, again and
 * again. With --follow-memory the offsets come from the memory alone: a copy that sees the
 * program's memory (one-way semantics, §5.2) predicts every read, one that saw zeros would
 * not. With --write the program writes every page of its memory once more after its first
 * read, while a speculative copy lives: under a plain fork each such write is a copy-on-write
 * fault of the program. It prints a checksum of everything it read and of its memory, so that
 * runs with and without specx can be compared. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "read_exact.h"
#include "common/util.h"

#define BLOCK 4096u
#define WORDS_PER_PAGE (4096u / sizeof(uint64_t))

struct options {
    uint64_t mem_mib, reads;
    bool write, follow_memory;
    const char *path;
};

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: refork [--mem MIB] [--reads N] [--write] [--follow-memory] FILE\n"
        "\n"
        "Fills MIB MiB of memory (default 1024), then reads N blocks of 4 KiB of FILE\n"
        "(default 1000) at offsets a speculative copy cannot predict (--follow-memory: that\n"
        "it can predict only from the program's memory); --write writes all memory again\n"
        "after the first read. Prints a checksum of what it read and of its memory.\n");
}

static void parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){ .mem_mib = 1024, .reads = 1000 };
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(argv[i], "--mem") == 0 && i + 1 < argc) {
            if (!specx_parse_u64(argv[++i], 1, 1 << 20, &o->mem_mib))
                specx_die(2, "--mem takes a size in MiB (1-1048576), not '%s'", argv[i]);
        } else if (strcmp(argv[i], "--reads") == 0 && i + 1 < argc) {
            if (!specx_parse_u64(argv[++i], 1, UINT64_MAX, &o->reads))
                specx_die(2, "--reads takes a whole number >= 1, not '%s'", argv[i]);
        } else if (strcmp(argv[i], "--write") == 0) {
            o->write = true;
        } else if (strcmp(argv[i], "--follow-memory") == 0) {
            o->follow_memory = true;
        } else {
            specx_die(2, "unknown option '%s'; see 'refork --help'", argv[i]);
        }
    }
    if (i + 1 != argc)
        specx_die(2, "expected one FILE; see 'refork --help'");
    o->path = argv[i];
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* Every word is written, so every page is resident (and private) before the first read. */
static uint64_t *fill_memory(uint64_t words)
{
    uint64_t *mem = mmap(NULL, words * sizeof *mem, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        specx_die(1, "cannot map %" PRIu64 " MiB: %s", words >> 17, strerror(errno));
    for (uint64_t i = 0; i < words; i++)
        mem[i] = mix(i + 1);
    return mem;
}

/* One write per page, of the value already there: under a plain fork it is a copy-on-write
 * fault all the same. */
static void rewrite_memory(uint64_t *mem, uint64_t words)
{
    volatile uint64_t *v = mem;
    for (uint64_t i = 0; i < words; i += WORDS_PER_PAGE)
        v[i] = v[i];
}

int main(int argc, char **argv)
{
    specx_set_progname("refork");
    struct options o;
    parse(argc, argv, &o);
    int fd = open(o.path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        specx_die(1, "%s: %s", o.path, strerror(errno));
    uint64_t blocks = (uint64_t)st.st_size / BLOCK;
    if (blocks == 0)
        specx_die(1, "%s: smaller than one block of %u bytes", o.path, BLOCK);
    uint64_t words = o.mem_mib << 17;
    uint64_t *mem = fill_memory(words);

    static unsigned char buf[BLOCK];
    uint64_t sum = CHECKSUM_INIT, next = 0;
    for (uint64_t r = 0; r < o.reads; r++) {
        read_exact(fd, buf, BLOCK, (off_t)(next * BLOCK), 0, o.path);
        sum = checksum_add(sum, buf, BLOCK);
        if (r == 0 && o.write)
            rewrite_memory(mem, words);
        uint64_t from_memory = mem[mix(r) % words];
        uint64_t from_data;
        memcpy(&from_data, buf + (r % (BLOCK / 8)) * 8, sizeof from_data);
        next = (o.follow_memory ? from_memory : mix(from_memory ^ from_data)) % blocks;
    }
    uint64_t mem_sum = CHECKSUM_INIT;
    for (uint64_t i = 0; i < words; i += WORDS_PER_PAGE)
        mem_sum = checksum_add(mem_sum, &mem[i], sizeof mem[i]);
    printf("%" PRIu64 " reads, checksum %016" PRIx64 ", memory %016" PRIx64 "\n", o.reads, sum,
           mem_sum);
    munmap(mem, words * sizeof *mem);
    close(fd);
    return 0;
}
