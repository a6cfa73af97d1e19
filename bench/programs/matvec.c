/* matvec: out-of-core matrix-vector multiply over an mmapped matrix file, the paper's MATVEC
 * (Fraser & Chang 2003, §4.1.2 and Table 3): a program that does its I/O through memory, so
 * every stall is a page fault rather than a read call. Run with less memory than the matrix
 * (the harness uses a memory cgroup), each iteration faults the matrix in again.
 *
 * The file (written by `specx bench`'s generator) is a 4 KiB header ("SPECXMAT", rows, cols,
 * little-endian 64-bit) followed by rows x cols little-endian doubles, row-major. The program
 * iterates x <- A x / |A x| from x = (1, 1/2, 1/3, ...) and prints the result's checksum, so
 * runs with and without specx can be compared. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "le64.h"
#include "common/util.h"

#define HEADER_SIZE 4096
#define MAGIC "SPECXMAT"

struct matrix {
    const double *a;
    uint64_t rows, cols;
};

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: matvec [--iterations N] FILE\n"
        "\n"
        "Maps the matrix in FILE and computes N normalized matrix-vector products\n"
        "(default 2), reading the matrix through page faults; prints a checksum of the\n"
        "resulting vector.\n");
}

static struct matrix map_matrix(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        specx_die(1, "%s: %s", path, strerror(errno));
    if (st.st_size < HEADER_SIZE)
        specx_die(1, "%s: not a matrix file (too short)", path);
    const unsigned char *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        specx_die(1, "%s: cannot map: %s", path, strerror(errno));
    close(fd);
    struct matrix m = { (const double *)(base + HEADER_SIZE), load_le64(base + 8),
                        load_le64(base + 16) };
    if (memcmp(base, MAGIC, 8) != 0 || m.rows == 0 || m.cols == 0 ||
        m.cols > ((uint64_t)st.st_size - HEADER_SIZE) / sizeof(double) / m.rows)
        specx_die(1, "%s: not a matrix file", path);
    return m;
}

/* y = A x, row by row: the matrix is read once, front to back. */
static void multiply(const struct matrix *m, const double *x, double *y)
{
    for (uint64_t i = 0; i < m->rows; i++) {
        const double *row = m->a + i * m->cols;
        double sum = 0;
        for (uint64_t j = 0; j < m->cols; j++)
            sum += row[j] * x[j];
        y[i] = sum;
    }
}

static void normalize_into(double *x, const double *y, uint64_t n)
{
    double norm = 0;
    for (uint64_t i = 0; i < n; i++)
        norm += y[i] * y[i];
    norm = sqrt(norm);
    for (uint64_t i = 0; i < n; i++)
        x[i] = norm > 0 ? y[i] / norm : 0;
}

int main(int argc, char **argv)
{
    specx_set_progname("matvec");
    uint64_t iterations = 2;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            if (!specx_parse_u64(argv[++i], 1, 1000, &iterations))
                specx_die(2, "--iterations takes a whole number from 1 to 1000, not '%s'", argv[i]);
        } else
            specx_die(2, "unknown option '%s'; see 'matvec --help'", argv[i]);
    }
    if (i != argc - 1) {
        usage(stderr);
        return 2;
    }
    struct matrix m = map_matrix(argv[i]);
    if (m.rows != m.cols)
        specx_die(1, "%s: the matrix must be square to iterate", argv[i]);
    double *x = malloc(m.cols * sizeof *x), *y = malloc(m.rows * sizeof *y);
    if (!x || !y)
        specx_die(1, "out of memory");
    for (uint64_t j = 0; j < m.cols; j++)
        x[j] = 1.0 / (double)(j + 1);
    for (uint64_t it = 0; it < iterations; it++) {
        multiply(&m, x, y);
        normalize_into(x, y, m.rows);
    }
    printf("%" PRIu64 "x%" PRIu64 " matrix, %" PRIu64 " iterations, checksum %016" PRIx64 "\n",
           m.rows, m.cols, iterations, checksum_add(CHECKSUM_INIT, x, m.cols * sizeof *x));
    return 0;
}
