/* treeread: reads every regular file under DIR with -t N threads (default 2), each thread its
 * own files: thread k reads, in order, the files whose index in the sorted list of paths is
 * k modulo N, with plain read(2) calls of 64 KiB. It stands for thread pools in which every
 * thread has its own stream of reads. It prints the count, the total size and a checksum that
 * does not depend on how the threads were scheduled: each thread sums its own files, and the
 * sums are combined in thread order. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checksum.h"
#include "common/util.h"

#define MAX_THREADS 64
#define PIECE (64 * 1024)

static char **paths;
static size_t npaths, cap;

struct stream {
    pthread_t thread;
    size_t first;  /* its files: first, first + step, ... */
    size_t step;
    uint64_t files, bytes, sum;
    int failed;    /* errno of the read that failed, 0: none */
};

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type != FTW_F)
        return 0;
    if (npaths == cap) {
        cap = cap ? cap * 2 : 256;
        paths = realloc(paths, cap * sizeof *paths);
        if (!paths)
            specx_die(1, "out of memory");
    }
    if (!(paths[npaths++] = strdup(path)))
        specx_die(1, "out of memory");
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One file into S's sum; false (with S->failed set) if it cannot be read. */
static bool read_file(struct stream *s, const char *path, unsigned char *buf)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        s->failed = errno;
        return false;
    }
    ssize_t n;
    while ((n = read(fd, buf, PIECE)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            s->failed = errno;
            break;
        }
        s->sum = checksum_add(s->sum, buf, (size_t)n);
        s->bytes += (uint64_t)n;
    }
    close(fd);
    s->files++;
    return !s->failed;
}

static void *read_stream(void *arg)
{
    struct stream *s = arg;
    unsigned char *buf = malloc(PIECE);
    if (!buf) {
        s->failed = ENOMEM;
        return NULL;
    }
    for (size_t i = s->first; i < npaths; i += s->step)
        if (!read_file(s, paths[i], buf)) {
            fprintf(stderr, "treeread: %s: %s\n", paths[i], strerror(s->failed));
            break;
        }
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    long threads = 2;
    int opt;
    while ((opt = getopt(argc, argv, "t:")) != -1) {
        char *end;
        threads = opt == 't' ? strtol(optarg, &end, 10) : 0;
        if (opt != 't' || *end || threads < 1 || threads > MAX_THREADS) {
            fprintf(stderr, "usage: treeread [-t 1..%d] DIR\n", MAX_THREADS);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: treeread [-t 1..%d] DIR\n", MAX_THREADS);
        return 2;
    }
    if (nftw(argv[optind], collect, 64, FTW_PHYS) != 0) {
        perror(argv[optind]);
        return 1;
    }
    qsort(paths, npaths, sizeof *paths, by_name);
    struct stream streams[MAX_THREADS] = { 0 };
    for (long k = 0; k < threads; k++) {
        streams[k] = (struct stream){ .first = (size_t)k, .step = (size_t)threads,
                                      .sum = CHECKSUM_INIT };
        int err = pthread_create(&streams[k].thread, NULL, read_stream, &streams[k]);
        if (err)
            specx_die(1, "cannot start a thread: %s", strerror(err));
    }
    uint64_t files = 0, bytes = 0, sum = CHECKSUM_INIT;
    int status = 0;
    for (long k = 0; k < threads; k++) {
        pthread_join(streams[k].thread, NULL);
        files += streams[k].files;
        bytes += streams[k].bytes;
        sum = checksum_add(sum, &streams[k].sum, sizeof streams[k].sum);
        status |= streams[k].failed != 0;
    }
    printf("files %" PRIu64 " bytes %" PRIu64 " checksum %016" PRIx64 "\n", files, bytes, sum);
    return status;
}
