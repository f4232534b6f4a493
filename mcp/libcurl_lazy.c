/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl, loaded when the first HTTP MCP server connects instead of when the program starts.
 *
 * Why: linking libcurl costs every program ~3.2 ms of CPU at each start (perf stat -r 50: an
 * empty main linked against libuv+jansson+sqlite3 1.1 ms, the same plus libcurl 4.3 ms), because
 * libcurl drags in Kerberos, LDAP and TLS libraries and runs their constructors. acp-agent with
 * stdio MCP servers only never needs it, and its cold-start goal (spawn + initialize +
 * session/new) is 5 ms. So libacp does not link libcurl: mcp/ stays written against
 * <curl/curl.h>, and the functions it calls are defined here, each resolving libcurl.so.4 on
 * first use (dlopen, RTLD_LOCAL) and forwarding to it.
 *
 * Without libcurl.so.4 on the system, curl_global_init fails (CURLE_FAILED_INIT), the handle
 * constructors return NULL, and mcp_libcurl_error() says why; every other function fails the
 * way libcurl does for a bad handle.
 *
 * The definitions are hidden: inside libacp.so they replace libcurl for libacp's own calls
 * only, never for a program that links libcurl itself. The resolved table is process-wide on
 * purpose: it caches what the dynamic linker would have done, written once under pthread_once. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/libcurl_lazy.h"

/* The variadic setters are forwarded by hand, so no type-checking macros stand in their way. */
#define CURL_DISABLE_TYPECHECK
#pragma GCC visibility push(hidden)
#include <curl/curl.h>
#pragma GCC visibility pop

#define LIBCURL "libcurl.so.4"

/* A callback option's argument, whatever its prototype: libcurl reads it back as its own type. */
typedef void (*any_fn)(void);

/* X(return type, name, parameters, arguments, the result without libcurl) */
#define CURL_CALLS(X)                                                                              \
    X(CURLcode, curl_global_init, (long flags), (flags), CURLE_FAILED_INIT)                        \
    X(CURLM *, curl_multi_init, (void), (), NULL)                                                  \
    X(CURL *, curl_easy_init, (void), (), NULL)                                                    \
    X(CURLU *, curl_url, (void), (), NULL)                                                         \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist * l, const char *s), (l, s),      \
      NULL)                                                                                        \
    X(CURLMcode, curl_multi_cleanup, (CURLM * m), (m), CURLM_BAD_HANDLE)                           \
    X(CURLMcode, curl_multi_add_handle, (CURLM * m, CURL * e), (m, e), CURLM_BAD_HANDLE)           \
    X(CURLMcode, curl_multi_remove_handle, (CURLM * m, CURL * e), (m, e), CURLM_BAD_HANDLE)        \
    X(CURLMcode, curl_multi_assign, (CURLM * m, curl_socket_t s, void *p), (m, s, p),              \
      CURLM_BAD_HANDLE)                                                                            \
    X(CURLMcode, curl_multi_socket_action, (CURLM * m, curl_socket_t s, int ev, int *running),     \
      (m, s, ev, running), CURLM_BAD_HANDLE)                                                       \
    X(CURLMsg *, curl_multi_info_read, (CURLM * m, int *left), (m, left), NULL)                    \
    X(CURLcode, curl_easy_pause, (CURL * e, int bitmask), (e, bitmask), CURLE_FAILED_INIT)         \
    X(CURLHcode, curl_easy_header,                                                                 \
      (CURL * e, const char *name, size_t i, unsigned int origin, int req,                         \
       struct curl_header **out),                                                                  \
      (e, name, i, origin, req, out), CURLHE_NOT_BUILT_IN)                                         \
    X(CURLUcode, curl_url_set, (CURLU * u, CURLUPart w, const char *s, unsigned int f),            \
      (u, w, s, f), CURLUE_BAD_HANDLE)                                                             \
    X(CURLUcode, curl_url_get, (CURLU * u, CURLUPart w, char **s, unsigned int f), (u, w, s, f),   \
      CURLUE_BAD_HANDLE)

/* V(name, parameters, arguments): without libcurl these have nothing to free */
#define CURL_VOID_CALLS(V)                                                                         \
    V(curl_global_cleanup, (void), ())                                                             \
    V(curl_easy_cleanup, (CURL * e), (e))                                                          \
    V(curl_url_cleanup, (CURLU * u), (u))                                                          \
    V(curl_slist_free_all, (struct curl_slist * l), (l))                                           \
    V(curl_free, (void *p), (p))

