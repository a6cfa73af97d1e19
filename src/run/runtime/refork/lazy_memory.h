/* Fast refork and one-way copy-on-write (Fraser & Chang 2003, §5.1 and §5.2) without a kernel
 * patch. A plain clone copies the page tables of the whole program (its cost grows with the
 * resident set: 1 GiB ≈ 13 ms here) and makes every page the program writes afterwards a
 * copy-on-write fault. With the fast refork, the program's large private anonymous regions are
 * left out of the clone (MADV_DONTFORK, set and cleared around that one clone), and the
 * speculative process pulls each page from the program the first time it touches it
 * (userfaultfd + process_vm_readv + UFFDIO_COPY). The program shares no page of those regions
 * with its copy, so it takes no copy-on-write fault because of speculation, and the copy sees
 * the program's latest values: the paper's one-way semantics, which is safe because only the
 * copy's view changes.
 *
 * Program side: lazy_regions.c. Speculative side: lazy_fill.c. */
#ifndef SPECX_LAZY_MEMORY_H
#define SPECX_LAZY_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Regions smaller than this are cloned as usual: their page tables cost little to copy.
 * (A build may lower it, -DSPECX_LAZY_MIN_REGION=..., to run a test corpus of small programs
 * through the fast refork.) */
#ifndef SPECX_LAZY_MIN_REGION
#define SPECX_LAZY_MIN_REGION (4ul << 20)
#endif
#define SPECX_LAZY_MAX_REGIONS 64u

struct specx_lazy_region {
    unsigned long start, end;
    int prot;
};

/* The regions one clone left out; chosen by the program, inherited by its copy. */
struct specx_lazy_set {
    unsigned n;
    struct specx_lazy_region r[SPECX_LAZY_MAX_REGIONS];
    unsigned long budget; /* bytes of pulled pages the copy may keep (policy/lazy_budget.h) */
};

/* --- program side (lazy_regions.c) --- */

/* The program gave madvise ADVICE (entry/mmap.c). Its own fork-time advice (MADV_DONTFORK,
 * MADV_WIPEONFORK) keeps it on the plain clone: restoring MADV_DOFORK after our clone would
 * undo it, and a WIPEONFORK region must read as zeros in a child, not as the program's data.
 * Calls made through libc are seen; raw system calls are not (the man page says so). */
void specx_lazy_note_advice(int advice);

/* Right before the clone, with every signal blocked (copy.c: a handler of the program that
 * forked meanwhile would give its child no such regions): if the clone should be fast (asked
 * for, not refused by the program's own use of MADV_DONTFORK/WIPEONFORK, and userfaultfd is
 * available), chooses the regions and marks them MADV_DONTFORK; else leaves none out. */
void specx_lazy_exclude(struct specx_lazy_set *set);

/* Right after a clone that left regions out, in the program: MADV_DOFORK again, so that the
 * program's own forks copy those regions as always. */
void specx_lazy_restore(const struct specx_lazy_set *set);

/* --- speculative side (lazy_fill.c) --- */

/* In a copy about to end itself (the hook copy_timer.h runs before its end): frees the
 * regions a fast clone would leave out (lazy_regions.c chooses them) — the copy's own pages
 * there and its shares of the program's — while the copy is still a process the OOM killer
 * can choose (oom_score_adj 1000). Exiting frees them only after the process has let go of
 * its address space, when the OOM killer no longer sees it; at idle priority that can last
 * long enough for the program's charges to fail and the program to be chosen instead.
 * Async-signal-safe. */
void specx_lazy_release_regions(void);

/* A new userfaultfd (close-on-exec, non-blocking). Without privilege (sysctl
 * vm.unprivileged_userfaultfd = 0) only UFFD_USER_MODE_ONLY is allowed, which changes nothing
 * here: with UFFD_FEATURE_SIGBUS a kernel access to a missing page fails either way. Returns
 * the descriptor or -1 (errno). */
int specx_lazy_userfaultfd(void);

/* First thing in the new copy: holds the regions' addresses (nothing else may be mapped
 * there) until specx_lazy_attach, and opens the program's page map. Returns 0 or -errno. */
int specx_lazy_reserve(const struct specx_lazy_set *set, pid_t program);

/* Once sandboxed, before any program code runs: maps the regions again and fills them from
 * the program on first touch. Returns 0 or -errno (the copy must then end). */
int specx_lazy_attach(const struct specx_lazy_set *set);

/* Before the kernel writes into [buf, buf + len) on the copy's behalf: a kernel access to a
 * page not filled yet fails with EFAULT (UFFD_FEATURE_SIGBUS), so the pages are touched from
 * user space first. Does nothing outside a copy made by a fast refork. */
void specx_lazy_prepare_write(void *buf, size_t len);

#endif
