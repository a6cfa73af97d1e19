/* xds: the paper's XDataSlice workload (Fraser & Chang 2003, §3.1): views random slices through
 * a 3-D volume of 32-bit values that is far larger than what one slice needs, loading the data
 * dynamically with pread.
 *
 * The volume file (written by `specx bench`'s generator) is a header (magic, edge, brick edge,
 * offset of the first brick, brick order; an offset of 0 means 4 KiB, a missing order means
 * row-major) followed by the volume stored as cubic bricks of BRICK^3 values, values in
 * (z, y, x) order inside a brick: like the TIP version of XDataSlice, any slice orientation
 * then costs the same number of reads, one per brick the plane cuts. Bricks follow each other
 * in (z, y, x) order or, as the generator writes them now, along a Hilbert curve (see
 * hilbert_index). Which slices are viewed follows from the seed alone, so every run reads the
 * same data in the same order; where each read lands follows from the slice's geometry, never
 * from data read. For each slice the program builds the false-color image (an 8-bit index per
 * value) and prints its summary. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read_exact.h"
#include "common/util.h"

/* Where the bricks start when the header does not say (the first version of the format). */
#define DEFAULT_DATA_OFFSET 4096
#define MAGIC "SPECXVOL"
#define HEADER_SIZE 24

enum brick_order { ORDER_ROW_MAJOR = 0, ORDER_HILBERT = 1 };

struct volume {
    int fd;
    uint32_t n;           /* values per edge */
    uint32_t brick;       /* values per brick edge */
    uint64_t data_offset; /* file offset of the first brick */
    uint32_t order;       /* enum brick_order */
    unsigned bits;        /* log2 of the bricks per edge (Hilbert order) */
};

struct slice {
    int axis;       /* 0 = x, 1 = y, 2 = z: the coordinate held fixed */
    uint32_t pos;   /* its value */
};

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: xds [--slices N] [--seed S] VOLUME\n"
        "\n"
        "Views N (default 25) random slices through the 3-D volume in VOLUME, reading\n"
        "each brick a slice cuts with pread, and prints one summary line per slice.\n"
        "The slices follow from the seed (default 1): runs are repeatable.\n");
}

/* splitmix64: a tiny, well-mixed generator that makes the slice sequence a pure function of
 * the seed on every platform. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static struct volume open_volume(const char *path)
{
    struct volume v = { .fd = open(path, O_RDONLY) };
    if (v.fd < 0)
        specx_die(1, "cannot open %s: %s", path, strerror(errno));
    unsigned char header[HEADER_SIZE] = {0};
    ssize_t got = pread(v.fd, header, sizeof header, 0);
    if (got < 20 || memcmp(header, MAGIC, 8) != 0)
        specx_die(1, "%s is not a specx volume (bad magic)", path);
    uint32_t data_offset;
    memcpy(&v.n, header + 8, 4);    /* little-endian, as written by the generator */
    memcpy(&v.brick, header + 12, 4);
    memcpy(&data_offset, header + 16, 4);
    memcpy(&v.order, header + 20, 4); /* zero in volumes written before it existed */
    v.data_offset = data_offset ? data_offset : DEFAULT_DATA_OFFSET;
    if (v.n == 0 || v.brick == 0 || v.n % v.brick != 0 || v.brick > 256)
        specx_die(1, "%s has an invalid geometry (%" PRIu32 "^3, bricks of %" PRIu32 ")",
                  path, v.n, v.brick);
    uint32_t per_edge = v.n / v.brick;
    while ((1u << v.bits) < per_edge)
        v.bits++;
    if (v.order > ORDER_HILBERT ||
        (v.order == ORDER_HILBERT && (1u << v.bits) != per_edge))
        specx_die(1, "%s has an invalid brick order (%" PRIu32 " for %" PRIu32
                  " bricks per edge)", path, v.order, per_edge);
    return v;
}

/* Position of brick (x, y, z) along a 3-D Hilbert curve through a cube of 2^bits bricks per
 * edge (Skilling's transpose form: undo the curve's rotations level by level, Gray-decode,
 * interleave the bits). Each step of the curve moves to a face neighbour, so a brick's
 * position is even or odd as x + y + z is: on a striped device whose unit is half a brick,
 * the bricks of any slice then alternate between disk pairs. In (z, y, x) order with a
 * power-of-two edge every brick of an x-slice has the parity of x, and all of them sit on
 * the same two disks of a four-disk stripe. */
static uint64_t hilbert_index(uint32_t x, uint32_t y, uint32_t z, unsigned bits)
{
    uint32_t c[3] = { x, y, z };
    for (uint32_t q = bits ? 1u << (bits - 1) : 0; q > 1; q >>= 1) {
        uint32_t low = q - 1;
        for (int i = 0; i < 3; i++) {
            if (c[i] & q) {
                c[0] ^= low;
            } else {
                uint32_t swap = (c[0] ^ c[i]) & low;
                c[0] ^= swap;
                c[i] ^= swap;
            }
        }
    }
    c[1] ^= c[0];
    c[2] ^= c[1];
    uint32_t gray = 0;
    for (uint32_t q = bits ? 1u << (bits - 1) : 0; q > 1; q >>= 1)
        if (c[2] & q)
            gray ^= q - 1;
    uint64_t index = 0;
    for (unsigned b = bits; b-- > 0;)
        for (int i = 0; i < 3; i++)
            index = (index << 1) | (((c[i] ^ gray) >> b) & 1u);
    return index;
}

