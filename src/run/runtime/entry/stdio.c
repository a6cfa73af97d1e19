/* The stdio read path. glibc's stdio refills its buffers through internal calls that symbol
 * interposition never sees (and GNU ld reads object files through stdio), so the entry
 * points that may refill are interposed instead: when the FILE's buffer cannot satisfy the
 * call, the refill's range (at the descriptor's offset, the buffer's size or the request's)
 * goes through the same read path as read(2).
 *
 * In the speculative process a refill must not block either (§4.1.2). Rather than trapping
 * every system call there (Syscall User Dispatch), the refill is done by the runtime: fread
 * is emulated into the caller's buffer, and the other entry points find the FILE's buffer
 * filled with what the copy's read (copy/copy_read.c) made of the range. That touches glibc's
 * FILE fields, but only in the sandboxed copy, whose correctness nobody depends on. */

/* fseeko and fseeko64 are both defined here; the build's large-file default would rename the
 * first into the second. On 64-bit Linux both take the same 64-bit off_t. */
#undef _FILE_OFFSET_BITS

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "run/runtime/entry/readpath.h"
#include "run/runtime/entry/real.h"
#include "run/runtime/core/runtime.h"

/* Optimizing builds may define these as macros; here they are the functions. */
#undef fread_unlocked
#undef getc
#undef fgetc

/* glibc-internal FILE flags (libio/libio.h): a stream that cannot read now. */
#define IO_NO_READS 0x0004
#define IO_IN_BACKUP 0x0100
#define IO_CURRENTLY_PUTTING 0x0800
#define IO_POS_BAD ((off_t)-1)
/* Buffer size glibc gives a regular file's stream that has not read yet (st_blksize). */
#define DEFAULT_BUFFER 4096u

static size_t buffered(const FILE *fp)
{
    return fp->_IO_read_ptr < fp->_IO_read_end ? (size_t)(fp->_IO_read_end - fp->_IO_read_ptr) : 0;
}

/* Decides whether a call wanting `want` bytes makes fp read from its descriptor, and if so
 * runs the read path's check on the range the refill will ask for. */
static enum specx_read_action stdio_begin(struct specx_read *r, FILE *fp, size_t want)
{
    if (want == 0 || fp->_mode > 0 || (fp->_flags & (IO_NO_READS | IO_IN_BACKUP | IO_CURRENTLY_PUTTING)))
        return SPECX_READ_PASS;
    size_t avail = buffered(fp);
    if (avail >= want)
        return SPECX_READ_PASS;
    size_t bufsize = fp->_IO_buf_base ? (size_t)(fp->_IO_buf_end - fp->_IO_buf_base) : DEFAULT_BUFFER;
    size_t need = want - avail;
    struct iovec range = { NULL, need > bufsize ? need : bufsize };
    return specx_read_begin(r, fp->_fileno, &range, 1, -1);
}

/* Speculative process: fill fp's empty buffer as a prefetching read would. */
static void prefill(const struct specx_read *r, FILE *fp)
{
    /* A stream that has not read yet has no buffer: setvbuf(NULL, _IOFBF) makes glibc
     * allocate its default one now, or the first read of every file would block here. */
    if (!fp->_IO_buf_base)
        setvbuf(fp, NULL, _IOFBF, 0);
    if (!fp->_IO_buf_base || buffered(fp))
        return;
    struct iovec iov = { fp->_IO_buf_base, (size_t)(fp->_IO_buf_end - fp->_IO_buf_base) };
    ssize_t n = specx_read_emulate(r, &iov, 1, -1);
    if (n <= 0)
        return;
    fp->_IO_read_base = fp->_IO_read_ptr = fp->_IO_buf_base;
    fp->_IO_read_end = fp->_IO_buf_base + n;
    fp->_offset = IO_POS_BAD; /* the stream's cached position is no longer known */
}

