// reader: the "unmodifiable" target. Linked statically.
// usage: reader FILE PASSES [NTHREADS]
//   NTHREADS==0/absent: single thread reads FILE.
//   NTHREADS>0: thread i reads FILE.i (its own copy).
// Reads the whole file with pread() in 4 KiB chunks, PASSES times.
// Prints: elapsed_ns total_preads ns_per_pread (elapsed measured with CLOCK_MONOTONIC
// around the read loop only; all threads started before the clock starts via a barrier).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 4096
static int passes;
static pthread_barrier_t bar;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct job { const char *path; long long n; unsigned long sum; };

static void do_read(struct job *j) {
    int fd = open(j->path, O_RDONLY);
    if (fd < 0) { fprintf(stderr, "reader: open %s: %s\n", j->path, strerror(errno)); exit(2); }
    struct stat st; fstat(fd, &st);
    static __thread char buf[CHUNK];
    if (pthread_barrier_wait(&bar) == PTHREAD_BARRIER_SERIAL_THREAD) {}
    for (int p = 0; p < passes; p++) {
        for (off_t off = 0; off < st.st_size; off += CHUNK) {
            ssize_t r = pread(fd, buf, CHUNK, off);
            if (r != CHUNK) {
                fprintf(stderr, "reader[%d]: pread returned %zd errno=%d (%s) at pass %d off %lld after %lld preads\n",
                        getpid(), r, errno, strerror(errno), p, (long long)off, j->n);
                exit(3);
            }
            j->sum += (unsigned char)buf[100];
            j->n++;
        }
    }
    close(fd);
}

static void *thr(void *a) { do_read(a); return NULL; }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: reader FILE PASSES [NTHREADS]\n"); return 1; }
    passes = atoi(argv[2]);
    int nt = argc > 3 ? atoi(argv[3]) : 0;
    int n = nt > 0 ? nt : 1;
    struct job *jobs = calloc(n, sizeof *jobs);
    char (*names)[512] = calloc(n, 512);
    pthread_t *t = calloc(n, sizeof *t);
    if (nt == 0) {  /* truly single-threaded: no extra thread */
        pthread_barrier_init(&bar, NULL, 1);
        snprintf(names[0], 512, "%s", argv[1]); jobs[0].path = names[0];
        long long t0 = now_ns();
        do_read(&jobs[0]);
        long long t1 = now_ns();
        printf("READER elapsed_ns=%lld preads=%lld ns_per_pread=%.1f threads=0 (chk %lu)\n",
               t1 - t0, jobs[0].n, (double)(t1 - t0) / jobs[0].n, jobs[0].sum & 0xff);
        return 0;
    }
    pthread_barrier_init(&bar, NULL, n + 1);
    for (int i = 0; i < n; i++) {
        if (nt > 0) snprintf(names[i], 512, "%s.%d", argv[1], i);
        else snprintf(names[i], 512, "%s", argv[1]);
        jobs[i].path = names[i];
        pthread_create(&t[i], NULL, thr, &jobs[i]);
    }
    pthread_barrier_wait(&bar);
    long long t0 = now_ns();
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    long long t1 = now_ns();
    long long tot = 0; unsigned long s = 0;
    for (int i = 0; i < n; i++) { tot += jobs[i].n; s += jobs[i].sum; }
    printf("READER elapsed_ns=%lld preads=%lld ns_per_pread=%.1f threads=%d (chk %lu)\n",
           t1 - t0, tot, (double)(t1 - t0) / tot, nt, s & 0xff);
    return 0;
}