/* Offset of the brick with brick coordinates (bx, by, bz). */
static off_t brick_offset(const struct volume *v, uint32_t bx, uint32_t by, uint32_t bz)
{
    uint64_t per_edge = v->n / v->brick;
    uint64_t index = v->order == ORDER_HILBERT ? hilbert_index(bx, by, bz, v->bits)
                                               : ((uint64_t)bz * per_edge + by) * per_edge + bx;
    return (off_t)(v->data_offset + index * v->brick * v->brick * v->brick * sizeof(uint32_t));
}

/* Copies the plane of one brick that the slice cuts into the slice image. (u, v) are the two
 * free coordinates of the slice, in brick units. */
static void copy_plane(const struct volume *v, const struct slice *s, const uint32_t *brick,
                       uint32_t bu, uint32_t bv, uint32_t *image)
{
    uint32_t b = v->brick, inside = s->pos % b;
    for (uint32_t j = 0; j < b; j++) {
        for (uint32_t i = 0; i < b; i++) {
            uint32_t x, y, z;
            switch (s->axis) {
            case 0:  x = inside; y = i; z = j; break;
            case 1:  x = i; y = inside; z = j; break;
            default: x = i; y = j; z = inside; break;
            }
            uint64_t pixel = (uint64_t)(bv * b + j) * v->n + (bu * b + i);
            image[pixel] = brick[((uint64_t)z * b + y) * b + x];
        }
    }
}

/* Reads every brick the slice cuts, row by row of the slice, and assembles the slice image. */
static void load_slice(const struct volume *v, const struct slice *s, uint32_t *brick,
                       uint32_t *image)
{
    uint32_t per_edge = v->n / v->brick, fixed = s->pos / v->brick;
    size_t brick_bytes = (size_t)v->brick * v->brick * v->brick * sizeof(uint32_t);
    for (uint32_t bv = 0; bv < per_edge; bv++) {
        for (uint32_t bu = 0; bu < per_edge; bu++) {
            off_t off = s->axis == 0 ? brick_offset(v, fixed, bu, bv)
                      : s->axis == 1 ? brick_offset(v, bu, fixed, bv)
                      : brick_offset(v, bu, bv, fixed);
            read_exact(v->fd, brick, brick_bytes, off, 0, "volume");
            copy_plane(v, s, brick, bu, bv, image);
        }
    }
}

/* Maps the slice to false colour (256 bins between its minimum and maximum) and prints the
 * summary a viewer would show: range, mean, and the most used colour. */
static void render_slice(const struct volume *v, const struct slice *s, int number,
                         const uint32_t *image)
{
    size_t pixels = (size_t)v->n * v->n;
    uint32_t lo = UINT32_MAX, hi = 0;
    double sum = 0;
    for (size_t p = 0; p < pixels; p++) {
        lo = image[p] < lo ? image[p] : lo;
        hi = image[p] > hi ? image[p] : hi;
        sum += image[p];
    }
    uint64_t histogram[256] = { 0 };
    double scale = hi > lo ? 255.0 / (double)(hi - lo) : 0.0;
    for (size_t p = 0; p < pixels; p++)
        histogram[(unsigned)((image[p] - lo) * scale)]++;
    unsigned mode = 0;
    for (unsigned c = 1; c < 256; c++)
        mode = histogram[c] > histogram[mode] ? c : mode;
    printf("slice %d: %c=%" PRIu32 " min %" PRIu32 " max %" PRIu32 " mean %.1f colour %u\n",
           number, "xyz"[s->axis], s->pos, lo, hi, sum / (double)pixels, mode);
}

int main(int argc, char **argv)
{
    specx_set_progname("xds");
    uint64_t slices = 25, seed = 1;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--slices") == 0 && i + 1 < argc) {
            if (!specx_parse_u64(argv[++i], 1, 1000000, &slices))
                specx_die(2, "--slices needs a count from 1 to 1000000, not '%s'", argv[i]);
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            if (!specx_parse_u64(argv[++i], 0, UINT64_MAX, &seed))
                specx_die(2, "--seed needs a non-negative integer, not '%s'", argv[i]);
        } else {
            specx_die(2, "unknown option '%s'; see 'xds --help'", argv[i]);
        }
    }
    if (argc - i != 1) {
        usage(stderr);
        return 2;
    }
    struct volume v = open_volume(argv[i]);
    uint32_t *brick = malloc((size_t)v.brick * v.brick * v.brick * sizeof(uint32_t));
    uint32_t *image = malloc((size_t)v.n * v.n * sizeof(uint32_t));
    if (!brick || !image)
        specx_die(1, "out of memory for a %" PRIu32 "^2 slice", v.n);
    uint64_t state = seed;
    for (uint64_t k = 0; k < slices; k++) {
        struct slice s = { .axis = (int)(next_random(&state) % 3),
                           .pos = (uint32_t)(next_random(&state) % v.n) };
        load_slice(&v, &s, brick, image);
        render_slice(&v, &s, (int)k + 1, image);
    }
    free(brick);
    free(image);
    close(v.fd);
    return 0;
}
