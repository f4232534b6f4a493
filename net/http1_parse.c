/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 request parser (net/http1.h): RFC 9112's request grammar, incrementally. */
#include <string.h>

#include "acp/error.h"
#include "net/http1.h"

enum {
    S_HEAD,
    S_BODY,      /* Content-Length bytes */
    S_CSIZE,     /* chunk-size hex digits */
    S_CEXT,      /* chunk extension, skipped to the end of the line */
    S_CSIZE_LF,  /* CR seen after the size */
    S_CDATA,     /* chunk data */
    S_CDATA_END, /* the CRLF after the data */
    S_CDATA_LF,
    S_TRAILER, /* trailer fields, discarded, to the empty line */
    S_COMPLETE,
    S_ERROR
};

#define MAX_FIELDS    256
#define MAX_CHUNK_EXT 4096

static int fail(acp_http1_parser *p, int status, const char *why)
{
    p->state = S_ERROR;
    p->status = status;
    p->error = why;
    return ACP_HTTP1_ERROR;
}

void acp_http1_parser_init(acp_http1_parser *p, size_t max_head, size_t max_body)
{
    memset(p, 0, sizeof *p);
    p->max_head = max_head;
    p->max_body = max_body;
}

void acp_http1_parser_reset(acp_http1_parser *p)
{
    free(p->fields);
    p->fields = NULL;
    p->nfields = 0;
    p->head.len = p->body.len = 0;
    acp_buf_shrink(&p->head, 16384);
    acp_buf_shrink(&p->body, 0);
    p->strs.len = 0;
    acp_buf_shrink(&p->strs, 0);
    size_t mh = p->max_head, mb = p->max_body;
    acp_buf head = p->head, body = p->body, strs = p->strs;
    memset(p, 0, sizeof *p);
    p->max_head = mh;
    p->max_body = mb;
    p->head = head;
    p->body = body;
    p->strs = strs;
}

void acp_http1_parser_free(acp_http1_parser *p)
{
    free(p->fields);
    acp_buf_free(&p->head);
    acp_buf_free(&p->body);
    acp_buf_free(&p->strs);
    memset(p, 0, sizeof *p);
}

const char *acp_http1_header(const acp_http1_parser *p, const char *name)
{
    for (size_t i = 0; i < p->nfields; i++)
        if (!strcmp(p->fields[i].name, name)) return p->fields[i].value;
    return NULL;
}

/* RFC 9110 5.6.2 tchar. */
static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_token(const char *s, size_t n)
{
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!is_tchar((unsigned char)s[i])) return false;
    return true;
}

/* Does the comma-separated list v contain token t (case-insensitive)? */
static bool list_has(const char *v, const char *t)
{
    size_t tl = strlen(t);
    while (v && *v) {
        while (*v == ' ' || *v == '\t' || *v == ',') v++;
        size_t n = strcspn(v, ",");
        size_t m = n;
        while (m > 0 && (v[m - 1] == ' ' || v[m - 1] == '\t')) m--;
        if (m == tl && !strncasecmp(v, t, tl)) return true;
        v += n;
    }
    return false;
}

/* Content-Length: digits only; a list of equal values (RFC 9112 6.3) is that value. */
static bool parse_length(const char *v, size_t *out)
{
    bool have = false;
    size_t first = 0;
    while (*v) {
        while (*v == ' ' || *v == '\t') v++;
        if (*v < '0' || *v > '9') return false;
        size_t n = 0;
        while (*v >= '0' && *v <= '9') {
            if (n > (SIZE_MAX - 9) / 10) return false;
            n = n * 10 + (size_t)(*v++ - '0');
        }
        while (*v == ' ' || *v == '\t') v++;
        if (have && n != first) return false;
        first = n;
        have = true;
        if (*v == ',') {
            v++;
            continue;
        }
        if (*v) return false;
    }
    *out = first;
    return have;
}

