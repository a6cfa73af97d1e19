/* memshare: a program that changes memory other processes or files see, between reads that
 * stall on a cold file, for the differential tests of tests/test_mapped_safety.py.
 * Every step waits for data (a pread of a cold range of DATA into private memory),
 * writes something derived from it, then waits again (a page fault on another cold range of
 * DATA, mapped). A
 * speculative copy of the program runs ahead during the waits and goes through the same
 * writes with data it does not have (a read it could not complete leaves its buffer as it
 * was): if any of its writes got out, the output or the files would differ from a plain run.
 *
 * Usage: memshare MODE DATA   (DATA: a regular file of at least STEPS * STEP_SPAN bytes)
 *   mapfile   adds to a file mapped MAP_SHARED (mapped.out in the working directory) and
 *             msyncs it after every step
 *   shmanon   adds to MAP_SHARED|MAP_ANONYMOUS memory that a forked child reads and prints
 *   posixshm  the same with a POSIX shared memory object the child maps by name
 *   mprotect  write-protects memory and counts the write faults its own handler fixes;
 *             makes a range of DATA's mapping PROT_NONE and expects SIGSEGV there
 * Every mode writes into 8 MiB of private anonymous memory too (large enough for a fast
 * refork to leave it out of the speculative clone) and ends by forking a child that must see
 * all of it. Prints one line per step and checksums of what it wrote at the end. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEPS 16
#define STEP_SPAN (512 * 1024)   /* apart by more than any readahead on the slow mount */
#define READ_SIZE (16 * 1024)
#define FAULT_AT (256 * 1024)    /* a second cold range per step, reached by a page fault */
#define PAGE 4096
#define REGION (STEPS * PAGE)
/* Private anonymous regions this large are what `specx run --cow=one-way` leaves out of the
 * speculative clone and fills on demand (src/run/runtime/refork/lazy_memory.h: 4 MiB and more). */
#define LARGE (8u << 20)

static const char *data_path;
static const unsigned char *data;   /* DATA, mapped read-only */
static int data_fd;
static unsigned char *private_mem;  /* LARGE bytes of private anonymous memory */

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "memshare: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ULL;
    return h;
}

/* Adds V to every 64-bit word of PAGE: a read-modify-write, so a write that got out of a
 * speculative copy would be counted twice. */
static void add_to_page(uint64_t *page, uint64_t v)
{
    for (size_t i = 0; i < PAGE / sizeof *page; i++)
        page[i] += v + i;
}

/* Step K's first wait for data: a read of a cold range of DATA into private memory, whose
 * value is then added to another page of it. A speculative copy starts here and goes on
 * through the step's writes without the data (the buffer keeps what it held). */
static uint64_t read_step(int k)
{
    unsigned char *buf = private_mem + (size_t)k * READ_SIZE;
    memset(buf, k, READ_SIZE);
    if (pread(data_fd, buf, READ_SIZE, (off_t)k * STEP_SPAN) != READ_SIZE)
        die("pread");
    uint64_t v = fnv(0xcbf29ce484222325ULL, buf, READ_SIZE);
    add_to_page((uint64_t *)(private_mem + LARGE / 2 + (size_t)(k * 97 % 512) * PAGE), v);
    return v;
}

/* Step K's second wait, after its writes: a page fault on another cold range of DATA. */
static uint64_t fault_step(int k)
{
    return fnv(0xcbf29ce484222325ULL, data + (size_t)k * STEP_SPAN + FAULT_AT, 64);
}

/* Private memory filled with a pattern, all of it resident. */
static void make_private_memory(void)
{
    private_mem = mmap(NULL, LARGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (private_mem == MAP_FAILED)
        die("mmap private");
    for (size_t i = 0; i < LARGE; i++)
        private_mem[i] = (unsigned char)(i * 131 >> 7);
}

/* The end of every mode: a child forked now, after speculation, has all of the private memory
 * (specx must give its regions back to the program's own forks), with the same values. */
static void fork_sees_private_memory(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        printf("forked child sees private memory %016llx\n",
               (unsigned long long)fnv(0, private_mem, LARGE));
        fflush(stdout);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0)
        die("waitpid");
    printf("forked child %s, private memory %016llx\n",
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ended well" : "FAILED",
           (unsigned long long)fnv(0, private_mem, LARGE));
}

