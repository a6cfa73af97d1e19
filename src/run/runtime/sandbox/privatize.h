/* The first of the paper's three restrictions on a speculative process (Fraser & Chang 2003,
 * §4.1.1): "file pointers are instead copied, and write access to mapped files and shared memory
 * segments is changed to copy-on-write access". A process made by clone/fork shares open file
 * descriptions (offsets) and MAP_SHARED memory with its parent; these functions give the
 * speculative copy its own.
 *
 * Everything here runs in the freshly cloned child, possibly of a multithreaded program whose
 * other threads held locks at clone time: only system calls, no malloc, no stdio. */
#ifndef SPECX_PRIVATIZE_H
#define SPECX_PRIVATIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "kernel/maps.h"

/* A memory region of the runtime that must stay shared with the normal process (the control
 * region, the statistics slot): everything else that is shared becomes private. */
struct specx_region {
    void *addr;
    size_t len;
};

/* True for the file types a speculative process may open and read without anyone noticing:
 * regular files, directories and the memory character devices (/dev/null, zero, full, random,
 * urandom). Opening a FIFO wakes its writer, opening other devices can rewind tapes, start
 * watchdogs or claim the device: those are side effects, so they are refused. */
bool specx_safe_file_type(const struct stat *st);

/* True if the file open at FD (any access mode, O_PATH too), whose fstat is ST, is of a safe
 * type and reading it consumes nothing: not /proc/kmsg, not a file of debugfs or tracefs
 * (trace_pipe). */
bool specx_safe_to_read(int fd, const struct stat *st);

/* Why a speculative copy's open of the file PROBE names (an O_PATH descriptor; its fstat is
 * put in ST) with open FLAGS is refused, as -errno; 0 if it may be opened, read-only. The open
 * trap asks it in the runtime's copy, the supervisor for its copy (src/run/supervisor). */
int specx_open_refusal(int probe, long flags, struct stat *st);

/* Opens PATH with FLAGS plus O_NOATIME where the kernel allows it (owner or CAP_FOWNER): what
 * a speculative copy reads or maps, but the program itself never does, keeps its access time. */
int specx_open_noatime(const char *path, int flags);

/* Gives the child, cloned with CLONE_FILES (it shares the program's descriptor table), a
 * table of its own that holds none of the program's descriptions: the child's first call.
 * Holding one would keep a pipe's write end, a socket or a flock alive for the child's life,
 * delaying a reader's end of file, a peer's FIN or a lock's release; closing one, at a dup3
 * over it or at the child's exit, is a FUSE FLUSH or an NFS write-back. Descriptors from 64
 * on are not copied at all; the kernel copies every new table's first 64 entries, so those
 * the program has there are closed here, once (a FLUSH each on FUSE). Returns 0 or -errno
 * (before Linux 5.9, which lacks close_range). */
int specx_detach_fds(void);

/* Then fills the child's empty table in from the program's, /proc/PROGRAM/task/THREAD/fd:
 * files and directories as new read-only descriptions at the program's offset, everything
 * else (pipes, sockets, terminals, event objects) as /dev/null, so the child can neither move
 * the parent's offsets nor consume data meant for it. Numbers and close-on-exec flags stay
 * the same; a descriptor the program closed since the clone stays closed. Call it before the
 * child opens anything else. Returns 0 or -errno (a program whose descriptors cannot be read,
 * being not dumpable, gets no copy). */
int specx_privatize_fds(pid_t program, pid_t thread);

/* Opens the regular file behind mapping M read-only: through /proc/self/map_files (works for
 * deleted files, memfd, shared anonymous and SysV memory, but needs CAP_CHECKPOINT_RESTORE),
 * else by its path if that still names the same inode. Returns the descriptor or -1. Used
 * here to privatize shared file mappings, and by the speculative process's page-fault
 * speculation (fault_speculation.c) to prefetch a mapping's file and map it again. */
int specx_open_mapped_file(const struct specx_mapping *m);

/* Replaces every MAP_SHARED mapping except the KEEP regions with a private copy-on-write one at
 * the same address with the same protection and the same content. *COPIED says whether some
 * of it had to be copied (memory that cannot be mapped again privately, such as shared
 * anonymous memory without CAP_CHECKPOINT_RESTORE): that copy is a snapshot taken now, not at
 * the clone, so whatever the program wrote there meanwhile is in it. Returns 0 or -errno. */
int specx_privatize_mappings(const struct specx_region *keep, size_t nkeep, bool *copied);

#endif
