// reap: run CMD as a child subreaper; report how every descendant that gets reparented to us ends.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t c = fork();
    if (c == 0) { execvp(argv[1], argv + 1); _exit(127); }
    int st; pid_t w;
    while ((w = waitpid(-1, &st, 0)) > 0) {
        if (w == c) continue;
        if (WIFEXITED(st)) fprintf(stderr, "REAP: orphan %d exited with status %d\n", w, WEXITSTATUS(st));
        else if (WIFSIGNALED(st)) fprintf(stderr, "REAP: orphan %d killed by signal %d\n", w, WTERMSIG(st));
    }
    return 0;
}
