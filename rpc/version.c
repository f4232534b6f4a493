/* SPDX-License-Identifier: Apache-2.0 */
#include "acp/version.h"

const char *acp_version(int *major, int *minor, int *patch)
{
    if (major) *major = ACP_VERSION_MAJOR;
    if (minor) *minor = ACP_VERSION_MINOR;
    if (patch) *patch = ACP_VERSION_PATCH;
    return ACP_VERSION_STRING;
}