/* X(return type, name, handle type, option type): the variadic ones, forwarded below */
#define CURL_VARIADIC(X)                                                                           \
    X(CURLcode, curl_easy_setopt, CURL *, CURLoption)                                              \
    X(CURLMcode, curl_multi_setopt, CURLM *, CURLMoption)                                          \
    X(CURLcode, curl_easy_getinfo, CURL *, CURLINFO)

#define FIELD(r, n, p, a, f)       r(*n) p;
#define VOID_FIELD(n, p, a)        void(*n) p;
#define VARIADIC_FIELD(r, n, h, o) r (*n)(h, o, ...);
static struct {
    pthread_once_t once;
    bool loaded;
    char error[512]; /* why libcurl could not be used */
    CURL_CALLS(FIELD)
    CURL_VOID_CALLS(VOID_FIELD)
    CURL_VARIADIC(VARIADIC_FIELD)
} lc = {.once = PTHREAD_ONCE_INIT};

static bool resolve(void *lib, const char *name, void *slot)
{
    void *sym = dlsym(lib, name);
    if (!sym)
        snprintf(lc.error, sizeof lc.error, "HTTP MCP servers need " LIBCURL " with %s: %s", name,
                 dlerror());
    else
        memcpy(slot, &sym, sizeof sym); /* POSIX: a function's address fits a void * */
    return sym != NULL;
}

static void load(void)
{
    void *lib = dlopen(LIBCURL, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(lc.error, sizeof lc.error, "HTTP MCP servers need " LIBCURL ": %s", dlerror());
        return;
    }
#define RESOLVE(r, n, p, a, f)       &&resolve(lib, #n, &lc.n)
#define VOID_RESOLVE(n, p, a)        &&resolve(lib, #n, &lc.n)
#define VARIADIC_RESOLVE(r, n, h, o) &&resolve(lib, #n, &lc.n)
    lc.loaded =
        true CURL_CALLS(RESOLVE) CURL_VOID_CALLS(VOID_RESOLVE) CURL_VARIADIC(VARIADIC_RESOLVE);
    if (!lc.loaded) dlclose(lib);
}

static bool ready(void)
{
    pthread_once(&lc.once, load);
    return lc.loaded;
}

const char *mcp_libcurl_error(void)
{
    return ready() ? NULL : lc.error;
}

#define SHIM(r, n, p, a, f)                                                                        \
    r n p                                                                                          \
    {                                                                                              \
        return ready() ? lc.n a : f;                                                               \
    }
#define VOID_SHIM(n, p, a)                                                                         \
    void n p                                                                                       \
    {                                                                                              \
        if (ready()) lc.n a;                                                                       \
    }
CURL_CALLS(SHIM)
CURL_VOID_CALLS(VOID_SHIM)

/* An option's number says its argument's type (CURLOPTTYPE_*, the same for easy and multi
 * options): read it as that type and pass it on as that type. */
#define SETOPT(r, n, handle_type, option_type, fallback)                                           \
    r(n)(handle_type h, option_type o, ...)                                                        \
    {                                                                                              \
        if (!ready()) return fallback;                                                             \
        va_list ap;                                                                                \
        va_start(ap, o);                                                                           \
        r rc;                                                                                      \
        if (o < CURLOPTTYPE_OBJECTPOINT)                                                           \
            rc = lc.n(h, o, va_arg(ap, long));                                                     \
        else if (o < CURLOPTTYPE_FUNCTIONPOINT || o >= CURLOPTTYPE_BLOB)                           \
            rc = lc.n(h, o, va_arg(ap, void *));                                                   \
        else if (o < CURLOPTTYPE_OFF_T)                                                            \
            rc = lc.n(h, o, va_arg(ap, any_fn));                                                   \
        else                                                                                       \
            rc = lc.n(h, o, va_arg(ap, curl_off_t));                                               \
        va_end(ap);                                                                                \
        return rc;                                                                                 \
    }
SETOPT(CURLcode, curl_easy_setopt, CURL *, CURLoption, CURLE_FAILED_INIT)
SETOPT(CURLMcode, curl_multi_setopt, CURLM *, CURLMoption, CURLM_BAD_HANDLE)

/* Every CURLINFO_* takes a pointer to where the answer goes. */
CURLcode(curl_easy_getinfo)(CURL *h, CURLINFO info, ...)
{
    if (!ready()) return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    void *out = va_arg(ap, void *);
    va_end(ap);
    return lc.curl_easy_getinfo(h, info, out);
}
