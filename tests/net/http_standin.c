/* Until net/http.c (net-core) is on this branch: the accessors of net/http.h that
 * ws_accept.c and the tests use, dispatching to the exchange's ops like the real ones. */
#include <string.h>

#include "acp/error.h"
#include "net/http.h"

const char *acp_http_req_method(const acp_http_req *r)
{
    return r->method;
}

const char *acp_http_req_header(const acp_http_req *r, const char *name)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (!strcmp(r->headers[i].name, name)) return r->headers[i].value;
    return NULL;
}

int acp_http_res_send(acp_http_req *r, int status, const char *ctype, const void *body, size_t n,
                      const acp_http_field *fields, size_t nfields)
{
    acp_http_field f[32];
    if (nfields + 1 > 32) return ACP_EINVAL;
    size_t k = 0;
    if (ctype) f[k++] = (acp_http_field){"Content-Type", ctype};
    for (size_t i = 0; i < nfields; i++) f[k++] = fields[i];
    int rc = r->ops->start(r, status, f, k, n);
    if (!rc && n) rc = r->ops->write(r, body, n);
    if (!rc) r->ops->end(r);
    return rc;
}
