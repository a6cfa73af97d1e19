/* sphinx: the shape of the paper's Sphinx speech recognizer, its memory-control case (Fraser &
 * Chang 2003 §6.2, Fig. 6 and Table 5): a sequential phase that loads a few model files, then
 * a decoding phase that, frame after frame, looks up one random page of a large language-model
 * file and re-reads random pages of the models (its working set), writing each frame's result
 * into a lattice in anonymous memory. Run in a memory cgroup around the size of that working
 * set, the pages speculation brings in (prefetches of the large file, the copy's copy-on-write
 * lattice pages) can push out model pages the program reads again: speculation then costs
 * stalls as well as removing them, which the memory control must weigh.
 *
 * The lookups come from a fixed pseudo-random sequence, not from the data: a copy predicts
 * them exactly. DIR holds model0.bin ... (the models, all of the same size) and lm.bin.
 * Prints a checksum of every byte read and of the lattice, so that runs can be compared. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "read_exact.h"
#include "common/util.h"

#define PAGE 4096u
#define MAX_MODELS 64
#define MODEL_READS_PER_FRAME 4

struct corpus {
    int model[MAX_MODELS];
    uint64_t model_pages;
    unsigned models;
    int lm;
    uint64_t lm_pages;
};

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: sphinx [--frames N] [--lattice-kib K] DIR\n"
        "\n"
        "Reads DIR/model*.bin sequentially, then decodes N frames (default 1000): each\n"
        "reads one random page of DIR/lm.bin and %d random pages of the models, and\n"
        "writes into a lattice of K KiB (default 4096). Prints a checksum.\n",
        MODEL_READS_PER_FRAME);
}

static uint64_t next_random(uint64_t *state)
{
    /* xorshift64*: a fixed sequence, the same in the program and in its copy. */
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

static int open_pages(const char *dir, const char *name, uint64_t *pages)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) < 0)
        specx_die(1, "%s: %s", path, strerror(errno));
    if (st.st_size < PAGE)
        specx_die(1, "%s: shorter than a page", path);
    *pages = (uint64_t)st.st_size / PAGE;
    return fd;
}

static struct corpus open_corpus(const char *dir)
{
    struct corpus c = { .models = 0 };
    for (;; c.models++) {
        char name[32];
        snprintf(name, sizeof name, "model%u.bin", c.models);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (access(path, F_OK) != 0 || c.models == MAX_MODELS)
            break;
        c.model[c.models] = open_pages(dir, name, &c.model_pages);
    }
    if (c.models == 0)
        specx_die(1, "%s: no model0.bin", dir);
    c.lm = open_pages(dir, "lm.bin", &c.lm_pages);
    return c;
}

/* The sequential phase: every model read whole, as a recognizer loads its models. */
static uint64_t load_models(const struct corpus *c, uint64_t sum)
{
    static unsigned char buf[64 * 1024];
    for (unsigned m = 0; m < c->models; m++) {
        ssize_t n;
        while ((n = read(c->model[m], buf, sizeof buf)) > 0)
            sum = checksum_add(sum, buf, (size_t)n);
        if (n < 0)
            specx_die(1, "model%u.bin: %s", m, strerror(errno));
    }
    return sum;
}

static uint64_t read_page(int fd, uint64_t page, uint64_t sum)
{
    unsigned char buf[PAGE];
    read_exact(fd, buf, PAGE, (off_t)(page * PAGE), 0, "page");
    return checksum_add(sum, buf, PAGE);
}

/* The decoding phase. */
static uint64_t decode(const struct corpus *c, uint64_t frames, unsigned char *lattice,
                       uint64_t lattice_pages, uint64_t sum)
{
    uint64_t state = 0x5eed5eed5eedull;
    for (uint64_t f = 0; f < frames; f++) {
        uint64_t frame_sum = read_page(c->lm, next_random(&state) % c->lm_pages, sum);
        for (int k = 0; k < MODEL_READS_PER_FRAME; k++) {
            unsigned m = (unsigned)(next_random(&state) % c->models);
            frame_sum = read_page(c->model[m], next_random(&state) % c->model_pages, frame_sum);
        }
        memcpy(lattice + (f % lattice_pages) * PAGE + (f / lattice_pages) % (PAGE / 8) * 8,
               &frame_sum, 8);
        sum = frame_sum;
    }
    return sum;
}

int main(int argc, char **argv)
{
    specx_set_progname("sphinx");
    uint64_t frames = 1000, lattice_kib = 4096;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc &&
                   specx_parse_u64(argv[i + 1], 1, UINT64_MAX, &frames)) {
            i++;
        } else if (strcmp(argv[i], "--lattice-kib") == 0 && i + 1 < argc &&
                   specx_parse_u64(argv[i + 1], 4, 1u << 30, &lattice_kib)) {
            i++;
        } else {
            specx_die(2, "invalid option '%s'; see 'sphinx --help'", argv[i]);
        }
    }
    if (i + 1 != argc) {
        usage(stderr);
        return 2;
    }
    struct corpus c = open_corpus(argv[i]);
    uint64_t lattice_pages = lattice_kib * 1024 / PAGE;
    unsigned char *lattice = calloc(lattice_pages, PAGE);
    if (!lattice)
        specx_die(1, "cannot allocate the lattice");
    uint64_t sum = decode(&c, frames, lattice, lattice_pages, load_models(&c, CHECKSUM_INIT));
    printf("sphinx: %" PRIu64 " frames, checksum %016" PRIx64 "\n", frames,
           checksum_add(sum, lattice, lattice_pages * PAGE));
    return 0;
}
