/* A program whose open files have other users, for tests/test_run_observers.py: what its
 * speculative copies do must not reach them. Every mode first reads FILE... (cold files: the
 * copies are made there), with a release of something another process waits for in between.
 *
 *   observed flush OUT FILE...   reads each FILE whole, writing a line per file to OUT (kept
 *                                open throughout), closes OUT at the end
 *   observed close FD FILE...    reads the first HELD files, then writes its CLOCK_MONOTONIC
 *                                time (8 bytes) to the inherited pipe or socket FD and closes
 *                                it, then reads the rest
 *   observed flock LOCK HOW FILE...
 *                                takes flock(LOCK_EX) on LOCK, reads the first HELD files,
 *                                releases the lock (HOW: "unlock" with LOCK_UN, "close" by
 *                                closing its only descriptor), prints "released NS\n", reads
 *                                the rest
 *
 * With --high first, every descriptor it opens is moved to a number of 64 or more.
 * The files are read 4 KiB at a time; the exit status is 0 unless a call failed. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* Files read while the pipe, socket or lock is held: copies are made in between. */
#define HELD 3

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what)
{
    perror(what);
    exit(1);
}

static bool high; /* --high */

/* FD, or with --high the same description at the lowest free number from 64 on. */
static int placed(int fd)
{
    if (!high || fd < 0)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 64);
    if (moved < 0)
        fail("F_DUPFD");
    close(fd);
    return moved;
}

/* Reads PATH whole; returns the sum of its bytes (so the reads cannot be left out). */
static unsigned long read_file(const char *path)
{
    int fd = placed(open(path, O_RDONLY | O_CLOEXEC));
    if (fd < 0)
        fail(path);
    unsigned char buf[4096];
    unsigned long sum = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            sum += buf[i];
    if (n < 0)
        fail(path);
    close(fd);
    return sum;
}

static void read_files(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        printf("%s %lu\n", paths[i], read_file(paths[i]));
    fflush(stdout);
}

static int flush_mode(const char *out, char **files, int n)
{
    int fd = placed(open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd < 0)
        fail(out);
    for (int i = 0; i < n; i++) {
        char line[4096 + 32];
        int len = snprintf(line, sizeof line, "%s %lu\n", files[i], read_file(files[i]));
        if (write(fd, line, (size_t)len) != len)
            fail("write");
    }
    if (close(fd) < 0)
        fail("close");
    return 0;
}

static int close_mode(int fd, char **files, int n)
{
    int held = n < HELD ? n : HELD;
    read_files(files, held);
    uint64_t t = now_ns();
    if (write(fd, &t, sizeof t) != (ssize_t)sizeof t || close(fd) < 0)
        fail("close");
    read_files(files + held, n - held);
    return 0;
}

static int flock_mode(const char *lock, const char *how, char **files, int n)
{
    int fd = placed(open(lock, O_RDWR | O_CLOEXEC));
    if (fd < 0 || flock(fd, LOCK_EX) < 0)
        fail(lock);
    int held = n < HELD ? n : HELD;
    read_files(files, held);
    uint64_t t = now_ns();
    if ((strcmp(how, "unlock") == 0 ? flock(fd, LOCK_UN) : close(fd)) < 0)
        fail(how);
    printf("released %llu\n", (unsigned long long)t);
    fflush(stdout);
    read_files(files + held, n - held);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--high") == 0) {
        high = true;
        argv++;
        argc--;
    }
    if (argc >= 4 && strcmp(argv[1], "flush") == 0)
        return flush_mode(argv[2], argv + 3, argc - 3);
    if (argc >= 4 && strcmp(argv[1], "close") == 0)
        return close_mode(atoi(argv[2]), argv + 3, argc - 3);
    if (argc >= 5 && strcmp(argv[1], "flock") == 0)
        return flock_mode(argv[2], argv[3], argv + 4, argc - 4);
    fprintf(stderr, "usage: observed [--high] flush OUT FILE... | close FD FILE... | "
                    "flock LOCK HOW FILE...\n");
    return 2;
}
