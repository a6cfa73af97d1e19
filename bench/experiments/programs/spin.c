/* spin SECONDS: a busy loop for SECONDS of wall time, printing its count; the pinned
 * spinner of bench/experiments/idle_at_rest.py and idle_v2_rest.py. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    double secs = atof(argv[1]);
    struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile unsigned long n = 0;
    do { for (int i = 0; i < 100000; i++) n++; clock_gettime(CLOCK_MONOTONIC, &t); }
    while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    printf("%lu\n", (unsigned long)n);
    return 0;
}
