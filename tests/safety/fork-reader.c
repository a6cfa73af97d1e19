/* Reads a file in steps and forks a child after each, all children alive until the end
 * (tests/test_run_seccomp.py): fork-reader FILE CHILDREN
 * In a cgroup whose pids.max leaves room for exactly its own tasks, a copy of it counted there
 * would make one of its forks fail. Prints how many forks succeeded and the bytes read. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fork-reader FILE CHILDREN\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY), children = atoi(argv[2]), forked = 0, pipefd[2];
    if (fd < 0 || pipe(pipefd) < 0) {
        perror("fork-reader");
        return 2;
    }
    static char buf[65536];
    unsigned long total = 0;
    for (int i = 0; i < children; i++) {
        for (int chunk = 0; chunk < 4; chunk++) {
            ssize_t n = read(fd, buf, sizeof buf);
            total += n > 0 ? (unsigned long)n : 0;
        }
        pid_t pid = fork();
        if (pid == 0) { /* waits for the parent's end of the pipe to close */
            close(pipefd[1]);
            char c;
            _exit(read(pipefd[0], &c, 1) < 0);
        }
        if (pid < 0)
            printf("fork %d failed: %s\n", i, strerror(errno));
        else
            forked++;
    }
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        total += (unsigned long)n;
    close(pipefd[1]);
    while (wait(NULL) > 0)
        ;
    printf("forked %d of %d\nread %lu\n", forked, children, total);
    return 0;
}
