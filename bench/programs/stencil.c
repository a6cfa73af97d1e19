/* stencil: a multigrid-like relaxation over a 3-D grid, the paper's MGRID and FFTPDE (Fraser &
 * Chang 2003, §3 and §5): "looping array accesses whose stride length and bounds vary
 * dynamically during execution", large page tables and a write to every point it visits.
 *
 * The grid file (written by `specx bench`'s generator) is a 4 KiB header ("SPECXGRD", edge n,
 * little-endian 64-bit) followed by n^3 little-endian 32-bit values, z-major. Each cycle
 * relaxes the grid level by level, from the coarsest (stride n/8, at most 32) to the finest
 * (stride 1): at stride h, every point whose coordinates are multiples of h (shifted by a
 * phase) is replaced by a mix of itself and its six neighbours h away (periodic boundaries),
 * in place. The phase of each level comes from the values the previous level produced, so
 * which planes and rows a level visits depends on the data, as an adaptive solver's would.
 *
 * Two ways to hold the grid:
 *   default      the file is mapped MAP_SHARED and updated in place (msync at the end): a
 *                program whose I/O is page faults on a file it writes (MGRID over mmap);
 *   --anonymous  the file is read into anonymous memory and relaxed there (nothing is
 *                written back): with less memory than the grid, its I/O is swapping.
 * Prints a checksum of every value it wrote, so that runs with and without specx compare. */
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

#include "le64.h"
#include "read_exact.h"
#include "common/util.h"

#define HEADER_SIZE 4096
#define MAGIC "SPECXGRD"
#define MAX_COARSE_STRIDE 32
#define LOAD_CHUNK (1u << 20)

struct grid {
    uint32_t *v;       /* n^3 values, z-major */
    uint64_t n;        /* edge: a power of two, at least 8 */
    void *map;         /* what to msync/munmap */
    size_t map_len;
    bool shared;       /* the file's own pages (MAP_SHARED) rather than a private copy */
};

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: stencil [--cycles N] [--anonymous] FILE\n"
        "\n"
        "Relaxes the 3-D grid in FILE level by level, N times (default 1), with strides\n"
        "and bounds that depend on the data; prints a checksum of the values written.\n"
        "By default FILE is mapped and updated in place; with --anonymous it is read\n"
        "into anonymous memory and left unchanged.\n");
}

/* splitmix64's finalizer: every bit of the running state depends on every value written. */
static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The edge from the header, after checking that the file holds exactly such a grid. */
static uint64_t grid_edge(const unsigned char *header, off_t size, const char *path)
{
    uint64_t n = load_le64(header + 8);
    if (memcmp(header, MAGIC, 8) != 0 || n < 8 || n > 4096 || (n & (n - 1)) != 0 ||
        (uint64_t)size != HEADER_SIZE + n * n * n * sizeof(uint32_t))
        specx_die(1, "%s: not a grid file", path);
    return n;
}

static struct grid map_grid(int fd, off_t size, const char *path)
{
    unsigned char *base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        specx_die(1, "%s: cannot map: %s", path, strerror(errno));
    return (struct grid){ (uint32_t *)(base + HEADER_SIZE), grid_edge(base, size, path), base,
                          (size_t)size, true };
}

/* The grid read into anonymous memory, in 1 MiB reads (the memory the program later swaps). */
static struct grid load_grid(int fd, off_t size, const char *path)
{
    unsigned char header[HEADER_SIZE];
    if (size < HEADER_SIZE)
        specx_die(1, "%s: not a grid file", path);
    read_exact(fd, header, HEADER_SIZE, 0, LOAD_CHUNK, path);
    uint64_t n = grid_edge(header, size, path);
    size_t len = (size_t)(n * n * n * sizeof(uint32_t));
    void *v = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        specx_die(1, "cannot allocate %zu bytes: %s", len, strerror(errno));
    read_exact(fd, v, len, HEADER_SIZE, LOAD_CHUNK, path);
    return (struct grid){ v, n, v, len, false };
}

static struct grid open_grid(const char *path, bool anonymous)
{
    int fd = open(path, anonymous ? O_RDONLY : O_RDWR);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        specx_die(1, "%s: %s", path, strerror(errno));
    if (!anonymous && st.st_size < HEADER_SIZE)
        specx_die(1, "%s: not a grid file", path);
    struct grid g = anonymous ? load_grid(fd, st.st_size, path) : map_grid(fd, st.st_size, path);
    close(fd);
    return g;
}

static inline uint32_t *at(const struct grid *g, uint64_t z, uint64_t y, uint64_t x)
{
    uint64_t m = g->n - 1;   /* periodic boundaries: n is a power of two */
    return &g->v[((z & m) * g->n + (y & m)) * g->n + (x & m)];
}

/* One relaxation of the points (z0 + i h, y0 + j h, k h), in place (Gauss-Seidel order, so
 * the result depends on the order, which is fixed); returns a digest of the values written. */
static uint64_t relax_level(struct grid *g, uint64_t h, uint64_t z0, uint64_t y0)
{
    uint64_t digest = h;
    for (uint64_t z = z0; z < g->n; z += h)
        for (uint64_t y = y0; y < g->n; y += h) {
            uint64_t row = 0;
            for (uint64_t x = 0; x < g->n; x += h) {
                uint32_t v = 3 * *at(g, z, y, x) + *at(g, z, y, x - h) + *at(g, z, y, x + h) +
                             *at(g, z, y - h, x) + *at(g, z, y + h, x) +
                             *at(g, z - h, y, x) + *at(g, z + h, y, x);
                v ^= v >> 15;
                *at(g, z, y, x) = v;
                row = row * 0x100000001b3ULL + v;
            }
            digest = mix64(digest ^ row);
        }
    return digest;
}

/* Coarse to fine, as a full multigrid cycle does; each level's phase (which planes and rows
 * it visits) is taken from the digest of the level before. */
static uint64_t relax_cycle(struct grid *g, uint64_t state)
{
    uint64_t coarse = g->n / 8 < MAX_COARSE_STRIDE ? g->n / 8 : MAX_COARSE_STRIDE;
    for (uint64_t h = coarse; h >= 1; h /= 2)
        state = mix64(state ^ relax_level(g, h, state % h, (state >> 32) % h));
    return state;
}

int main(int argc, char **argv)
{
    specx_set_progname("stencil");
    uint64_t cycles = 1;
    bool anonymous = false;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc) {
            if (!specx_parse_u64(argv[++i], 1, 1000, &cycles))
                specx_die(2, "--cycles takes a whole number from 1 to 1000, not '%s'", argv[i]);
        } else if (strcmp(argv[i], "--anonymous") == 0)
            anonymous = true;
        else
            specx_die(2, "unknown option '%s'; see 'stencil --help'", argv[i]);
    }
    if (i != argc - 1) {
        usage(stderr);
        return 2;
    }
    struct grid g = open_grid(argv[i], anonymous);
    uint64_t state = g.n;
    for (uint64_t c = 0; c < cycles; c++)
        state = relax_cycle(&g, state);
    if (g.shared && msync(g.map, g.map_len, MS_SYNC) != 0)
        specx_die(1, "%s: cannot write the grid back: %s", argv[i], strerror(errno));
    printf("%" PRIu64 "^3 grid, %" PRIu64 " cycles, %s, checksum %016" PRIx64 "\n", g.n, cycles,
           anonymous ? "anonymous memory" : "mapped file", state);
    munmap(g.map, g.map_len);
    return 0;
}
