/* opvm: runs a script of operations, one per line, each of which reads data or has a side
 * effect that someone outside the process can see (files, output, pipes, signals, sockets,
 * shared memory, child processes, exit status). tests/test_safety.py runs the same script with
 * and without `specx run` and requires byte-identical results: whatever the speculative copy
 * of opvm does while opvm waits for its reads must stay invisible (paper §4.1.1).
 *
 * Usage: opvm [--threads | --streams DIR] SCRIPT. Every operation prints one line "N OP: result"
 * to stdout.
 * Lines starting with '#' are comments. Arguments are separated by blanks; `shell` and `spawn`
 * take the rest of the line. See ops[] for the operations.
 *
 * With --threads the script runs in a second thread while a third keeps taking the allocator's
 * lock and stdout's (a copy of the script's thread then often starts with a lock held by a
 * thread it does not have), and the main thread waits: the same results, now from a
 * multi-threaded program. With --streams DIR the script runs in a second thread while a third
 * reads every regular file directly in DIR, in name order, a stream of reads of its own (the
 * runtime then gives each thread a copy of its own, copy.c), and prints their size and checksum
 * last. The script starts once that thread has read STREAM_AHEAD files (its copy has then
 * shown it follows that thread), and the reading thread waits for the script to end before it
 * does (its copy is then still about when the script's thread stalls). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 16
#define SLOTS 8

static int slot_fd[SLOTS] = {-1, -1, -1, -1, -1, -1, -1, -1};
static int line_no;
static volatile sig_atomic_t signals_caught;

static void result(const char *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result(const char *op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%d %s: ", line_no, op);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

/* Prints "ok" or the error of the last call (strerror is deterministic). */
static void status(const char *op, int rc)
{
    if (rc < 0)
        result(op, "error %s", strerror(errno));
    else
        result(op, "ok");
}

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static int slot(const char *arg)
{
    int s = atoi(arg);
    return s >= 0 && s < SLOTS ? s : 0;
}

/* --- reads: the cold I/O that makes specx speculate ----------------------------------------- */

static void op_read(char **a)
{
    int fd = open(a[1], O_RDONLY);
    if (fd < 0)
        return status("read", -1);
    char buf[16384];
    uint64_t h = 14695981039346656037ULL, total = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        h = fnv(h, buf, (size_t)n);
        total += (uint64_t)n;
    }
    close(fd);
    result("read", "%llu bytes %016llx", (unsigned long long)total, (unsigned long long)h);
}

static void op_pread(char **a)
{
    int fd = open(a[1], O_RDONLY);
    char buf[65536];
    size_t len = (size_t)atol(a[3]) < sizeof buf ? (size_t)atol(a[3]) : sizeof buf;
    ssize_t n = fd < 0 ? -1 : pread(fd, buf, len, atol(a[2]));
    if (fd >= 0)
        close(fd);
    if (n < 0)
        return status("pread", -1);
    result("pread", "%zd bytes %016llx", n,
           (unsigned long long)fnv(14695981039346656037ULL, buf, (size_t)n));
}