/* Each mode maps DATA only once the memory others see exists, right before its steps: a
 * speculative copy made at this mapping (page-fault speculation starts one there) inherits
 * that memory and runs straight into the first step's writes. */
static void map_data(void)
{
    struct stat st;
    data_fd = open(data_path, O_RDONLY);
    if (data_fd < 0 || fstat(data_fd, &st) < 0)
        die(data_path);
    if (st.st_size < (off_t)STEPS * STEP_SPAN) {
        fprintf(stderr, "memshare: %s: smaller than %d bytes\n", data_path, STEPS * STEP_SPAN);
        exit(1);
    }
    data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, data_fd, 0);
    if (data == MAP_FAILED)
        die("mmap DATA");
}

static void print_step(const char *who, int k, uint64_t v, uint64_t after)
{
    printf("%s step %d: %016llx %016llx\n", who, k, (unsigned long long)v,
           (unsigned long long)after);
    fflush(stdout);
}

/* --- mapfile ----------------------------------------------------------------------------- */

static void run_mapfile(void)
{
    int fd = open("mapped.out", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, REGION) < 0)
        die("mapped.out");
    unsigned char *out = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (out == MAP_FAILED)
        die("mmap mapped.out");
    close(fd);
    map_data();
    for (int k = 0; k < STEPS; k++) {
        uint64_t v = read_step(k);
        add_to_page((uint64_t *)(out + k * PAGE), v);
        add_to_page((uint64_t *)out, 1);   /* page 0 counts the steps */
        if (msync(out, REGION, MS_SYNC) != 0)
            die("msync");
        print_step("mapfile", k, v, fault_step(k));
    }
    printf("mapped.out %016llx\n", (unsigned long long)fnv(0, out, REGION));
    munmap(out, REGION);
}

/* --- shmanon, posixshm: a child reads what the parent wrote ------------------------------ */

/* The child: for each step number the parent sends, prints its view of that page; answers
 * with one byte so that the lines come out in a fixed order. */
static void reader_child(const unsigned char *mem, int cmd, int ack)
{
    unsigned char k;
    while (read(cmd, &k, 1) == 1) {
        print_step("child", k, fnv(0, mem + (size_t)k * PAGE, PAGE), fnv(0, mem, REGION));
        if (write(ack, "", 1) != 1)
            _exit(1);
    }
    printf("child sees %016llx\n", (unsigned long long)fnv(0, mem, REGION));
    fflush(stdout);
    _exit(0);
}

static void share_steps(unsigned char *mem, const unsigned char *(*child_view)(void))
{
    int cmd[2], ack[2];
    if (pipe(cmd) < 0 || pipe(ack) < 0)
        die("pipe");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(cmd[1]);
        close(ack[0]);
        reader_child(child_view ? child_view() : mem, cmd[0], ack[1]);
    }
    close(cmd[0]);
    close(ack[1]);
    map_data();
    for (int k = 0; k < STEPS; k++) {
        uint64_t v = read_step(k);
        add_to_page((uint64_t *)(mem + k * PAGE), v);
        print_step("parent", k, v, fault_step(k));
        unsigned char step = (unsigned char)k, got;
        if (write(cmd[1], &step, 1) != 1 || read(ack[0], &got, 1) != 1)
            die("talking to the child");
    }
    close(cmd[1]);
    int status;
    if (waitpid(pid, &status, 0) < 0)
        die("waitpid");
    printf("child exit %d, parent sees %016llx\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           (unsigned long long)fnv(0, mem, REGION));
}

static void run_shmanon(void)
{
    unsigned char *mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        die("mmap shared anonymous");
    share_steps(mem, NULL);
}

