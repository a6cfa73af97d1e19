#include "sandbox.h"

#include <errno.h>

int specx_sandbox_enter(const struct specx_region *keep, size_t nkeep)
{
    return -ENOSYS; /* placeholder until the sandbox lands: never speculate unsandboxed */
}
