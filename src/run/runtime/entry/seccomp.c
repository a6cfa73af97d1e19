/* The ways a program seals itself with seccomp through libc: prctl(PR_SET_SECCOMP) and the
 * seccomp system call through syscall(), which glibc does not wrap (libseccomp's seccomp_load
 * takes either). From the moment a filter or strict mode is in place, any system call the
 * runtime makes may be refused by the program's list, which can kill the program for it; and
 * a copy would inherit the list. So the runtime stands aside just before such a call
 * (copy.h, specx_copy_stand_aside), whether or not the call then succeeds. Calls that install
 * nothing are only passed on: libseccomp probes the kernel with a strict-mode request that
 * has flags and a filter request without a program, both refused by the kernel, and the
 * runtime's own filter is compiled by libseccomp in the program. A filter installed by the
 * program's own syscall instruction is not seen here: copy.c looks for one in
 * /proc/thread-self/status before every copy. */
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "run/runtime/copy/copy.h"
#include "run/runtime/core/runtime.h"
#include "run/runtime/entry/real.h"

/* Whether seccomp(OP, FLAGS, ARGS) would install a filter or strict mode (seccomp(2)): other
 * operations only ask, and an install without its program or with flags on strict mode is
 * refused. */
static bool installs_seccomp(unsigned long op, unsigned long flags, const void *args)
{
    if (op == SECCOMP_SET_MODE_STRICT)
        return flags == 0 && args == NULL;
    return op == SECCOMP_SET_MODE_FILTER && args != NULL;
}

/* prctl(PR_SET_SECCOMP, MODE, FILTER): strict mode takes no argument. */
static bool prctl_installs_seccomp(unsigned long mode, const void *filter)
{
    return mode == SECCOMP_MODE_STRICT ||
           (mode == SECCOMP_MODE_FILTER && installs_seccomp(SECCOMP_SET_MODE_FILTER, 0, filter));
}

static void before_seccomp(bool installs)
{
    if (installs && specx.role == SPECX_ROLE_NORMAL)
        specx_copy_stand_aside();
}

EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    if (option == PR_SET_SECCOMP)
        before_seccomp(prctl_installs_seccomp(a2, (const void *)a3));
    return REAL(prctl)(option, a2, a3, a4, a5);
}

/* syscall(2) takes up to six arguments after the number; what the caller did not pass is
 * read as whatever its registers held, as libc's own syscall() does. */
EXPORT long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_seccomp)
        before_seccomp(installs_seccomp((unsigned long)a[0], (unsigned long)a[1],
                                        (const void *)a[2]));
    else if (nr == SYS_prctl && a[0] == PR_SET_SECCOMP)
        before_seccomp(prctl_installs_seccomp((unsigned long)a[1], (const void *)a[2]));
    return REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
