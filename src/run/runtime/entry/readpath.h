/* The read path shared by every interposed read function. In the program (normal process) it
 * is the hottest code specx has: on data in memory one cachestat, one lseek when the call
 * uses the file offset, two vDSO clock reads; an fstat more only on a miss or while a
 * speculative process's prefetches are being matched. After a long run of cached reads it
 * only times them until one is slow. In the speculative process every read becomes the
 * copy's emulation (copy/copy_read.h). */
#ifndef SPECX_READPATH_H
#define SPECX_READPATH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

enum specx_read_action {
    SPECX_READ_PASS,    /* not ours to look at: call the real function, nothing else */
    SPECX_READ_ACCOUNT, /* call the real function between specx_read_begin and _end */
    SPECX_READ_EMULATE, /* speculative process: call specx_read_emulate instead */
};

struct specx_read {
    int fd;
    bool miss;        /* data not in memory: an I/O stall */
    bool skip;        /* emulate as a prefetch already issued (the read that created us) */
    unsigned used;    /* speculative prefetches this read consumed while resident */
    bool timed;       /* not checked, only timed (readpath.c: a run of cached reads) */
    uint64_t off, len; /* file range, clamped to EOF */
    uint64_t t0;
};

/* The offset argument of the read path: >= 0 an explicit offset; SPECX_AT_FILE_OFFSET for a
 * call that reads at the file offset; anything below is invalid (the real function reports
 * it). The p-variants' offsets are never "at the file offset": SPECX_EXPLICIT maps their
 * negative offsets to an invalid one. */
#define SPECX_AT_FILE_OFFSET ((off_t)-1)
#define SPECX_EXPLICIT(off) ((off) < 0 ? SPECX_AT_FILE_OFFSET - 1 : (off))

enum specx_read_action specx_read_begin(struct specx_read *r, int fd, const struct iovec *iov,
                                        int iovcnt, off_t off);
void specx_read_end(const struct specx_read *r);

/* The program advised the kernel on fd's access pattern (posix_fadvise): leave its readahead
 * setting alone. Other kinds of advice (WILLNEED, DONTNEED, NOREUSE) change nothing. */
void specx_note_program_advice(int fd, int advice);

/* Speculative process: the read as the copy performs it (copy/copy_read.h): emulated as a
 * prefetch, or the stalled read that created the copy (r->skip). */
ssize_t specx_read_emulate(const struct specx_read *r, const struct iovec *iov, int iovcnt,
                           off_t off);

/* The one sequence of every entry point that may read a file: BEGIN decides (it declares
 * nothing: it fills the struct specx_read named R); the copy runs EMULATE in place of the
 * call; the program runs CALL, between begin and end when the read is accounted; anything
 * else runs CALL untouched. Returns from the enclosing function with the value of the
 * expression that ran. */
#define SPECX_READ_PATH(R, BEGIN, EMULATE, CALL)                                               \
    do {                                                                                       \
        struct specx_read R;                                                                   \
        switch (BEGIN) {                                                                       \
        case SPECX_READ_EMULATE:                                                               \
            return EMULATE;                                                                    \
        case SPECX_READ_ACCOUNT: {                                                             \
            __typeof__(CALL) specx_ret_ = CALL;                                                \
            specx_read_end(&R);                                                                \
            return specx_ret_;                                                                 \
        }                                                                                      \
        case SPECX_READ_PASS:                                                                  \
            break;                                                                             \
        }                                                                                      \
        return CALL;                                                                           \
    } while (0)

/* The body of every read(2)-family wrapper: CALL is the real function's call expression. */
#define SPECX_READ_WRAPPER(fd, iov, iovcnt, off, CALL)                                         \
    SPECX_READ_PATH(specx_r_, specx_read_begin(&specx_r_, (fd), (iov), (iovcnt), (off)),      \
                    specx_read_emulate(&specx_r_, (iov), (iovcnt), (off)), CALL)

#endif
