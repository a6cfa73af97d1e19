/* Whether a command can carry the preload runtime at all: the dynamic loader applies
 * LD_PRELOAD only to programs it loads, so a statically linked executable (musl or -static C,
 * most Go programs) runs without libspecx.so; and a Go program, even one linked dynamically,
 * makes its own system calls, so the runtime's read wrappers never see them. `specx run` must
 * say so rather than report zeros as if nothing had stalled. */
#ifndef SPECX_ELF_KIND_H
#define SPECX_ELF_KIND_H

#include <stdbool.h>

enum elf_kind {
    ELF_OTHER,   /* dynamically linked C/C++ (the runtime's case), a script, or unreadable */
    ELF_STATIC,  /* no program interpreter: nothing loads the runtime into it */
    ELF_GO,      /* a Go program, static or not: its system calls bypass the C library */
};

/* What COMMAND (searched in PATH as execvp does when it has no '/') is. */
enum elf_kind elf_kind_of(const char *command);

#endif
