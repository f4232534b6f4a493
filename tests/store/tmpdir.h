/* SPDX-License-Identifier: Apache-2.0 */
/* A private temporary directory per test program, removed with everything in it. */
#ifndef ACP_TEST_STORE_TMPDIR_H
#define ACP_TEST_STORE_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int tmpdir_rm1(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* Fills buf (PATH_MAX-ish) with a new directory's path; returns 0 or -1. */
static inline int tmpdir_make(char *buf, size_t size, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/acp-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    return mkdtemp(buf) ? 0 : -1;
}

static inline void tmpdir_remove(const char *dir)
{
    nftw(dir, tmpdir_rm1, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