/* The head is complete in p->head: split it in place into NUL-terminated strings. */
static int parse_head(acp_http1_parser *p)
{
    char *h = p->head.data, *end = h + p->head.len;
    /* RFC 9112 2.2: empty lines before the request line are ignored. */
    while (h < end && (*h == '\r' || *h == '\n')) h++;
    acp_http_field raw[MAX_FIELDS];
    size_t nraw = 0;
    char *line = h;
    bool first = true;
    while (line < end) {
        char *lf = memchr(line, '\n', (size_t)(end - line));
        if (!lf) lf = end;
        char *le = lf;
        if (le > line && le[-1] == '\r') le--;
        if (memchr(line, '\r', (size_t)(le - line)))
            return fail(p, 400, "bare CR in the request head");
        /* Cut at a NUL, a value would mean less than was sent (a token with junk after it). */
        if (memchr(line, '\0', (size_t)(le - line)))
            return fail(p, 400, "NUL byte in the request head");
        *le = '\0';
        char *next = lf < end ? lf + 1 : end;
        if (le == line) break; /* the empty line ending the head */
        if (first) {
            first = false;
            char *sp1 = strchr(line, ' ');
            char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
            if (!sp1 || !sp2 || strchr(sp2 + 1, ' ')) return fail(p, 400, "malformed request line");
            *sp1 = *sp2 = '\0';
            char *target = sp1 + 1, *version = sp2 + 1;
            if (!is_token(line, (size_t)(sp1 - line)))
                return fail(p, 400, "malformed request method");
            if (!*target) return fail(p, 400, "empty request target");
            for (char *t = target; *t; t++)
                if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f)
                    return fail(p, 400, "malformed request target");
            if (!strcmp(version, "HTTP/1.1")) {
                p->http10 = false;
            } else if (!strcmp(version, "HTTP/1.0")) {
                p->http10 = true;
            } else if (!strncmp(version, "HTTP/", 5) && strlen(version) == 8 && version[6] == '.' &&
                       version[5] >= '0' && version[5] <= '9' && version[7] >= '0' &&
                       version[7] <= '9') {
                return fail(p, 505, "HTTP version not supported");
            } else {
                return fail(p, 400, "malformed HTTP version");
            }
            p->method = line;
            p->target = target;
        } else {
            if (*line == ' ' || *line == '\t')
                return fail(p, 400, "obsolete line folding in the request head");
            char *colon = strchr(line, ':');
            if (!colon || !is_token(line, (size_t)(colon - line)))
                return fail(p, 400, "malformed header field");
            if (nraw == MAX_FIELDS) return fail(p, 431, "too many header fields");
            *colon = '\0';
            for (char *c = line; *c; c++)
                if (*c >= 'A' && *c <= 'Z') *c = (char)(*c + 32);
            char *v = colon + 1, *ve = le;
            while (*v == ' ' || *v == '\t') v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
            *ve = '\0';
            for (char *c = v; *c; c++) {
                unsigned char u = (unsigned char)*c;
                if ((u < 0x20 && u != '\t') || u == 0x7f)
                    return fail(p, 400, "control character in a header value");
            }
            raw[nraw++] = (acp_http_field){line, v};
        }
        line = next;
    }
    if (first) return fail(p, 400, "empty request");

    /* Repeated fields joined with ", " (cookies "; "), built in strs, reserved once so the
     * pointers stay put: the joined values together are never longer than twice the head. */
    p->fields = malloc((nraw ? nraw : 1) * sizeof *p->fields);
    if (!p->fields || acp_buf_reserve(&p->strs, 2 * p->head.len + 16))
        return fail(p, 500, "out of memory");
    size_t nf = 0, hosts = 0;
    for (size_t i = 0; i < nraw; i++) hosts += !strcmp(raw[i].name, "host");
    if (hosts > 1) return fail(p, 400, "more than one Host field");
    for (size_t i = 0; i < nraw; i++) {
        if (!raw[i].name) continue;
        const char *name = raw[i].name;
        size_t count = 0;
        for (size_t j = i; j < nraw; j++)
            if (raw[j].name && !strcmp(raw[j].name, name)) count++;
        if (count == 1) {
            p->fields[nf++] = raw[i];
            continue;
        }
        const char *sep = strcmp(name, "cookie") ? ", " : "; ";
        char *joined = p->strs.data + p->strs.len;
        for (size_t j = i; j < nraw; j++) {
            if (!raw[j].name || strcmp(raw[j].name, name)) continue;
            if (j != i) {
                memcpy(p->strs.data + p->strs.len, sep, 2);
                p->strs.len += 2;
            }
            size_t vl = strlen(raw[j].value);
            memcpy(p->strs.data + p->strs.len, raw[j].value, vl);
            p->strs.len += vl;
            if (j != i) raw[j].name = NULL;
        }
        p->strs.data[p->strs.len++] = '\0';
        p->fields[nf++] = (acp_http_field){name, joined};
    }
    p->nfields = nf;

    if (!p->http10 && !hosts) return fail(p, 400, "missing Host field");
    const char *conn = acp_http1_header(p, "connection");
    p->keep_alive = p->http10 ? list_has(conn, "keep-alive") : !list_has(conn, "close");
    p->upgrade = list_has(conn, "upgrade") && acp_http1_header(p, "upgrade");
    const char *te = acp_http1_header(p, "transfer-encoding");
    const char *cl = acp_http1_header(p, "content-length");
    if (te && cl) return fail(p, 400, "both Transfer-Encoding and Content-Length");
    if (te) {
        if (strcasecmp(te, "chunked")) return fail(p, 501, "transfer coding not supported");
        p->chunked = true;
    } else if (cl) {
        if (!parse_length(cl, &p->need)) return fail(p, 400, "malformed Content-Length");
        if (p->need > p->max_body) return fail(p, 413, "request body too large");
        p->has_length = true;
    }
    bool body = p->chunked || p->need > 0;
    const char *expect = acp_http1_header(p, "expect");
    if (expect) {
        if (strcasecmp(expect, "100-continue")) return fail(p, 417, "unsupported expectation");
        p->expect_continue = body && !p->http10;
    }
    p->state = p->chunked ? S_CSIZE : p->need ? S_BODY : S_COMPLETE;
    return ACP_HTTP1_HEAD;
}

