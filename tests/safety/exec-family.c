/* Calls every member of the exec family the runtime wraps, including execl from a vfork child
 * (where a wrapper must not touch the heap: execl is async-signal-safe), and prints what each
 * child printed; tests/test_run.py compares the output with and without `specx run`. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void wait_for(pid_t pid, const char *name)
{
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        printf("%s: child failed\n", name);
    fflush(stdout);
}

int main(void)
{
    char *const argv[] = {"echo", "execv", NULL};
    char *const env_argv[] = {"env", NULL};
    char *const env[] = {"ONLY=this", NULL};
    pid_t pid;

    fflush(stdout);
    if ((pid = vfork()) == 0) {
        execl("/bin/echo", "echo", "execl", "from", "vfork", (char *)NULL);
        _exit(127);
    }
    wait_for(pid, "execl");
    if ((pid = fork()) == 0) {
        execlp("echo", "echo", "execlp", (char *)NULL);
        _exit(127);
    }
    wait_for(pid, "execlp");
    if ((pid = fork()) == 0) {
        execle("/usr/bin/env", "env", (char *)NULL, env);
        _exit(127);
    }
    wait_for(pid, "execle");
    if ((pid = fork()) == 0) {
        execv("/bin/echo", argv);
        _exit(127);
    }
    wait_for(pid, "execv");
    if ((pid = fork()) == 0) {
        execvpe("env", env_argv, env);
        _exit(127);
    }
    wait_for(pid, "execvpe");
    /* A failing exec returns -1 with errno set, as without specx. */
    if (execl("/nonexistent/program", "x", (char *)NULL) < 0)
        perror("execl of a missing program");
    return 0;
}
