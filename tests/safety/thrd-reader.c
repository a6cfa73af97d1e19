/* Starts a thread with C11 thrd_create (which reaches pthread_create inside libc, where the
 * runtime's wrapper cannot see it), evicts FILE from the page cache and reads it: the read
 * stalls in a multi-threaded process, whose copy is a clone of the reading thread alone. */
#include <fcntl.h>
#include <stdio.h>
#include <threads.h>
#include <unistd.h>

static int idle(void *arg)
{
    (void)arg;
    thrd_sleep(&(struct timespec){ .tv_nsec = 200000000 }, NULL);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    thrd_t t;
    if (thrd_create(&t, idle, NULL) != thrd_success)
        return 1;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0)
        return 1;
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    char buf[65536];
    long total = 0;
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
        total += n;
    thrd_join(t, NULL);
    printf("%ld\n", total);
    return 0;
}
