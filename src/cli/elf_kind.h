/* Whether a command can carry the preload runtime at all: the dynamic loader applies
 * LD_PRELOAD only to programs it loads, so a statically linked executable (most Go programs,
 * musl or -static C) runs without libspecx.so, and `specx run` must say so rather than report
 * zeros as if nothing had stalled. */
#ifndef SPECX_ELF_KIND_H
#define SPECX_ELF_KIND_H

#include <stdbool.h>

/* True if COMMAND (searched in PATH as execvp does when it has no '/') is an ELF executable
 * without a program interpreter: nothing will load the runtime into it. False when it is
 * dynamically linked, a script, or cannot be read. */
bool elf_is_static(const char *command);

#endif
