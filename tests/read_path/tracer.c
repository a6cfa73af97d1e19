/* A call tracer for a build of libspecx.so compiled with -finstrument-functions
 * (tests/test_read_path.py): every entry to and exit from a function of the runtime is
 * recorded as the function's offset in the library and the process it ran in. The record
 * lives in memory shared with forks and clones, so that it survives the program's copy until
 * its sandbox privatizes it; the program writes it out when it exits, to the file named by
 * SPECX_TRACE_OUT. Calls the tracer makes into the runtime (it interposes mmap and write) are
 * not recorded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define NO_TRACE __attribute__((no_instrument_function))
#define MAX_EVENTS (1u << 20)

struct event {
    uint32_t pid;
    uint32_t enter; /* 1: entry, 0: exit */
    uint64_t offset; /* of the function in the traced library */
};

struct trace {
    uint32_t n;
    uint32_t program;
    uintptr_t base;
    struct event events[MAX_EVENTS];
};

static struct trace *trace;
/* Set while the tracer runs: what it calls of the runtime is not the program's path. */
static __thread int inside;

NO_TRACE __attribute__((constructor)) static void trace_open(void)
{
    inside = 1;
    void *p = mmap(NULL, sizeof *trace, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p != MAP_FAILED) {
        trace = p;
        trace->program = (uint32_t)getpid();
    }
    inside = 0;
}

NO_TRACE static void record(void *fn, uint32_t enter)
{
    if (!trace || inside)
        return;
    inside = 1;
    Dl_info info;
    if (trace->base || dladdr(fn, &info)) {
        if (!trace->base)
            trace->base = (uintptr_t)info.dli_fbase;
        uint32_t i = __atomic_fetch_add(&trace->n, 1, __ATOMIC_RELAXED);
        if (i < MAX_EVENTS)
            trace->events[i] = (struct event){ (uint32_t)getpid(), enter,
                                               (uintptr_t)fn - trace->base };
    }
    inside = 0;
}

NO_TRACE void __cyg_profile_func_enter(void *fn, void *site)
{
    record(fn, 1);
}

NO_TRACE void __cyg_profile_func_exit(void *fn, void *site)
{
    record(fn, 0);
}

NO_TRACE static void write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

NO_TRACE __attribute__((destructor)) static void trace_close(void)
{
    const char *out = getenv("SPECX_TRACE_OUT");
    /* specx run, which loads the tracer too but not the runtime, records nothing. */
    if (!trace || !out || trace->n == 0 || (uint32_t)getpid() != trace->program)
        return;
    inside = 1;
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        uint32_t n = trace->n < MAX_EVENTS ? trace->n : MAX_EVENTS;
        write_all(fd, trace->events, n * sizeof trace->events[0]);
        close(fd);
    }
    inside = 0;
}
