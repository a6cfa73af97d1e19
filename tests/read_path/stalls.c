/* The program whose blocking reads tests/test_read_path.py traces: four reads of a cold file,
 * each where the one before says. A copy sees its buffer unchanged where the data was not in
 * memory, so it takes offset 0 for the next read: right once, then wrong. Usage: stalls FILE. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0)
        return 1;
    uint64_t at = 1u << 20;
    for (int i = 0; i < 4; i++) {
        uint64_t next = 0;
        if (pread(fd, &next, sizeof next, (off_t)at) != sizeof next)
            return 1;
        printf("%llu\n", (unsigned long long)next);
        at = next;
        /* Lets the copy made at this stall enter its sandbox before the next. */
        nanosleep(&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
    }
    return 0;
}
