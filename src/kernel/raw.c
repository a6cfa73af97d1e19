/* See raw.h: the one system-call instruction of the runtime and the kernel layer. */
#include "kernel/raw.h"

#include <errno.h>
#include <stdarg.h>

long specx_raw_syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a0 = va_arg(ap, long), a1 = va_arg(ap, long), a2 = va_arg(ap, long);
    long a3 = va_arg(ap, long), a4 = va_arg(ap, long), a5 = va_arg(ap, long);
    va_end(ap);
    long ret;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a3, r8 __asm__("r8") = a4, r9 __asm__("r9") = a5;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a0), "S"(a1), "d"(a2), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr, x0 __asm__("x0") = a0, x1 __asm__("x1") = a1;
    register long x2 __asm__("x2") = a2, x3 __asm__("x3") = a3, x4 __asm__("x4") = a4;
    register long x5 __asm__("x5") = a5;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    ret = x0;
#else
#error "specx_raw_syscall: add this architecture's system-call instruction"
#endif
    if (ret < 0 && ret > -4096) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}
