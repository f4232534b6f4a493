/* SPDX-License-Identifier: Apache-2.0 */
#include "acp/error.h"

const char *acp_strerror(int status)
{
    switch (status) {
    case ACP_OK:
        return "ok";
    case ACP_ENOMEM:
        return "out of memory";
    case ACP_EINVAL:
        return "invalid argument";
    case ACP_ENOTSUP:
        return "not supported by the peer";
    case ACP_ECLOSED:
        return "connection closed";
    case ACP_ENOTFOUND:
        return "not found";
    case ACP_EIO:
        return "I/O error";
    case ACP_ETOOBIG:
        return "too large";
    case ACP_ESTORE:
        return "session store unavailable";
    case ACP_ECANCELLED:
        return "cancelled";
    case ACP_ETIMEDOUT:
        return "timed out";
    case ACP_EPROTO:
        return "protocol error";
    case ACP_EACCES:
        return "access denied";
    case ACP_EBUSY:
        return "busy";
    case ACP_ESTALE:
        return "lease lost to another holder";
    }
    return "unknown error";
}
