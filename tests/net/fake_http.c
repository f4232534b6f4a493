/* SPDX-License-Identifier: Apache-2.0 */
#include "fake_http.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "acp/error.h"

static int f_start(acp_http_req *r, int status, const acp_http_field *fl, size_t n, size_t len)
{
    fake_req *f = (fake_req *)r;
    if (f->aborted) return ACP_EIO;
    if (f->status) abort(); /* started twice: a profile bug */
    f->status = status;
    f->body_len = len;
    f->res_fields = calloc(n ? n : 1, sizeof *fl);
    for (size_t i = 0; i < n; i++)
        f->res_fields[i] = (acp_http_field){strdup(fl[i].name), strdup(fl[i].value)};
    f->nres_fields = n;
    return 0;
}

static int f_write(acp_http_req *r, const void *p, size_t n)
{
    fake_req *f = (fake_req *)r;
    if (f->aborted) return ACP_EIO;
    if (!f->status || f->ended) abort();
    acp_buf_append(&f->body, p, n);
    acp_buf_cstr(&f->body); /* tests read it as a string */
    f->writes++;
    f->queued += n;
    return 0;
}

static void f_end(acp_http_req *r)
{
    fake_req *f = (fake_req *)r;
    if (!f->status || f->ended) abort();
    f->ended = true;
    acp_buf_cstr(&f->body);
}

static size_t f_queued(const acp_http_req *r)
{
    return ((const fake_req *)r)->queued;
}

static const acp_http_req_ops ops = {f_start, f_write, f_end, f_queued};

fake_req *fake_new(const char *method, const char *body, ...)
{
    fake_req *f = calloc(1, sizeof *f);
    f->base.ops = &ops;
    f->base.method = method;
    f->base.path = "/acp";
    /* An exact copy with no NUL after it, as a wire may hand it over: reading past the end
     * is an ASan error. */
    f->base.body_len = body ? strlen(body) : 0;
    if (f->base.body_len) f->base.body = memcpy(malloc(f->base.body_len), body, f->base.body_len);
    f->base.headers = f->hdr;
    va_list ap;
    va_start(ap, body);
    const char *name;
    while ((name = va_arg(ap, const char *)) && f->base.nheaders < 8) {
        const char *value = va_arg(ap, const char *);
        f->hdr[f->base.nheaders++] = (acp_http_field){name, value};
    }
    va_end(ap);
    return f;
}

const char *fake_res_header(const fake_req *f, const char *name)
{
    for (size_t i = 0; i < f->nres_fields; i++)
        if (strcasecmp(f->res_fields[i].name, name) == 0) return f->res_fields[i].value;
    return NULL;
}

void fake_read(fake_req *f)
{
    f->queued = 0;
    if (f->base.cbs.on_drain && !f->ended) f->base.cbs.on_drain(&f->base, f->base.user);
}

void fake_abort(fake_req *f)
{
    if (f->aborted) return;
    f->aborted = true;
    if (!f->ended && f->base.cbs.on_abort) f->base.cbs.on_abort(&f->base, f->base.user);
}

void fake_free(fake_req *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->nres_fields; i++) {
        free((char *)f->res_fields[i].name);
        free((char *)f->res_fields[i].value);
    }
    free(f->res_fields);
    free((char *)f->base.body);
    acp_buf_free(&f->body);
    free(f);
}
