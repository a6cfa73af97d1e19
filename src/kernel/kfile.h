/* Small kernel files (/proc, /sys, cgroupfs) read and written whole, with raw system calls.
 *
 * This layer is linked into libspecx.so as well as into the commands. Inside the preload
 * runtime open(), read() and write() are the runtime's own wrappers (in the speculative process
 * they emulate reads and refuse writes), so the kernel layer never calls them: it goes to the
 * kernel directly, which is also what a reader of pseudo-files wants (one read, no buffering). */
#ifndef SPECX_KERNEL_KFILE_H
#define SPECX_KERNEL_KFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* open(2) and close(2) of the kernel layer (raw, close-on-exec; close keeps errno), for a file
 * that must stay open, e.g. one a cgroup event names. */
int specx_kfile_open(const char *path, int flags);
void specx_kfile_close(int fd);

/* Reads file PATH into BUF (NUL-terminated, at most SIZE - 1 bytes). Returns the length, or -1
 * with errno set. Pseudo-files are generated at open: one read of a large enough buffer sees
 * one consistent snapshot. */
long specx_kfile_read(const char *path, char *buf, size_t size);

/* Writes TEXT to file PATH in one write(2), as cgroupfs and procfs expect. 0, or -1 with errno
 * (the kernel's own refusal, e.g. EBUSY or EINVAL from a cgroup file). */
int specx_kfile_write(const char *path, const char *text);

/* The unsigned number at the start of TEXT. "max" (cgroup v2's "no limit") is UINT64_MAX.
 * False if TEXT starts with neither. */
bool specx_kfile_parse_u64(const char *text, uint64_t *out);

/* The value of KEY in TEXT made of "key value" lines (memory.stat, memory.events, cpu.stat,
 * /proc/PID/status without the colon...). False if no line has exactly that key. */
bool specx_kfile_key_u64(const char *text, const char *key, uint64_t *out);

/* The same for a hexadecimal value (/proc/PID/status's signal masks: "ShdPnd:\t0...0100"). */
bool specx_kfile_key_hex(const char *text, const char *key, uint64_t *out);

/* Reads PATH and parses it as one number (specx_kfile_parse_u64). False on any failure. */
bool specx_kfile_read_u64(const char *path, uint64_t *out);

#endif
