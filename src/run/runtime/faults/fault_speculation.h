/* Speculation on page faults in the speculative process (Fraser & Chang 2003 §4.1.2: "if the
 * disk read resulted from a page fault then the system ... initiates a disk read ... rather
 * than blocking until the disk read completes, the speculative process returns from the
 * fault immediately").
 *
 * A user-space runtime sees no page fault of the program, but the copy can make its own
 * faults visible: every chunk of its large file-backed data mappings is kept PROT_NONE until
 * it touches it, and the SIGSEGV that follows decides what the kernel would have:
 * - the chunk is in the page cache, or its read is in flight (somebody asked for it): the
 *   chunk is opened with its own protection and the copy goes on (or waits for the read, as
 *   a process touching a page under read does);
 * - otherwise nobody asked for it: it is prefetched (posix_fadvise WILLNEED, one call per
 *   128 KiB) and a stand-in of zeros is mapped over the missing pages (the paper's fresh page
 *   frame), and the copy runs on.
 * Only a window of chunks is open at a time; the oldest is closed again (a stand-in is mapped
 * from the file again), so that the copy's next pass over the data is seen too.
 *
 * Progress and trust come from the program's own page table: /proc/PROGRAM/pagemap (bit 63,
 * present) tells which predicted chunks the program has touched. The copy keeps at most the
 * horizon's count of chunks outstanding (horizon.h: count and age; fewer in a small memory
 * cgroup), and starts dry: it only predicts, a few chunks ahead, until the program has
 * touched two of its predictions in a row, then prefetches what it had predicted and goes
 * on prefetching (live). A copy running on zeros where the data decides its path (pointer
 * chasing) thus never reaches the disk.
 *
 * Text (executable) mappings are left alone: the copy simply blocks on them. */
#ifndef SPECX_FAULT_SPECULATION_H
#define SPECX_FAULT_SPECULATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

/* Smaller file mappings are not worth a speculative process (or a region of the copy). */
#define SPECX_FAULT_MIN_MAPPING (1u << 20)

/* A data mapping page-fault speculation covers: large, readable, and neither executable
 * (text simply blocks) nor writable. A program that writes the data it maps (stencil,
 * MGRID-like: where each level reads depends on what the last one wrote) makes its copy
 * compute from stand-in zeros where the program computes from its own writes: the copy
 * predicted the wrong planes and the benchmark ran 1.07-1.44x cold; without covering such
 * mappings, 1.00. */
static inline bool specx_fault_eligible(int prot, uint64_t len)
{
    return (prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) == PROT_READ &&
           len >= SPECX_FAULT_MIN_MAPPING;
}

/* Speculative side, once sandboxed: covers every eligible file mapping of this process
 * (/proc/self/maps) and installs the SIGSEGV handler. PROGRAM is the normal process whose
 * page table tells the copy's progress. */
void specx_fault_speculation_begin(pid_t program);

/* Speculative side: covers a mapping the copy made itself, [addr, addr+len) of fd from off. */
void specx_fault_speculation_add(void *addr, size_t len, int prot, int fd, off_t off);

#endif