static void op_mmapread(char **a)
{
    int fd = open(a[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0)
        return status("mmapread", -1);
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return status("mmapread", -1);
    result("mmapread", "%016llx",
           (unsigned long long)fnv(14695981039346656037ULL, m, (size_t)st.st_size));
    munmap(m, (size_t)st.st_size);
}

/* Descriptors kept across operations: their offsets are what speculation must not move. */
static void op_open(char **a)
{
    int s = slot(a[1]);
    if (slot_fd[s] >= 0)
        close(slot_fd[s]);
    /* openrdwr: read-write without creating, as databases open the files they read (the
     * copy gets a read-only descriptor for it). */
    int flags = strcmp(a[0], "openrw") == 0     ? O_RDWR | O_CREAT
                : strcmp(a[0], "openrdwr") == 0 ? O_RDWR
                                                : O_RDONLY;
    slot_fd[s] = open(a[2], flags, 0644);
    status(a[0], slot_fd[s]);
}

static void op_readn(char **a)
{
    char buf[65536];
    size_t len = (size_t)atol(a[2]) < sizeof buf ? (size_t)atol(a[2]) : sizeof buf;
    ssize_t n = read(slot_fd[slot(a[1])], buf, len);
    if (n < 0)
        return status("readn", -1);
    result("readn", "%zd bytes %016llx", n,
           (unsigned long long)fnv(14695981039346656037ULL, buf, (size_t)n));
}

/* Reads up to N directory entries from a slot opened on a directory: continues where the last
 * call ended, like readn. */
static void op_dirents(char **a)
{
    char buf[8192];
    long want = atol(a[2]), got = 0;
    long n = syscall(SYS_getdents64, slot_fd[slot(a[1])], buf, sizeof buf);
    if (n < 0)
        return status("dirents", -1);
    printf("%d dirents:", line_no);
    for (long pos = 0; pos < n && got < want; got++) {
        struct dirent64 *d = (struct dirent64 *)(buf + pos);
        printf(" %s", d->d_name);
        pos += d->d_reclen;
        /* Leave the offset after the last entry printed, not after the whole buffer. */
        if (got + 1 == want)
            lseek(slot_fd[slot(a[1])], d->d_off, SEEK_SET);
    }
    putchar('\n');
}

static void op_seek(char **a)
{
    off_t at = lseek(slot_fd[slot(a[1])], atol(a[2]), SEEK_SET);
    status("seek", at < 0 ? -1 : 0);
}

static void op_writefd(char **a)
{
    status("writefd", (int)write(slot_fd[slot(a[1])], a[2], strlen(a[2])));
}

static void op_close(char **a)
{
    int s = slot(a[1]);
    status("close", close(slot_fd[s]));
    slot_fd[s] = -1;
}

static int compare_names(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static void op_list(char **a)
{
    DIR *d = opendir(a[1]);
    if (!d)
        return status("list", -1);
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], compare_names);
    printf("%d list:", line_no);
    for (int i = 0; i < n; i++) {
        printf(" %s", names[i]);
        free(names[i]);
    }
    putchar('\n');
}

/* --- file system changes --------------------------------------------------------------------- */

static void write_file(const char *op, const char *path, const char *text, int flags)
{
    int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
    if (fd < 0)
        return status(op, -1);
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    status(op, n < 0 ? -1 : 0);
}

static void op_write(char **a) { write_file("write", a[1], a[2], O_TRUNC); }
static void op_append(char **a) { write_file("append", a[1], a[2], O_APPEND); }
static void op_unlink(char **a) { status("unlink", unlink(a[1])); }
static void op_rename(char **a) { status("rename", rename(a[1], a[2])); }
static void op_mkdir(char **a) { status("mkdir", mkdir(a[1], 0755)); }
static void op_rmdir(char **a) { status("rmdir", rmdir(a[1])); }
static void op_symlink(char **a) { status("symlink", symlink(a[1], a[2])); }
static void op_link(char **a) { status("link", link(a[1], a[2])); }
static void op_truncate(char **a) { status("truncate", truncate(a[1], atol(a[2]))); }
static void op_chmod(char **a) { status("chmod", chmod(a[1], (mode_t)strtol(a[2], NULL, 8))); }

/* --- memory ------------------------------------------------------------------------------- */

/* Fills MIB mebibytes of fresh anonymous memory and keeps it: memory-cgroup pressure. */
static void op_fill(char **a)
{
    size_t len = (size_t)atol(a[1]) << 20;
    unsigned char *p = malloc(len);
    if (!p)
        return status("fill", -1);
    for (size_t i = 0; i < len; i += 4096)
        p[i] = (unsigned char)(i >> 12);
    unsigned long sum = 0;
    for (size_t i = 0; i < len; i += 4096)
        sum += p[i];
    result("fill", "%zu MiB, sum %lu", len >> 20, sum);
}

