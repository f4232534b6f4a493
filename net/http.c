/* SPDX-License-Identifier: Apache-2.0 */
/* The wire-independent half of net/http.h: the request's accessors and the response calls
 * dispatched to whichever wire carries the exchange. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "acp/error.h"
#include "net/http.h"
#include "net/http1.h"

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
        if (!strcmp(r->headers[i].name, name)) return r->headers[i].value;
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
    acp_http_field f[32];
    if (nfields + 1 > sizeof f / sizeof *f) return ACP_EINVAL;
    size_t k = 0;
    if (ctype) f[k++] = (acp_http_field){"Content-Type", ctype};
    for (size_t i = 0; i < nfields; i++) f[k++] = fields[i];
    int rc = acp_http_res_start(r, status, f, k, n);
    if (!rc && n) rc = acp_http_res_write(r, body, n);
    if (!rc) acp_http_res_end(r);
    return rc;
}

size_t acp_http_res_queued(const acp_http_req *r)
{
    return r->ops->queued(r);
}

void acp_http_req_watch(acp_http_req *r, const acp_http_req_cbs *cbs, void *user)
{
    r->cbs = *cbs;
    r->user = user;
}

const char *acp_http_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 417:
        return "Expectation Failed";
    case 426:
        return "Upgrade Required";
    case 431:
        return "Request Header Fields Too Large";
    case 499:
        return "Client Closed Request";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "";
    }
}

bool acp_http_req_wants_websocket(const acp_http_req *r)
{
    const char *u = acp_http_req_header(r, "upgrade");
    while (u && *u) {
        while (*u == ' ' || *u == ',') u++;
        size_t n = strcspn(u, ", /");
        if (n == 9 && !strncasecmp(u, "websocket", 9)) return true;
        u += n;
        u += strcspn(u, ",");
    }
    return false;
}
