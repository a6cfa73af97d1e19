/* What the program reads, noted for specx run's history (common/history_trace.h,
 * docs/design/history.md): the read path calls specx_history_note at each read it checks;
 * each file's identity and path are noted once per process, each range once (a read that
 * continues the last range of the same file extends it). Without a trace (history off, or
 * the trace could not be mapped) every call returns at once. */
#ifndef SPECX_CORE_HISTORY_H
#define SPECX_CORE_HISTORY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* Maps the trace named in the environment, if any (process start). */
void specx_history_init(void);

/* The program read [OFF, OFF+LEN) of FD (ST: its status, or NULL where the read path has none);
 * MISS: it waited for the disk; BY_COPY: a copy's prefetch brought it in. Noted where either
 * holds (what a later run would wait for), or while a replay is under way. */
void specx_history_note(int fd, const struct stat *st, uint64_t off, uint64_t len, bool miss,
                        bool by_copy);

/* The program mapped [OFF, OFF+LEN) of FD; COLD: not all of it was in memory. Noted where it
 * was cold, or while a replay is under way. */
void specx_history_note_mapping(int fd, uint64_t off, uint64_t len, bool cold);

/* Whether reads are noted in this process at all (a trace is mapped). */
bool specx_history_on(void);

/* Whether a replay is under way: reads in memory matter too, so they must stay checked. */
bool specx_history_watching(void);

#endif
