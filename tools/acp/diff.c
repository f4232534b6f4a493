/* SPDX-License-Identifier: Apache-2.0 */
/* A short unified diff for a tool call's `diff` content: the common head and tail are cut,
 * the middle is compared line by line (longest common subsequence) when it is small enough,
 * else shown as all removed, then all added. Hunks carry two lines of context. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/acp/render.h"
#include "tools/acp/safe.h"

#define CONTEXT  2
#define LCS_MAX  (4u << 20) /* table cells: beyond this the middle is not compared */
#define NEW_HEAD 10         /* lines shown of a new file */

typedef struct line {
    const char *p;
    size_t n;
} line;

typedef struct op {
    char t;      /* ' ', '-', '+' */
    size_t o, w; /* old and new line index at this op */
} op;

static size_t split(const char *s, size_t n, line **out)
{
    size_t count = 0, cap = 16;
    line *v = malloc(cap * sizeof *v);
    for (size_t i = 0; v && i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (s + i)) : n - i;
        if (count == cap) {
            line *w = realloc(v, (cap *= 2) * sizeof *v);
            if (!w) break;
            v = w;
        }
        v[count++] = (line){s + i, len};
        i += len + 1;
    }
    *out = v;
    return v ? count : 0;
}

static bool same(const line *a, const line *b)
{
    return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

static void push(op **v, size_t *n, size_t *cap, op x)
{
    if (*n == *cap) {
        op *w = realloc(*v, (*cap = *cap ? *cap * 2 : 64) * sizeof **v);
        if (!w) return;
        *v = w;
    }
    (*v)[(*n)++] = x;
}

/* The edit script of old[o0..o1) -> new[w0..w1). */
static void middle(const line *a, size_t o0, size_t o1, const line *b, size_t w0, size_t w1, op **v,
                   size_t *n, size_t *cap)
{
    size_t na = o1 - o0, nb = w1 - w0;
    uint32_t *t = NULL;
    if (na && nb && (na + 1) * (nb + 1) <= LCS_MAX) t = calloc((na + 1) * (nb + 1), sizeof *t);
    if (!t) {
        for (size_t i = o0; i < o1; i++) push(v, n, cap, (op){'-', i, w0});
        for (size_t j = w0; j < w1; j++) push(v, n, cap, (op){'+', o1, j});
        return;
    }
#define L(i, j) t[(i) * (nb + 1) + (j)]
    for (size_t i = na; i-- > 0;)
        for (size_t j = nb; j-- > 0;)
            L(i, j) = same(&a[o0 + i], &b[w0 + j]) ? L(i + 1, j + 1) + 1
                      : L(i + 1, j) >= L(i, j + 1) ? L(i + 1, j)
                                                   : L(i, j + 1);
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        if (i < na && j < nb && same(&a[o0 + i], &b[w0 + j])) {
            push(v, n, cap, (op){' ', o0 + i++, w0 + j++});
        } else if (j == nb || (i < na && L(i + 1, j) >= L(i, j + 1))) {
            push(v, n, cap, (op){'-', o0 + i++, w0 + j});
        } else {
            push(v, n, cap, (op){'+', o0 + i, w0 + j++});
        }
    }
#undef L
    free(t);
}

static void put_line(FILE *out, bool color, char t, const line *l)
{
    const char *c = !color ? "" : t == '-' ? "\033[31m" : t == '+' ? "\033[32m" : "";
    fprintf(out, "  %s%c", c, t);
    safe_write(out, l->p, l->n, SAFE_LINE); /* the agent's text: a line stays one line */
    fprintf(out, "%s\n", color && t != ' ' ? "\033[0m" : "");
}

static void new_file(FILE *out, bool color, const char *path, const char *text, size_t n,
                     int max_lines)
{
    line *b;
    size_t nb = split(text, n, &b);
    fprintf(out, "  %s+++ %s (new file, %zu line%s)%s\n", color ? "\033[1m" : "", safe_line(path),
            nb, nb == 1 ? "" : "s", color ? "\033[0m" : "");
    size_t show = nb < NEW_HEAD ? nb : NEW_HEAD;
    if ((int)show > max_lines) show = (size_t)max_lines;
    for (size_t i = 0; i < show; i++) put_line(out, color, '+', &b[i]);
    if (show < nb) fprintf(out, "  … %zu more line%s\n", nb - show, nb - show == 1 ? "" : "s");
    free(b);
}

void render_diff(FILE *out, bool color, const char *path, const char *old_text, size_t old_n,
                 const char *new_text, size_t new_n, int max_lines)
{
    if (!old_text) {
        new_file(out, color, path, new_text, new_n, max_lines);
        return;
    }
    line *a, *b;
    size_t na = split(old_text, old_n, &a), nb = split(new_text, new_n, &b);
    size_t pre = 0, suf = 0;
    while (pre < na && pre < nb && same(&a[pre], &b[pre])) pre++;
    while (suf < na - pre && suf < nb - pre && same(&a[na - 1 - suf], &b[nb - 1 - suf])) suf++;
    op *v = NULL;
    size_t n = 0, cap = 0;
    size_t lead = pre < CONTEXT ? pre : CONTEXT, tail = suf < CONTEXT ? suf : CONTEXT;
    for (size_t i = pre - lead; i < pre; i++) push(&v, &n, &cap, (op){' ', i, i});
    middle(a, pre, na - suf, b, pre, nb - suf, &v, &n, &cap);
    for (size_t k = 0; k < tail; k++) push(&v, &n, &cap, (op){' ', na - suf + k, nb - suf + k});
    const char *bold = color ? "\033[1m" : "", *cyan = color ? "\033[36m" : "",
               *off = color ? "\033[0m" : "";
    if (pre == na && pre == nb) {
        fprintf(out, "  %s%s: no changes%s\n", bold, safe_line(path), off);
        goto out;
    }
    fprintf(out, "  %s--- %s\n  +++ %s%s\n", bold, safe_line(path), safe_line(path), off);
    int shown = 0;
    size_t more = 0;
    for (size_t k = 0; k < n;) {
        while (k < n && v[k].t == ' ') k++; /* the next change */
        if (k == n) break;
        size_t start = k >= CONTEXT ? k - CONTEXT : 0, last = k;
        /* A hunk goes on while the next change is within two contexts of the last one. */
        for (size_t q = k + 1; q < n && q - last <= 2 * CONTEXT; q++)
            if (v[q].t != ' ') last = q;
        size_t end = last + 1 + CONTEXT < n ? last + 1 + CONTEXT : n;
        size_t oc = 0, wc = 0;
        for (size_t q = start; q < end; q++) {
            oc += v[q].t != '+';
            wc += v[q].t != '-';
        }
        if (shown < max_lines)
            fprintf(out, "  %s@@ -%zu,%zu +%zu,%zu @@%s\n", cyan, v[start].o + 1, oc,
                    v[start].w + 1, wc, off);
        for (size_t q = start; q < end; q++) {
            if (shown < max_lines) {
                put_line(out, color, v[q].t, v[q].t == '+' ? &b[v[q].w] : &a[v[q].o]);
                shown++;
            } else if (v[q].t != ' ') {
                more++;
            }
        }
        k = end;
    }
    if (more) fprintf(out, "  … %zu more changed line%s\n", more, more == 1 ? "" : "s");
out:
    free(v);
    free(a);
    free(b);
}
