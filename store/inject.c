/* SPDX-License-Identifier: Apache-2.0 */
/* Fault injection (store/inject.h): which operation and which of its steps meets the armed
 * fault. The faults themselves are produced by the backends, each in its own terms. */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/backends.h"
#include "store/inject.h"

struct acp_store_inject {
    acp_store_fault f;
    char sqlstate[6];
    unsigned counted; /* operations of f.ops begun since arming */
    unsigned step;    /* database calls of the current operation so far */
    bool faulty;      /* the current operation is one that faults */
    unsigned fired;
};

static bool is_sqlite(const acp_store *st)
{
    return !strcmp(st->ops->name, "sqlite");
}

int acp_store_inject(acp_store *st, const acp_store_fault *f)
{
    free(st->inject);
    st->inject = NULL;
    if (!f) return 0;
    bool lose = f->kind == ACP_FAULT_LOSE || f->kind == ACP_FAULT_LOSE_AFTER;
    if ((lose && is_sqlite(st)) || (f->kind == ACP_FAULT_CALL && !f->call)) return ACP_EINVAL;
    if (f->kind == ACP_FAULT_ERROR && !is_sqlite(st) && !(f->ops == ACP_FAULT_APPEND)) {
        /* A SQLSTATE is five digits or upper-case letters: it is written into the statement
         * the server raises it from. */
        const char *c = f->sqlstate;
        if (!c || strlen(c) != 5) return ACP_EINVAL;
        for (int i = 0; i < 5; i++)
            if (!isdigit((unsigned char)c[i]) && !isupper((unsigned char)c[i])) return ACP_EINVAL;
    }
    struct acp_store_inject *in = calloc(1, sizeof *in);
    if (!in) return ACP_ENOMEM;
    in->f = *f;
    if (f->sqlstate) memcpy(in->sqlstate, f->sqlstate, strnlen(f->sqlstate, 5));
    in->f.sqlstate = in->sqlstate;
    if (!in->f.nth) in->f.nth = 1;
    if (!in->f.times) in->f.times = 1;
    st->inject = in;
    return 0;
}

unsigned acp_store_inject_fired(const acp_store *st)
{
    return st->inject ? st->inject->fired : 0;
}

int acp_store_inject_busy_timeout(acp_store *st, unsigned ms)
{
    return is_sqlite(st) ? acp_store_sqlite_busy_timeout(st, ms) : ACP_EINVAL;
}

void acp_store_inject_op(acp_store *st, unsigned op)
{
    struct acp_store_inject *in = st->inject;
    in->step = 0;
    in->faulty = false;
    if (!(in->f.ops & op)) return;
    unsigned n = ++in->counted; /* 1-based: the nth counted operation */
    in->faulty = n >= in->f.nth && (in->f.times == UINT_MAX || n - in->f.nth < in->f.times);
}

const acp_store_fault *acp_store_inject_step(acp_store *st)
{
    struct acp_store_inject *in = st->inject;
    in->step++;
    if (!in->faulty || (in->f.step && in->step != in->f.step)) return NULL;
    in->fired++;
    switch (in->f.kind) {
    case ACP_FAULT_STALL: {
        struct timespec ts = {in->f.ms / 1000, (long)(in->f.ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts)) {}
        return NULL;
    }
    case ACP_FAULT_CALL:
        in->f.call(st, in->f.user);
        return NULL;
    default:
        return &in->f;
    }
}
