/* The real functions behind the entry points: see real.h. */
#include "run/runtime/entry/real.h"

#include <dlfcn.h>

struct specx_real specx_real;

#define RESOLVE(field, symbol) \
    specx_real.field = (__typeof__(specx_real.field))dlsym(RTLD_NEXT, symbol)

void specx_resolve_real(void)
{
    RESOLVE(read, "read");
    RESOLVE(pread, "pread");
    RESOLVE(pread64, "pread64");
    RESOLVE(readv, "readv");
    RESOLVE(preadv, "preadv");
    RESOLVE(preadv64, "preadv64");
    RESOLVE(preadv2, "preadv2");
    RESOLVE(preadv64v2, "preadv64v2");
    RESOLVE(read_chk, "__read_chk");
    RESOLVE(pread_chk, "__pread_chk");
    RESOLVE(pread64_chk, "__pread64_chk");
    RESOLVE(write, "write");
    RESOLVE(posix_fadvise, "posix_fadvise");
    RESOLVE(posix_fadvise64, "posix_fadvise64");
    RESOLVE(fread, "fread");
    RESOLVE(fread_unlocked, "fread_unlocked");
    RESOLVE(fgets, "fgets");
    RESOLVE(fgets_unlocked, "fgets_unlocked");
    RESOLVE(fgetc, "fgetc");
    RESOLVE(getc, "getc");
    RESOLVE(io_getc, "_IO_getc");
    RESOLVE(uflow, "__uflow");
    RESOLVE(underflow, "__underflow");
    RESOLVE(getdelim, "getdelim");
    RESOLVE(getline, "getline");
    RESOLVE(fseek, "fseek");
    RESOLVE(fseeko, "fseeko");
    RESOLVE(fseeko64, "fseeko64");
    RESOLVE(execve, "execve");
    RESOLVE(execv, "execv");
    RESOLVE(execvp, "execvp");
    RESOLVE(execvpe, "execvpe");
    RESOLVE(fexecve, "fexecve");
    RESOLVE(mmap, "mmap");
    RESOLVE(mmap64, "mmap64");
    RESOLVE(madvise, "madvise");
    RESOLVE(syscall, "syscall");
    RESOLVE(prctl, "prctl");
}
