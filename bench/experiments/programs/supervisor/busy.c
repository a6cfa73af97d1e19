// busy: the clone target. usage: busy MIB SHMFD [hugepage]
// Allocates and touches MIB MiB of anonymous memory (MADV_HUGEPAGE if 3rd arg given; THP mode on
// this machine is "madvise", so by default it gets 4 KiB pages), sets SIGCHLD to SIG_IGN (so the
// clones the tracer makes and kills are auto-reaped), prints the address of its "syscall; ret"
// gadget and the memory size on stdout, then spins forever incrementing a counter in the shared
// page SHMFD (a memfd created by the tracer) so the tracer can see when it runs.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
__asm__(".text\n.globl sc_gadget\nsc_gadget:\n\tsyscall\n\tret\n");
extern char sc_gadget[];
int main(int argc, char **argv) {
    size_t sz = (size_t)atol(argv[1]) << 20;
    volatile unsigned long *ctr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, atoi(argv[2]), 0);
    if (ctr == MAP_FAILED) { perror("mmap shm"); return 1; }
    char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); return 1; }
    if (argc > 3) madvise(m, sz, MADV_HUGEPAGE);
    memset(m, 1, sz);
    signal(SIGCHLD, SIG_IGN);
    printf("%p %zu\n", (void *)sc_gadget, sz); fflush(stdout);
    for (unsigned long i = 0;; i++) *ctr = i;
}
