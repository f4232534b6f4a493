/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over session/list cursors, which arrive from clients: the strict decoder in
 * store/cursor.c and acp_store_list on an in-memory SQLite store with whatever cursor and cwd
 * filter the input holds. Never a crash or leak; and the decoder's promise is checked: a
 * cursor it accepts is exactly the encoding of what it decoded (one accepted spelling per
 * value), and the store accepts precisely the cursors the decoder accepts.
 *
 * Input: the cursor, then optionally a NUL byte and a cwd filter. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"

static int count(void *user, const acp_store_session *s)
{
    if (!s->id || !s->cwd || !acp_store_time_valid(s->updated_at)) abort();
    ++*(unsigned *)user;
    return 0;
}

/* Five sessions in two cwds, two of them sharing an updated_at, so pages cut through ties. */
static acp_store *store_with_sessions(void)
{
    acp_store *st;
    if (acp_store_open(":memory:", &st)) abort();
    static const char *const times[] = {"2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z",
                                        "2026-01-02T00:00:00.000Z", "2026-01-03T00:00:00.000Z",
                                        "2026-01-04T00:00:00.000Z"};
    for (int i = 0; i < 5; i++) {
        char id[8];
        snprintf(id, sizeof id, "s%d", i);
        acp_store_session s = {.struct_size = sizeof(acp_store_session),
                               .id = id,
                               .cwd = i % 2 ? "/b" : "/a",
                               .add_dirs = "[]"};
        memcpy(s.created_at, times[i], ACP_STORE_TIME_LEN + 1);
        memcpy(s.updated_at, times[i], ACP_STORE_TIME_LEN + 1);
        if (acp_store_create(st, &s)) abort();
    }
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    if (!in) return 0;
    memcpy(in, data, size);
    in[size] = '\0';
    size_t cl = strlen(in);
    const char *cwd = cl < size ? in + cl + 1 : NULL;

    char t[ACP_STORE_TIME_LEN + 1], *id = NULL;
    int drc = acp_store_cursor_decode(in, t, &id);
    if (drc == 0) {
        char *again = NULL;
        if (!id || !*id || !acp_store_time_valid(t)) abort();
        if (acp_store_cursor_encode(t, id, &again) || strcmp(again, in)) abort();
        free(again);
    } else if (drc != ACP_EINVAL || id) {
        abort();
    }
    free(id);

    /* The other direction: any id (up to the first NUL) encodes to a cursor that decodes back. */
    if (cl > 0) {
        char *enc = NULL, *back = NULL;
        if (acp_store_cursor_encode("2026-12-02T13:44:52.123Z", in, &enc)) abort();
        int rc = acp_store_cursor_decode(enc, t, &back);
        /* Only an id too long for a cursor may be refused. */
        if (rc == 0 ? strcmp(back, in) || strcmp(t, "2026-12-02T13:44:52.123Z") : cl < 1000)
            abort();
        free(back);
        free(enc);
    }

    acp_store *st = store_with_sessions();
    unsigned n = 0, limit = size ? (unsigned)data[size - 1] % 4 + 1 : 1;
    char *next = NULL;
    int lrc = acp_store_list(st, cwd, in, limit, count, &n, &next);
    if (lrc != (drc == 0 ? 0 : ACP_EINVAL) || n > limit || (lrc && (n || next))) abort();
    /* Follow the pages to the end: every cursor the store hands out must be accepted. */
    while (next) {
        char *cur = next;
        next = NULL;
        unsigned m = 0;
        if (acp_store_list(st, cwd, cur, limit, count, &m, &next) || m == 0) abort();
        free(cur);
    }
    acp_store_close(st);
    free(in);
    return 0;
}