/* Speculative process: fread as buffered bytes plus a prefetching read of the rest. */
static size_t emulate_fread(const struct specx_read *r, void *ptr, size_t size, size_t n, FILE *fp)
{
    size_t want = size * n, avail = buffered(fp);
    memcpy(ptr, fp->_IO_read_ptr, avail);
    fp->_IO_read_ptr += avail;
    struct iovec iov = { (char *)ptr + avail, want - avail };
    ssize_t got = specx_read_emulate(r, &iov, 1, -1);
    fp->_offset = IO_POS_BAD;
    size_t total = avail + (got > 0 ? (size_t)got : 0);
    if (total < want)
        fp->_flags |= _IO_EOF_SEEN;
    return total / size;
}

static size_t fread_path(size_t (*real)(void *, size_t, size_t, FILE *), void *ptr, size_t size,
                         size_t n, FILE *fp)
{
    if (!fp || size == 0 || n == 0 || n > SIZE_MAX / size)
        return real(ptr, size, n, fp);
    SPECX_READ_PATH(r, stdio_begin(&r, fp, size * n), emulate_fread(&r, ptr, size, n, fp),
                    real(ptr, size, n, fp));
}

/* What a call that reads up to a delimiter needs: nothing more if the buffer holds one
 * (within limit bytes), else more than the buffer has. */
static size_t want_until(const FILE *fp, int delim, size_t limit)
{
    size_t avail = buffered(fp);
    size_t scan = avail < limit ? avail : limit;
    if (scan == limit || (scan && memchr(fp->_IO_read_ptr, delim, scan)))
        return 0;
    return avail + 1;
}

/* Entry points that read through the buffer (fgets, getc, getline...); WANT is what they
 * need from it (want_until), CALL the real call. The copy finds the buffer filled. */
#define SPECX_STDIO_WRAPPER(fp, WANT, CALL)                                                    \
    SPECX_READ_PATH(specx_r_, (fp) ? stdio_begin(&specx_r_, (fp), (WANT)) : SPECX_READ_PASS,  \
                    (prefill(&specx_r_, (fp)), CALL), CALL)

EXPORT size_t fread(void *ptr, size_t size, size_t n, FILE *fp)
{
    return fread_path(REAL(fread), ptr, size, n, fp);
}

EXPORT size_t fread_unlocked(void *ptr, size_t size, size_t n, FILE *fp)
{
    return fread_path(REAL(fread_unlocked), ptr, size, n, fp);
}

/* fgets stops after n - 1 bytes or a newline. */
EXPORT char *fgets(char *s, int n, FILE *fp)
{
    SPECX_STDIO_WRAPPER(fp, want_until(fp, '\n', n > 1 ? (size_t)n - 1 : 0),
                        REAL(fgets)(s, n, fp));
}

EXPORT char *fgets_unlocked(char *s, int n, FILE *fp)
{
    SPECX_STDIO_WRAPPER(fp, want_until(fp, '\n', n > 1 ? (size_t)n - 1 : 0),
                        REAL(fgets_unlocked)(s, n, fp));
}

/* Per-character entry points: the buffer almost always has the character, and that case must
 * cost nothing (a getc loop over cached data runs at ~4 ns a byte; one more call layer made it
 * 30 % slower). While a stream needs no lock (glibc sets IO_FLAGS2_NEED_LOCK on every stream
 * once a second thread exists), glibc's getc is exactly this: take the next buffered byte. */
#define IO_FLAGS2_NEED_LOCK 128
#define SPECX_GETC_WRAPPER(fp, CALL)                                                           \
    do {                                                                                       \
        if (__builtin_expect((fp) && (fp)->_IO_read_ptr < (fp)->_IO_read_end, 1)) {            \
            if (!((fp)->_flags2 & IO_FLAGS2_NEED_LOCK))                                        \
                return *(unsigned char *)(fp)->_IO_read_ptr++;                                 \
            return CALL;                                                                       \
        }                                                                                      \
        SPECX_STDIO_WRAPPER(fp, 1, CALL);                                                      \
    } while (0)

EXPORT int fgetc(FILE *fp) { SPECX_GETC_WRAPPER(fp, REAL(fgetc)(fp)); }
EXPORT int getc(FILE *fp) { SPECX_GETC_WRAPPER(fp, REAL(getc)(fp)); }
EXPORT int _IO_getc(FILE *fp) { SPECX_GETC_WRAPPER(fp, REAL(io_getc)(fp)); }
/* What an inlined getc_unlocked() calls when the buffer is empty. */
EXPORT int __uflow(FILE *fp) { SPECX_STDIO_WRAPPER(fp, 1, REAL(uflow)(fp)); }
EXPORT int __underflow(FILE *fp) { SPECX_STDIO_WRAPPER(fp, 1, REAL(underflow)(fp)); }

