/* See elf_kind.h. */
#include "elf_kind.h"

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

/* True if the 64-bit ELF image open on FD has no PT_INTERP program header. */
static bool has_no_interpreter(int fd)
{
    Elf64_Ehdr eh;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr))
        return false;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
            return false;
        if (ph.p_type == PT_INTERP)
            return false;
    }
    return true;
}

bool elf_is_static(const char *command)
{
    char path[PATH_MAX];
    if (!find_in_path(command, path, sizeof path))
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool is_static = has_no_interpreter(fd);
    close(fd);
    return is_static;
}
