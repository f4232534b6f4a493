/* SPDX-License-Identifier: Apache-2.0 */
/* The conventions every public header follows: what is exported, and how option structs grow.
 *
 * Exported names. The library is built with -fvisibility=hidden; each public header wraps its
 * declarations in ACP_BEGIN_DECLS / ACP_END_DECLS, which give them default visibility (and C
 * linkage in C++). So libacp.so and libacp.a define only the acp_* names declared in
 * include/acp/; everything else is local to the library.
 *
 * Extensible structs. Every struct an application fills in and hands to libacp (options,
 * callback tables, descriptors) begins with `size_t struct_size`, set to sizeof the struct as
 * the application was compiled: initialise it with the struct's ACP_..._INIT macro, e.g.
 *
 *     acp_agent_opts o = ACP_AGENT_OPTS_INIT;
 *     o.store = store;
 *
 * The library reads such a struct as Linux reads openat2(2)'s struct open_how: members past
 * struct_size (added by a later libacp) read as zero, which is always their default; a
 * struct_size larger than this libacp knows is accepted when the extra bytes are zero, and
 * refused with ACP_ENOTSUP otherwise (the program needs a newer libacp). A struct_size of 0
 * (the member forgotten) or smaller than the 1.0 struct is ACP_EINVAL. Members are only ever
 * added at the end; none is removed or retyped within a major version. NULL, where a function
 * takes it, still means "all defaults". The library copies such a struct during the call and
 * never reads the application's memory later.
 *
 * Other structs in the headers are one of two kinds, and each says which:
 *   - the library's: handed to the application as a const pointer (a callback's argument,
 *     acp_error_last()) and read through it. They may grow at the end in a later release;
 *     never allocate or copy one yourself.
 *   - frozen in 1.0 (never grows; a later release adds a new struct instead): small value
 *     structs the application writes as array elements (acp_mode, acp_perm_option, ...), where
 *     a struct_size in every element of a static table would be noise and a trap, the views
 *     the library hands out in arrays (acp_plan_entry_view, ...), and the plain value types
 *     and parser states of acp/json.h and acp/sse.h (acp_buf, acp_span, acp_jw, acp_sse).
 *     The ABI check (abidiff against the committed baseline) refuses any change to them.
 *   An application-allocated struct the library fills in and that may grow (acp_store_session
 *   as acp_store_get()'s out-parameter, acp_update_view) carries struct_size too: the library
 *   writes only the first struct_size bytes.
 *
 * Errors. Every function returning an int status sets, on failure, this thread's last error:
 * acp_error_last() in <acp/error.h> gives the status and a sentence. Nothing in the library
 * aborts or exits the process. */
#ifndef ACP_API_H
#define ACP_API_H

#ifdef __cplusplus
#define ACP_EXTERN_C_BEGIN extern "C" {
#define ACP_EXTERN_C_END   }
#else
#define ACP_EXTERN_C_BEGIN
#define ACP_EXTERN_C_END
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ACP_BEGIN_DECLS ACP_EXTERN_C_BEGIN _Pragma("GCC visibility push(default)")
#define ACP_END_DECLS   _Pragma("GCC visibility pop") ACP_EXTERN_C_END
#else
#define ACP_BEGIN_DECLS ACP_EXTERN_C_BEGIN
#define ACP_END_DECLS   ACP_EXTERN_C_END
#endif

/* The ACP_..._INIT of a struct that follows the struct_size convention. */
#define ACP_STRUCT_INIT(type)                                                                      \
    {                                                                                              \
        .struct_size = sizeof(type)                                                                \
    }

#endif