EXPORT ssize_t getdelim(char **line, size_t *n, int delim, FILE *fp)
{
    SPECX_STDIO_WRAPPER(fp, want_until(fp, delim, SIZE_MAX), REAL(getdelim)(line, n, delim, fp));
}

EXPORT ssize_t getline(char **line, size_t *n, FILE *fp)
{
    SPECX_STDIO_WRAPPER(fp, want_until(fp, '\n', SIZE_MAX), REAL(getline)(line, n, fp));
}

/* ---- fseek: glibc re-fills the buffer when it seeks to an offset that is not a multiple of
 * the buffer size (it reads the whole block around the target, libio/fileops.c), so seeking
 * is a read too. GNU ld seeks before most of its reads. ---- */

static bool reading_stream(const FILE *fp)
{
    return fp && fp->_mode <= 0 && fp->_IO_buf_base &&
           !(fp->_flags & (IO_NO_READS | IO_IN_BACKUP | IO_CURRENTLY_PUTTING));
}

/* The absolute offset a seek goes to, or -1 if it cannot be told cheaply. */
static off_t seek_target(FILE *fp, off_t off, int whence)
{
    struct stat st;
    switch (whence) {
    case SEEK_SET:
        return off;
    case SEEK_CUR: {
        off_t pos = ftello(fp);
        return pos < 0 ? -1 : pos + off;
    }
    case SEEK_END:
        return fstat(fp->_fileno, &st) == 0 ? st.st_size + off : -1;
    default:
        return -1;
    }
}

/* Speculative process: the seek, with the buffer emptied instead of re-filled. */
static int emulate_seek(FILE *fp, off_t target)
{
    if (lseek(fp->_fileno, target, SEEK_SET) < 0)
        return -1;
    fp->_IO_read_base = fp->_IO_read_ptr = fp->_IO_read_end = fp->_IO_buf_base;
    fp->_flags &= ~_IO_EOF_SEEN;
    fp->_offset = IO_POS_BAD;
    return 0;
}

/* Speculative process: the seek whose block read created it. The program issued that read;
 * what follows it is the copy's to prefetch. */
static int emulate_stalled_seek(const struct specx_read *r, FILE *fp, struct iovec *range,
                                off_t start, off_t target)
{
    specx_read_emulate(r, range, 1, start);
    return emulate_seek(fp, target);
}

static int fseek_path(int (*real)(FILE *, off_t, int), FILE *fp, off_t off, int whence)
{
    if (specx.role == SPECX_ROLE_OFF || !reading_stream(fp))
        return real(fp, off, whence);
    int saved = errno;
    off_t target = seek_target(fp, off, whence);
    errno = saved;
    if (target < 0)
        return real(fp, off, whence);
    if (specx.role == SPECX_ROLE_SPEC)
        return emulate_seek(fp, target);
    size_t block = (size_t)(fp->_IO_buf_end - fp->_IO_buf_base);
    if (block == 0 || (uint64_t)target % block == 0)
        return real(fp, off, whence); /* block-aligned: glibc reads nothing */
    struct iovec range = { NULL, block };
    off_t start = target - (off_t)((uint64_t)target % block);
    SPECX_READ_PATH(r, specx_read_begin(&r, fp->_fileno, &range, 1, start),
                    emulate_stalled_seek(&r, fp, &range, start, target), real(fp, off, whence));
}

EXPORT int fseek(FILE *fp, long off, int whence)
{
    return fseek_path((int (*)(FILE *, off_t, int))REAL(fseek), fp, off, whence);
}

EXPORT int fseeko(FILE *fp, off_t off, int whence)
{
    return fseek_path(REAL(fseeko), fp, off, whence);
}

EXPORT int fseeko64(FILE *fp, off_t off, int whence)
{
    return fseek_path(REAL(fseeko64), fp, off, whence);
}