/* --- output ------------------------------------------------------------------------------- */

static void op_print(char **a) { result("print", "%s", a[1]); }
static void op_eprint(char **a) { fprintf(stderr, "%d eprint: %s\n", line_no, a[1]); }
static void op_rawout(char **a)
{
    /* Unbuffered, behind stdio's back: flush first so the order is defined. */
    fflush(stdout);
    ssize_t n = write(STDOUT_FILENO, a[1], strlen(a[1]));
    n += write(STDOUT_FILENO, "\n", 1);
    (void)n;
}

/* --- processes, signals, IPC -------------------------------------------------------------- */

static int wait_status(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return st;
}

static void describe_status(const char *op, int st)
{
    if (WIFSIGNALED(st))
        result(op, "killed by signal %d", WTERMSIG(st));
    else
        result(op, "exit %d", WEXITSTATUS(st));
}

static void op_pipe(char **a)
{
    int p[2];
    if (pipe(p) < 0)
        return status("pipe", -1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        ssize_t n = write(p[1], a[1], strlen(a[1]));
        _exit(n < 0);
    }
    close(p[1]);
    char buf[256] = "";
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    wait_status(pid);
    result("pipe", "got '%.*s'", (int)(n > 0 ? n : 0), buf);
}

static void op_shell(char **a)
{
    fflush(stdout);
    fflush(stderr);
    describe_status("shell", system(a[1]));
}

static void op_spawn(char **a)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", a[1], (char *)NULL);
        _exit(127);
    }
    describe_status("spawn", wait_status(pid));
}

static void on_signal(int sig) { signals_caught++; }

static void op_killself(char **a)
{
    int sig = atoi(a[1]);
    signal(sig, on_signal);
    raise(sig);
    result("killself", "caught %d", (int)signals_caught);
}

/* A child that dies of signal SIG by its default action, even if killself installed a handler
 * for it: the signal stays blocked until the child has restored the default and waits. */
static void op_killchild(char **a)
{
    int sig = atoi(a[1]);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, sig);
    sigprocmask(SIG_BLOCK, &block, &old);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        signal(sig, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigsuspend(&none);
        _exit(0);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    kill(pid, sig);
    describe_status("killchild", wait_status(pid));
}

static void op_tcp(char **a)
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    int srv = socket(AF_INET, SOCK_STREAM, 0);
    int cli = socket(AF_INET, SOCK_STREAM, 0);
    if (srv < 0 || cli < 0 || bind(srv, (struct sockaddr *)&addr, sizeof addr) < 0 ||
        listen(srv, 1) < 0 || getsockname(srv, (struct sockaddr *)&addr, &len) < 0 ||
        connect(cli, (struct sockaddr *)&addr, sizeof addr) < 0)
        return status("tcp", -1);
    int conn = accept(srv, NULL, NULL);
    ssize_t sent = send(cli, a[1], strlen(a[1]), 0);
    char buf[256] = "";
    size_t want = strlen(a[1]) < sizeof buf - 1 ? strlen(a[1]) : sizeof buf - 1;
    ssize_t got = conn < 0 ? -1 : recv(conn, buf, want, MSG_WAITALL);
    close(cli);
    close(srv);
    if (conn >= 0)
        close(conn);
    result("tcp", "sent %zd got '%.*s'", sent, (int)(got > 0 ? got : 0), buf);
}

static void op_mapwrite(char **a)
{
    int fd = open(a[1], O_RDWR | O_CREAT, 0644);
    size_t len = strlen(a[2]);
    if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
        return status("mapwrite", -1);
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return status("mapwrite", -1);
    memcpy(m, a[2], len);
    munmap(m, len);
    result("mapwrite", "ok");
}

/* A shared anonymous page made early and used later, after the reads the speculative copy
 * runs ahead of: a copy that had not made it private would add its own bumps to the
 * program's counter. */
