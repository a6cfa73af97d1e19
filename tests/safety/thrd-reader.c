/* Starts a thread with C11 thrd_create (which reaches pthread_create inside libc, where the
 * runtime's wrapper cannot see it), evicts FILE from the page cache and reads it: the read
 * stalls in a multi-threaded process, whose copy is a clone of the reading thread alone. The
 * thread waits until the reading is done: one that slept a fixed time could end before the
 * first stall on a loaded machine, and the copy would be of a single-threaded process. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <threads.h>
#include <unistd.h>

static mtx_t lock;
static cnd_t read_done;
static bool done;

static int idle(void *arg)
{
    (void)arg;
    mtx_lock(&lock);
    while (!done)
        cnd_wait(&read_done, &lock);
    mtx_unlock(&lock);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    thrd_t t;
    if (mtx_init(&lock, mtx_plain) != thrd_success || cnd_init(&read_done) != thrd_success ||
        thrd_create(&t, idle, NULL) != thrd_success)
        return 1;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0)
        return 1;
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    char buf[65536];
    long total = 0;
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
        total += n;
    mtx_lock(&lock);
    done = true;
    cnd_signal(&read_done);
    mtx_unlock(&lock);
    thrd_join(t, NULL);
    printf("%ld\n", total);
    return 0;
}
