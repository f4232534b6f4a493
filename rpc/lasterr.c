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
    unsigned sets; /* how many times it was set: acp_error_mark() */
} last = {{ACP_OK, ""}, "", 0};

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
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    buf[len] = '\0';
    memcpy(last.text, buf, len + 1); /* the sentence, not the whole buffer */
    last.e.status = status;
    last.e.message = last.text;
    last.sets++;
    return status;
}

unsigned acp_error_mark(void)
{
    return last.sets;
}

void acp_error_save(acp_error_saved *s)
{
    s->status = last.e.status;
    s->sets = last.sets;
    snprintf(s->text, sizeof s->text, "%s", acp_error_last()->message);
}

void acp_error_restore(const acp_error_saved *s)
{
    if (last.sets == s->sets) return; /* nothing was set since */
    memcpy(last.text, s->text, sizeof last.text);
    last.e.status = s->status;
    last.e.message = last.text;
    last.sets = s->sets;
}

int acp_error_since(unsigned mark, int status)
{
    if (status < 0 && last.sets == mark) acp_error_code(status);
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