static unsigned *shared_counter;

static void op_shmcounter(char **a)
{
    (void)a;
    shared_counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    status("shmcounter", shared_counter == MAP_FAILED ? -1 : 0);
}

static void op_bump(char **a)
{
    (void)a;
    if (shared_counter == NULL || shared_counter == MAP_FAILED)
        return status("bump", -1);
    result("bump", "%u", ++*shared_counter);
}

/* A child writes into memory shared with the parent, which prints what it sees. */
static void share_with_child(const char *op, char *mem, const char *text)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        strcpy(mem, text);
        _exit(0);
    }
    wait_status(pid);
    result(op, "parent sees '%s'", mem);
}

static void op_shmanon(char **a)
{
    char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return status("shmanon", -1);
    share_with_child("shmanon", m, a[1]);
    munmap(m, 4096);
}

static void op_sysv(char **a)
{
    int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    char *m = id < 0 ? (char *)-1 : shmat(id, NULL, 0);
    if (m == (char *)-1)
        return status("sysv", -1);
    shmctl(id, IPC_RMID, NULL);
    share_with_child("sysv", m, a[1]);
    shmdt(m);
}

static void op_stdin(char **a)
{
    char buf[256] = "";
    size_t want = (size_t)atol(a[1]) < sizeof buf - 1 ? (size_t)atol(a[1]) : sizeof buf - 1;
    ssize_t n = read(STDIN_FILENO, buf, want);
    result("stdin", "'%.*s'", (int)(n > 0 ? n : 0), buf);
}

/* The first byte of PATH (the speculative copy, whose read of data not in memory leaves the
 * buffer as it was, finds 0 where the program finds the file's first byte), or -1 after
 * printing OP's error. */
static int first_byte(const char *op, const char *path)
{
    unsigned char first = 0;
    int fd = open(path, O_RDONLY);
    ssize_t n = fd < 0 ? -1 : pread(fd, &first, 1, 0);
    if (fd >= 0)
        close(fd);
    if (n < 0) {
        status(op, -1);
        return -1;
    }
    return first;
}

/* Kept here (volatile): memory nothing reads is memory the compiler need not allocate. */
static unsigned char *volatile hogged;

static void hog(const char *mib)
{
    size_t len = (size_t)atol(mib) << 20;
    hogged = malloc(len);
    for (size_t i = 0; hogged && i < len; i += 4096)
        hogged[i] = 1;
}

static void op_crash(char **a) __attribute__((noinline));

static _Noreturn void sleep_for_ever(char **a)
{
    (void)a;
    for (;;)
        nanosleep(&(struct timespec){ 1, 0 }, NULL);
}

/* A process that finds PATH's first byte zero fills MIB MiB and then does THEN; one that finds
 * data (a file of non-zero bytes) goes straight on. */
static void hog_if_zero(char **a, const char *op, void (*then)(char **))
{
    int first = first_byte(op, a[1]);
    if (first > 0)
        result(op, "data");
    if (first != 0)
        return;
    hog(a[2]);
    then(a);
}

/* hogifzero PATH MIB: the zero-finder sleeps for ever. tests/test_oom.py uses it to give the
 * copy memory the program does not have. */
static void op_hogifzero(char **a) { hog_if_zero(a, "hogifzero", sleep_for_ever); }

/* crashifzero PATH MIB: the zero-finder crashes (SIGSEGV) once it holds its memory. */
static void op_crashifzero(char **a) { hog_if_zero(a, "crashifzero", op_crash); }

/* Sleeps MS milliseconds in all, through any signal (a speculative copy's own timers). */
static void op_sleep(char **a)
{
    long ms = atol(a[1]);
    struct timespec left = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&left, &left) < 0 && errno == EINTR)
        ;
    result("sleep", "ok");
}