static int body_append(acp_http1_parser *p, const char *d, size_t n)
{
    if (p->body.len + n > p->max_body) return fail(p, 413, "request body too large");
    if (acp_buf_append(&p->body, d, n)) return fail(p, 500, "out of memory");
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int acp_http1_parse(acp_http1_parser *p, const char *data, size_t n, size_t *used)
{
    size_t i = 0;
    *used = 0;
    while (i < n || p->state == S_COMPLETE || p->state == S_ERROR) {
        switch (p->state) {
        case S_ERROR:
            *used = i;
            return ACP_HTTP1_ERROR;
        case S_COMPLETE:
            *used = i;
            return ACP_HTTP1_REQUEST;
        case S_HEAD: {
            /* Find the empty line: two LFs with only a CR between them. */
            size_t start = i;
            bool done = false;
            for (; i < n; i++) {
                char c = data[i];
                if (c == '\n') {
                    if (p->eol) {
                        done = true;
                        i++;
                        break;
                    }
                    p->eol = true;
                } else if (c != '\r') {
                    p->eol = false;
                }
            }
            if (p->head.len + (i - start) > p->max_head) {
                *used = i;
                return fail(p, 431, "request head too large");
            }
            if (acp_buf_append(&p->head, data + start, i - start)) {
                *used = i;
                return fail(p, 500, "out of memory");
            }
            if (!done) break;
            *used = i;
            return parse_head(p);
        }
        case S_BODY: {
            size_t k = n - i < p->need ? n - i : p->need;
            if (body_append(p, data + i, k)) {
                *used = i;
                return ACP_HTTP1_ERROR;
            }
            i += k;
            p->need -= k;
            if (!p->need) p->state = S_COMPLETE;
            break;
        }
        case S_CSIZE: {
            char c = data[i++];
            int v = hexval(c);
            if (v >= 0) {
                if (p->digits++ >= 15) return fail(p, 400, "chunk size too large");
                p->need = p->need * 16 + (size_t)v;
            } else if (!p->digits) {
                return fail(p, 400, "malformed chunk size");
            } else if (c == ';' || c == ' ' || c == '\t') {
                p->ext = 0;
                p->state = S_CEXT;
            } else if (c == '\r') {
                p->state = S_CSIZE_LF;
            } else if (c == '\n') {
                goto size_done;
            } else {
                return fail(p, 400, "malformed chunk size");
            }
            break;
        }
        case S_CEXT: {
            char c = data[i++];
            if (++p->ext > MAX_CHUNK_EXT) return fail(p, 400, "chunk extension too long");
            if (c == '\n') goto size_done;
            break;
        }
        case S_CSIZE_LF:
            if (data[i++] != '\n') return fail(p, 400, "malformed chunk size line");
        size_done:
            p->digits = 0;
            if (p->need > p->max_body - p->body.len) return fail(p, 413, "request body too large");
            p->state = p->need ? S_CDATA : S_TRAILER;
            p->eol = true; /* the trailer section may be just its empty line */
            break;
        case S_CDATA: {
            size_t k = n - i < p->need ? n - i : p->need;
            if (body_append(p, data + i, k)) {
                *used = i;
                return ACP_HTTP1_ERROR;
            }
            i += k;
            p->need -= k;
            if (!p->need) p->state = S_CDATA_END;
            break;
        }
        case S_CDATA_END: {
            char c = data[i++];
            if (c == '\r')
                p->state = S_CDATA_LF;
            else if (c == '\n')
                p->state = S_CSIZE;
            else
                return fail(p, 400, "chunk data longer than its size");
            break;
        }
        case S_CDATA_LF:
            if (data[i++] != '\n') return fail(p, 400, "chunk data longer than its size");
            p->state = S_CSIZE;
            break;
        case S_TRAILER: {
            char c = data[i++];
            if (++p->ext > p->max_head) return fail(p, 431, "trailer section too large");
            if (c == '\n') {
                if (p->eol) p->state = S_COMPLETE;
                p->eol = true;
            } else if (c != '\r') {
                p->eol = false;
            }
            break;
        }
        }
        if (p->state == S_ERROR) {
            *used = i;
            return ACP_HTTP1_ERROR;
        }
    }
    *used = i;
    return ACP_HTTP1_MORE;
}
