/* The interposed libc functions' real implementations, found with dlsym(RTLD_NEXT) so that
 * another preload library (an existing LD_PRELOAD) keeps working underneath ours. Only the
 * entry layer (this folder) calls them; the layers below never reach an interposed name and
 * make the system call itself (raw.h). */
#ifndef SPECX_REAL_H
#define SPECX_REAL_H

#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Marks an interposed libc name, the only symbols libspecx.so exports (it is built with
 * -fvisibility=hidden): the entry points of the runtime. */
#define EXPORT __attribute__((visibility("default")))

struct specx_real {
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*pread)(int, void *, size_t, off_t);
    ssize_t (*pread64)(int, void *, size_t, off_t);
    ssize_t (*readv)(int, const struct iovec *, int);
    ssize_t (*preadv)(int, const struct iovec *, int, off_t);
    ssize_t (*preadv64)(int, const struct iovec *, int, off_t);
    ssize_t (*preadv2)(int, const struct iovec *, int, off_t, int);
    ssize_t (*preadv64v2)(int, const struct iovec *, int, off_t, int);
    ssize_t (*read_chk)(int, void *, size_t, size_t);
    ssize_t (*pread_chk)(int, void *, size_t, off_t, size_t);
    ssize_t (*pread64_chk)(int, void *, size_t, off_t, size_t);
    ssize_t (*write)(int, const void *, size_t);
    int (*posix_fadvise)(int, off_t, off_t, int);
    int (*posix_fadvise64)(int, off_t, off_t, int);
    size_t (*fread)(void *, size_t, size_t, FILE *);
    size_t (*fread_unlocked)(void *, size_t, size_t, FILE *);
    char *(*fgets)(char *, int, FILE *);
    char *(*fgets_unlocked)(char *, int, FILE *);
    int (*fgetc)(FILE *);
    int (*getc)(FILE *);
    int (*io_getc)(FILE *);
    int (*uflow)(FILE *);
    int (*underflow)(FILE *);
    ssize_t (*getdelim)(char **, size_t *, int, FILE *);
    ssize_t (*getline)(char **, size_t *, FILE *);
    int (*fseek)(FILE *, long, int);
    int (*fseeko)(FILE *, off_t, int);
    int (*fseeko64)(FILE *, off_t, int);
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execv)(const char *, char *const[]);
    int (*execvp)(const char *, char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    void *(*mmap64)(void *, size_t, int, int, int, off_t);
    int (*madvise)(void *, size_t, int);
    long (*syscall)(long, ...);
    int (*prctl)(int, ...);
};

extern struct specx_real specx_real;

/* Resolves every entry (idempotent; called by the constructor and by any wrapper that runs
 * before it). */
void specx_resolve_real(void);

/* The real function NAME, resolving lazily when a wrapper runs before the constructor. */
#define REAL(name) (specx_real.name ? specx_real.name : (specx_resolve_real(), specx_real.name))

#endif