/* Computes for MS milliseconds without a system call (the clock is read through the vDSO). */
static void op_spin(char **a)
{
    long ms = atol(a[1]);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    volatile unsigned long work = 0;
    do {
        for (int i = 0; i < 100000; i++)
            work += (unsigned long)i;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L < ms);
    result("spin", "ok");
}

static void op_exit(char **a) { exit(atoi(a[1])); }
static void op_crash(char **a)
{
    /* Both volatile: the compiler may neither see that the pointer is NULL nor drop a store
     * nothing reads (it did, and "crash" went on as if nothing happened). */
    volatile int *volatile nowhere = NULL;
    *nowhere = 0;
}
static void op_abort(char **a) { abort(); }

static const struct {
    const char *name;
    int nargs; /* -1: the rest of the line is one argument */
    void (*run)(char **args);
} ops[] = {
    {"read", 1, op_read},         {"pread", 3, op_pread},       {"mmapread", 1, op_mmapread},
    {"open", 2, op_open},         {"openrw", 2, op_open},       {"openrdwr", 2, op_open},
    {"readn", 2, op_readn},       {"seek", 2, op_seek},         {"writefd", 2, op_writefd},
    {"close", 1, op_close},
    {"dirents", 2, op_dirents},
    {"list", 1, op_list},         {"write", 2, op_write},       {"append", 2, op_append},
    {"unlink", 1, op_unlink},     {"rename", 2, op_rename},     {"mkdir", 1, op_mkdir},
    {"rmdir", 1, op_rmdir},       {"symlink", 2, op_symlink},   {"link", 2, op_link},
    {"truncate", 2, op_truncate}, {"chmod", 2, op_chmod},       {"print", 1, op_print},
    {"eprint", 1, op_eprint},     {"rawout", 1, op_rawout},     {"pipe", 1, op_pipe},
    {"shell", -1, op_shell},      {"spawn", -1, op_spawn},      {"killself", 1, op_killself},
    {"killchild", 1, op_killchild}, {"tcp", 1, op_tcp},         {"mapwrite", 2, op_mapwrite},
    {"shmanon", 1, op_shmanon},   {"sysv", 1, op_sysv},         {"stdin", 1, op_stdin},
    {"sleep", 1, op_sleep},       {"exit", 1, op_exit},         {"crash", 0, op_crash},
    {"abort", 0, op_abort},       {"fill", 1, op_fill},         {"shmcounter", 0, op_shmcounter},
    {"bump", 0, op_bump},         {"spin", 1, op_spin},         {"hogifzero", 2, op_hogifzero},
    {"crashifzero", 2, op_crashifzero},
};

/* Splits LINE into the operation and its arguments; returns the argument count or -1. */
static int split(char *line, char **args, int rest_from)
{
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " \t\n", &save); tok && n < MAX_ARGS;
         tok = strtok_r(NULL, n == rest_from ? "\n" : " \t\n", &save))
        args[n++] = tok;
    return n;
}

static void run_line(char *line)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", line);
    char *args[MAX_ARGS];
    int n = split(copy, args, MAX_ARGS);
    if (n == 0 || args[0][0] == '#')
        return;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (strcmp(args[0], ops[i].name) != 0)
            continue;
        if (ops[i].nargs < 0)
            n = split(line, args, 1);
        if (n < (ops[i].nargs < 0 ? 2 : ops[i].nargs + 1)) {
            fprintf(stderr, "opvm: line %d: %s needs %d arguments\n", line_no, args[0],
                    ops[i].nargs);
            exit(2);
        }
        ops[i].run(args);
        return;
    }
    fprintf(stderr, "opvm: line %d: unknown operation '%s'\n", line_no, args[0]);
    exit(2);
}

static void *run_script(void *arg)
{
    FILE *script = arg;
    char line[4096];
    while (fgets(line, sizeof line, script)) {
        line_no++;
        run_line(line);
    }
    fclose(script);
    return NULL;
}

static int script_done;

static void pause_us(long us)
{
    struct timespec t = { 0, us * 1000 };
    nanosleep(&t, NULL);
}

