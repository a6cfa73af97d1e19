/* The supervisor's copy's descriptors, as the supervisor keeps them. The copy holds none of
 * the program's descriptions (outside_copy.c takes them away at the clone): its inherited
 * descriptors exist only here, each with an O_PATH reference of the supervisor's to the file
 * and the position its description had at the clone, and every call that uses one is served
 * here (serve.h), at the copy's own position. The filter lets the copy make no descriptor but
 * through an open served here, so the table knows every one it holds. */
#ifndef SPECX_COPY_FDS_H
#define SPECX_COPY_FDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Descriptors above this are not served (their reads fail with EBADF in the copy). */
#define COPY_FDS_MAX 1024

enum copy_fd_kind {
    COPY_FD_NONE,      /* not open */
    COPY_FD_INHERITED, /* the program's, not looked at yet (copy_fds_resolve) */
    COPY_FD_FILE,      /* a regular file: read with pread at pos */
    COPY_FD_DIR,       /* a directory: read at its description's position */
    COPY_FD_OTHER,     /* a pipe, socket, terminal...: the program's data; reads see EOF */
    COPY_FD_UNREADABLE /* opened write-only or O_PATH: reads fail with EBADF */
};

struct copy_fd {
    enum copy_fd_kind kind;
    int own;           /* the supervisor's own description of the same file, or -1 */
    int path;          /* COPY_FD_INHERITED: an O_PATH descriptor of its file, or -1 */
    bool in_copy;      /* the copy's table holds it (opened for it); else only this one does */
    uint64_t pos;      /* the copy's offset (files; a directory's is its description's) */
    uint64_t read_end; /* where the copy's last read of it ended (sequential detection) */
};

struct copy_fds {
    pid_t pid;
    struct copy_fd fd[COPY_FDS_MAX];
};

/* Records the descriptors PID (the copy, not yet running, still sharing the program's table)
 * inherited, with the positions and access modes of their descriptions now and an O_PATH
 * reference to each file (which neither opens it nor closes the program's description).
 * Returns 0 or -errno. */
int copy_fds_capture(struct copy_fds *t, pid_t pid);

/* The entry of descriptor FD, looked at on first use; NULL if FD is not open or too high. */
struct copy_fd *copy_fds_resolve(struct copy_fds *t, int fd);

/* FD now names OWN (a file or directory the supervisor opened for the copy). */
void copy_fds_opened(struct copy_fds *t, int fd, int own, enum copy_fd_kind kind);

/* FD was closed. */
void copy_fds_closed(struct copy_fds *t, int fd);

/* Forgets the table (the copy ended), closing the supervisor's descriptors. */
void copy_fds_clear(struct copy_fds *t);

#endif
