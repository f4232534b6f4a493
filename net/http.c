/* The wire-independent half of net/http.h: accessors and dispatch to the wire's ops. */
#include "net/http.h"

#include <stdlib.h>
#include <string.h>

#include "acp/error.h"

const char *acp_http_req_method(const acp_http_req *r)
{
    return r->method;
}

const char *acp_http_req_path(const acp_http_req *r)
{
    return r->path;
}

const char *acp_http_req_header(const acp_http_req *r, const char *name)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (strcmp(r->headers[i].name, name) == 0) return r->headers[i].value;
    return NULL;
}

const char *acp_http_req_body(const acp_http_req *r, size_t *len)
{
    if (len) *len = r->body_len;
    return r->body;
}

bool acp_http_req_is_h2(const acp_http_req *r)
{
    return r->h2;
}

int acp_http_res_start(acp_http_req *r, int status, const acp_http_field *fields, size_t n,
                       size_t body_len)
{
    return r->ops->start(r, status, fields, n, body_len);
}

int acp_http_res_write(acp_http_req *r, const void *p, size_t n)
{
    return r->ops->write(r, p, n);
}

void acp_http_res_end(acp_http_req *r)
{
    r->ops->end(r);
}

int acp_http_res_send(acp_http_req *r, int status, const char *ctype, const void *body, size_t n,
                      const acp_http_field *fields, size_t nfields)
{
    acp_http_field *all = malloc((nfields + 1) * sizeof *all);
    if (!all) return ACP_ENOMEM;
    size_t k = 0;
    if (ctype) all[k++] = (acp_http_field){"Content-Type", ctype};
    for (size_t i = 0; i < nfields; i++) all[k++] = fields[i];
    int rc = r->ops->start(r, status, all, k, n);
    free(all);
    if (rc == 0 && n) rc = r->ops->write(r, body, n);
    if (rc == 0) r->ops->end(r);
    return rc;
}

size_t acp_http_res_queued(const acp_http_req *r)
{
    return r->ops->queued(r);
}

void acp_http_req_watch(acp_http_req *r, const acp_http_req_cbs *cbs, void *user)
{
    r->cbs = cbs ? *cbs : (acp_http_req_cbs){0};
    r->user = user;
}