/* Holds the allocator's lock and stdout's now and then, printing nothing. */
static void *hold_locks(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&script_done, __ATOMIC_ACQUIRE)) {
        flockfile(stdout);
        for (int i = 0; i < 16; i++)
            free(malloc(64 + 512 * (size_t)i));
        pause_us(100);
        funlockfile(stdout);
        pause_us(400);
    }
    return NULL;
}

static int run_threaded(FILE *script)
{
    pthread_t worker, holder;
    if (pthread_create(&holder, NULL, hold_locks, NULL) != 0 ||
        pthread_create(&worker, NULL, run_script, script) != 0) {
        fprintf(stderr, "opvm: cannot start threads\n");
        return 2;
    }
    pthread_join(worker, NULL);
    __atomic_store_n(&script_done, 1, __ATOMIC_RELEASE);
    pthread_join(holder, NULL);
    return 0;
}

#define STREAM_AHEAD 8

/* The stream of the --streams thread: the regular files directly in a directory. */
struct stream {
    const char *dir;
    uint64_t bytes, sum;
    int files_read; /* or STREAM_AHEAD once it read all */
};

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static void read_whole(struct stream *st, int fd)
{
    static unsigned char buf[64 * 1024];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        for (ssize_t i = 0; i < n; i++) {
            st->sum = (st->sum ^ buf[i]) * 0x100000001b3ULL;
            st->bytes++;
        }
}

static void *read_stream(void *arg)
{
    struct stream *st = arg;
    struct dirent **names;
    int n = scandir(st->dir, &names, NULL, by_name);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", st->dir, names[i]->d_name);
        struct stat sb;
        int fd = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? open(path, O_RDONLY) : -1;
        if (fd >= 0) {
            read_whole(st, fd);
            close(fd);
            __atomic_fetch_add(&st->files_read, 1, __ATOMIC_RELEASE);
        }
        free(names[i]);
    }
    if (n >= 0)
        free(names);
    __atomic_store_n(&st->files_read, STREAM_AHEAD, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&script_done, __ATOMIC_ACQUIRE))
        pause_us(1000);
    return NULL;
}

struct gated_script {
    FILE *script;
    struct stream *after;
};

static void *run_gated_script(void *arg)
{
    struct gated_script *g = arg;
    while (__atomic_load_n(&g->after->files_read, __ATOMIC_ACQUIRE) < STREAM_AHEAD)
        pause_us(1000);
    return run_script(g->script);
}

static int run_beside_stream(FILE *script, const char *dir)
{
    struct stream st = { dir, 0, 0xcbf29ce484222325ULL, 0 };
    struct gated_script gated = { script, &st };
    pthread_t worker, reader;
    if (pthread_create(&reader, NULL, read_stream, &st) != 0 ||
        pthread_create(&worker, NULL, run_gated_script, &gated) != 0) {
        fprintf(stderr, "opvm: cannot start threads\n");
        return 2;
    }
    pthread_join(worker, NULL);
    __atomic_store_n(&script_done, 1, __ATOMIC_RELEASE);
    pthread_join(reader, NULL);
    printf("stream: %llu bytes, checksum %016llx\n", (unsigned long long)st.bytes,
           (unsigned long long)st.sum);
    return 0;
}

int main(int argc, char **argv)
{
    bool threads = argc == 3 && strcmp(argv[1], "--threads") == 0;
    bool streams = argc == 4 && strcmp(argv[1], "--streams") == 0;
    if (argc != 2 + threads + 2 * streams) {
        fprintf(stderr, "usage: opvm [--threads | --streams DIR] SCRIPT\n");
        return 2;
    }
    const char *path = argv[argc - 1];
    FILE *script = fopen(path, "r");
    if (!script) {
        fprintf(stderr, "opvm: %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (threads)
        return run_threaded(script);
    if (streams)
        return run_beside_stream(script, argv[2]);
    run_script(script);
    return 0;
}
