// sampler: start CMD as a child, and (if PERIOD_US > 0) every PERIOD_US microseconds
// (clock_nanosleep, TIMER_ABSTIME) read /proc/PID/task/*/stat of it and parse the state field.
// usage: sampler PERIOD_US CMD [ARGS...]      (PERIOD_US=0: no sampling, same process tree)
// Each tick: opendir /proc/PID/task, for every tid open+read+close its stat (re-scanned every tick).
// Reports the sampler's own CPU (getrusage RUSAGE_SELF) per second of wall time, samples taken,
// and a histogram of observed thread states.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long ts_ns(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: sampler PERIOD_US CMD ARGS...\n"); return 1; }
    long period = atol(argv[1]) * 1000L;
    pid_t pid = fork();
    if (pid == 0) { execv(argv[2], argv + 2); perror("execv"); _exit(127); }
    struct timespec start, next, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    struct rusage ru0; getrusage(RUSAGE_SELF, &ru0);
    long ticks = 0, thread_samples = 0, late = 0, hist[128] = { 0 };
    int status = 0;
    char path[256], buf[1024];
    if (period == 0) {
        waitpid(pid, &status, 0);
    } else {
        snprintf(path, sizeof path, "/proc/%d/task", pid);
        next = start;
        for (;;) {
            next.tv_nsec += period;
            while (next.tv_nsec >= 1000000000L) { next.tv_nsec -= 1000000000L; next.tv_sec++; }
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
            if (waitpid(pid, &status, WNOHANG) == pid) break;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (ts_ns(now) - ts_ns(next) > period) { late++; next = now; }  /* don't burst to catch up */
            DIR *d = opendir(path);
            if (!d) continue;
            struct dirent *e;
            while ((e = readdir(d))) {
                if (e->d_name[0] == '.') continue;
                char p2[600];
                snprintf(p2, sizeof p2, "%s/%s/stat", path, e->d_name);
                int fd = open(p2, O_RDONLY | O_CLOEXEC);
                if (fd < 0) continue;
                ssize_t n = read(fd, buf, sizeof buf - 1);
                close(fd);
                if (n <= 0) continue;
                buf[n] = 0;
                char *rp = strrchr(buf, ')');          /* comm may contain spaces/parens */
                if (rp && rp[1] == ' ') { hist[(unsigned char)rp[2] & 127]++; thread_samples++; }
            }
            closedir(d);
            ticks++;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    struct rusage ru; getrusage(RUSAGE_SELF, &ru);
    double cpu = (ru.ru_utime.tv_sec - ru0.ru_utime.tv_sec) + (ru.ru_stime.tv_sec - ru0.ru_stime.tv_sec)
               + ((ru.ru_utime.tv_usec - ru0.ru_utime.tv_usec) + (ru.ru_stime.tv_usec - ru0.ru_stime.tv_usec)) / 1e6;
    double wall = (ts_ns(now) - ts_ns(start)) / 1e9;
    fprintf(stderr, "SAMPLER period_us=%ld wall_s=%.3f ticks=%ld thread_samples=%ld late=%ld cpu_ms=%.2f cpu_ms_per_s=%.2f us_per_tick=%.2f states:",
            period / 1000, wall, ticks, thread_samples, late, cpu * 1e3, cpu * 1e3 / wall,
            ticks ? cpu * 1e6 / ticks : 0.0);
    for (int i = 0; i < 128; i++) if (hist[i]) fprintf(stderr, " %c=%ld", i, hist[i]);
    fprintf(stderr, "\n");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}