static char shm_name[64];

static unsigned char *map_shm(int flags)
{
    int fd = shm_open(shm_name, flags, 0600);
    if (fd < 0 || ((flags & O_CREAT) && ftruncate(fd, REGION) < 0))
        die("shm_open");
    unsigned char *mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED)
        die("mmap shm");
    close(fd);
    return mem;
}

/* The child's own mapping of the object, made after the fork. */
static const unsigned char *child_shm_view(void)
{
    return map_shm(O_RDWR);
}

static void run_posixshm(void)
{
    snprintf(shm_name, sizeof shm_name, "/specx-memshare-%ld", (long)getpid());
    unsigned char *mem = map_shm(O_RDWR | O_CREAT | O_EXCL);
    share_steps(mem, child_shm_view);
    shm_unlink(shm_name);
}

/* --- mprotect ---------------------------------------------------------------------------- */

static unsigned char *guarded;        /* write-protected pages, unprotected on first write */
static volatile sig_atomic_t write_faults;
static const unsigned char *fenced;   /* a range of DATA's mapping made PROT_NONE */
static sigjmp_buf fence_jump;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    unsigned char *addr = si->si_addr;
    if (addr >= guarded && addr < guarded + LARGE) {
        write_faults++;
        mprotect(guarded + (addr - guarded) / PAGE * PAGE, PAGE, PROT_READ | PROT_WRITE);
        return;
    }
    if (fenced && addr >= fenced && addr < fenced + PAGE)
        siglongjmp(fence_jump, 1);
    signal(sig, SIG_DFL);   /* not ours: the default action, as without a handler */
}

/* Whether reading FENCED traps, as the program's own PROT_NONE says it must. */
static int fence_traps(void)
{
    if (sigsetjmp(fence_jump, 1))
        return 1;
    volatile unsigned char c = *fenced;
    (void)c;
    return 0;
}

static void run_mprotect(void)
{
    struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
    sigaction(SIGSEGV, &sa, NULL);
    /* Large, so that a fast refork leaves what is still read-only of it out of the clone. */
    guarded = mmap(NULL, LARGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guarded == MAP_FAILED || mprotect(guarded, LARGE, PROT_READ) != 0)
        die("guarded region");
    map_data();
    for (int k = 0; k < STEPS; k++) {
        uint64_t v = read_step(k);
        add_to_page((uint64_t *)(guarded + k * PAGE), v);
        /* A cold page of DATA's mapping, fenced off by the program itself. */
        fenced = data + (size_t)k * STEP_SPAN + FAULT_AT + 2 * PAGE;
        if (mprotect((void *)fenced, PAGE, PROT_NONE) != 0)
            die("mprotect PROT_NONE");
        int trapped = fence_traps();
        if (mprotect((void *)fenced, PAGE, PROT_READ) != 0)
            die("mprotect PROT_READ");
        printf("mprotect step %d: %016llx %016llx, write faults %d, fence %s, behind it "
               "%016llx\n", k, (unsigned long long)v, (unsigned long long)fault_step(k),
               (int)write_faults, trapped ? "trapped" : "OPEN",
               (unsigned long long)fnv(0, fenced, PAGE));
        fflush(stdout);
    }
    printf("guarded %016llx\n", (unsigned long long)fnv(0, guarded, LARGE));
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*run)(void);
    } modes[] = { { "mapfile", run_mapfile }, { "shmanon", run_shmanon },
                  { "posixshm", run_posixshm }, { "mprotect", run_mprotect } };
    if (argc != 3) {
        fprintf(stderr, "usage: memshare mapfile|shmanon|posixshm|mprotect DATA\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(argv[1], modes[i].name) == 0) {
            data_path = argv[2];
            make_private_memory();
            modes[i].run();
            fork_sees_private_memory();
            return 0;
        }
    fprintf(stderr, "memshare: unknown mode '%s'\n", argv[1]);
    return 2;
}
