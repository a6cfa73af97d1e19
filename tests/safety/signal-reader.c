/* Reads a file while its SIGUSR1 handler appends one line per signal to a log
 * (tests/test_run_seccomp.py): signal-reader FILE LOG [EXTRA_FDS]
 * It holds EXTRA_FDS more descriptors of FILE open (a copy re-opens each before it is sealed,
 * which widens the moment between its clone and its seal), reads FILE through, then blocks
 * the signal and prints how many signals it handled and how many bytes it read. The log must
 * have exactly that many lines: a line more is a handler that ran in a copy of the program. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int log_fd;
static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
    (void)sig;
    int saved = errno;
    handled++;
    write(log_fd, "usr1\n", 5);
    errno = saved;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: signal-reader FILE LOG [EXTRA_FDS]\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    log_fd = open(argv[2], O_WRONLY | O_APPEND);
    if (fd < 0 || log_fd < 0) {
        perror("signal-reader: open");
        return 2;
    }
    for (int i = argc > 3 ? atoi(argv[3]) : 0; i > 0; i--)
        if (open(argv[1], O_RDONLY) < 0) {
            perror("signal-reader: open");
            return 2;
        }
    struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
    sigaction(SIGUSR1, &sa, NULL);
    static char buf[16384];
    unsigned long total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        total += (unsigned long)n;
    }
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    printf("handled %d\nread %lu\n", (int)handled, total);
    return 0;
}
