/* See elf_kind.h. */
#include "run/elf_kind.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file execvp would run for COMMAND, in PATH_OUT; false if none is executable. */
static bool find_in_path(const char *command, char *path_out, size_t size)
{
    if (strchr(command, '/'))
        return snprintf(path_out, size, "%s", command) < (int)size;
    const char *dirs = getenv("PATH");
    if (!dirs || !*dirs)
        dirs = "/usr/local/bin:/usr/bin:/bin";
    for (const char *d = dirs; *d;) {
        size_t len = strcspn(d, ":");
        int n = snprintf(path_out, size, "%.*s/%s", (int)len, len ? d : ".", command);
        if (n > 0 && (size_t)n < size && access(path_out, X_OK) == 0)
            return true;
        d += len + (d[len] == ':');
    }
    return false;
}

/* The ELF header of the 64-bit image open on FD; false if it is not one. */
static bool read_header(int fd, Elf64_Ehdr *eh)
{
    return pread(fd, eh, sizeof *eh, 0) == (ssize_t)sizeof *eh &&
           memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
           eh->e_phentsize == sizeof(Elf64_Phdr);
}

static bool has_interpreter(int fd, const Elf64_Ehdr *eh)
{
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh->e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
            return true; /* unreadable: assume the common case */
        if (ph.p_type == PT_INTERP)
            return true;
    }
    return false;
}

/* True if the image has a section named ".go.buildinfo", which the Go linker writes into
 * every program it links (static or not) since Go 1.13. */
static bool has_go_buildinfo(int fd, const Elf64_Ehdr *eh)
{
    static const char name[] = ".go.buildinfo";
    Elf64_Shdr names;
    if (eh->e_shstrndx == SHN_UNDEF || eh->e_shentsize != sizeof names ||
        pread(fd, &names, sizeof names, (off_t)(eh->e_shoff + eh->e_shstrndx * sizeof names)) !=
            (ssize_t)sizeof names)
        return false;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        Elf64_Shdr sh;
        char found[sizeof name];
        if (pread(fd, &sh, sizeof sh, (off_t)(eh->e_shoff + i * sizeof sh)) != (ssize_t)sizeof sh ||
            sh.sh_name >= names.sh_size)
            continue;
        if (pread(fd, found, sizeof found, (off_t)(names.sh_offset + sh.sh_name)) ==
                (ssize_t)sizeof found && memcmp(found, name, sizeof name) == 0)
            return true;
    }
    return false;
}

enum elf_kind elf_kind_of(const char *command)
{
    char path[PATH_MAX];
    Elf64_Ehdr eh;
    if (!find_in_path(command, path, sizeof path))
        return ELF_OTHER;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ELF_OTHER;
    enum elf_kind kind = ELF_OTHER;
    if (read_header(fd, &eh))
        kind = has_go_buildinfo(fd, &eh) ? ELF_GO : has_interpreter(fd, &eh) ? ELF_OTHER : ELF_STATIC;
    close(fd);
    return kind;
}
