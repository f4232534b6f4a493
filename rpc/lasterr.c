/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "acp/error.h"
#include "rpc/lasterr.h"

/* One per thread, in static storage: setting an error never allocates, so an allocation failure
 * can be reported like any other. */
static _Thread_local struct {
    acp_error e;
    char text[1024];
} last = {{ACP_OK, ""}, ""};

const acp_error *acp_error_last(void)
{
    if (!last.e.message) last.e.message = "";
    return &last.e;
}

void acp_error_clear(void)
{
    last.e.status = ACP_OK;
    last.text[0] = '\0';
    last.e.message = last.text;
}

int acp_error_set(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* The sentence may be built from the previous one (a caller wrapping a cause): format into
     * a copy first. */
    char buf[sizeof last.text];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(last.text, buf, sizeof buf);
    last.e.status = status;
    last.e.message = last.text;
    return status;
}

int acp_error_code(int status)
{
    return acp_error_set(status, "%s", acp_strerror(status));
}

/* struct_size is every such struct's first member. */
static size_t struct_size(const void *s)
{
    size_t n;
    memcpy(&n, s, sizeof n);
    return n;
}

static int check_size(size_t have, size_t min_size, const char *what)
{
    if (have == 0 || have < min_size)
        return acp_error_set(ACP_EINVAL,
                             "%s: struct_size is %zu; initialise the struct with its "
                             "ACP_..._INIT macro",
                             what, have);
    return 0;
}

int acp_struct_read(void *dst, size_t size, size_t min_size, const void *src, const char *what)
{
    memset(dst, 0, size);
    if (!src) return 0;
    size_t have = struct_size(src);
    int rc = check_size(have, min_size, what);
    if (rc) return rc;
    if (have > size) {
        const unsigned char *extra = (const unsigned char *)src + size;
        for (size_t i = 0; i < have - size; i++)
            if (extra[i])
                return acp_error_set(ACP_ENOTSUP,
                                     "%s: the program sets members this libacp does not know "
                                     "(struct_size %zu, known %zu); it needs a newer libacp",
                                     what, have, size);
        have = size;
    }
    memcpy(dst, src, have);
    /* The copy describes itself: the library may hand it to its own entry points. */
    memcpy(dst, &size, sizeof size);
    return 0;
}

int acp_struct_write(void *dst, size_t size, size_t min_size, const void *src, const char *what)
{
    size_t have = struct_size(dst);
    int rc = check_size(have, min_size, what);
    if (rc) return rc;
    size_t n = have < size ? have : size;
    memcpy((char *)dst + sizeof have, (const char *)src + sizeof have, n - sizeof have);
    return 0;
}
