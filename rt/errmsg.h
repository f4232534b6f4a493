/* SPDX-License-Identifier: Apache-2.0 */
/* The optional malloc'd error sentence that rt's constructors hand back (char **errmsg). */
#ifndef ACP_RT_ERRMSG_H
#define ACP_RT_ERRMSG_H

/* *errmsg = the formatted sentence (the caller frees it); nothing when errmsg is NULL. */
void rt_set_err(char **errmsg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
