/* SPDX-License-Identifier: Apache-2.0 */
/* Private to store/: the backends acp_store_open() dispatches to. Each has the contract of
 * acp_store_open() for its own kind of `where`; its acp_store_ops table stays in its file. */
#ifndef ACP_STORE_BACKENDS_H
#define ACP_STORE_BACKENDS_H

#include "acp/store.h"

int acp_store_sqlite_open(const char *path, acp_store **out); /* sqlite.c */
/* sqlite.c, for store/inject.h: the handle's busy timeout. */
int acp_store_sqlite_busy_timeout(acp_store *st, unsigned ms);
int acp_store_pg_open(const char *conninfo, acp_store **out); /* postgres.c */

#endif
