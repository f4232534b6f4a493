/* SPDX-License-Identifier: Apache-2.0 */
/* Text from the agent made harmless for a terminal (issue 13, item 5). A hostile agent's
 * message, title, tool title, plan entry, notice, error or diff must not retitle the window,
 * clear the screen, write the clipboard (OSC 52), draw a hyperlink that lies (OSC 8), or
 * reorder what is shown (bidi overrides, "Trojan Source"). So everything a terminal would act
 * on instead of showing is written visibly, and nothing is dropped:
 *
 *   C0 controls and DEL            \x1b \x07 \x7f ...; CR as \r (a CR right before LF passes:
 *                                  a CRLF line end moves nothing); LF and TAB pass, except in
 *                                  a one-line field (SAFE_LINE), where LF is \n
 *   C1 controls U+0080-U+009F      \u009b ... (8-bit CSI, OSC, ST to some terminals)
 *   bidi embeddings, overrides     \u202e ... (U+202A-U+202E, U+2066-U+2069; the marks
 *   and isolates                   U+200E, U+200F, U+061C pass: they only nudge RTL text)
 *   bytes that are not UTF-8       \xff ...
 *
 * The escapes are printable ASCII, so making a made-safe text safe again changes nothing.
 * Backslashes are not doubled: the point is a harmless screen, not a reversible encoding.
 * --json output never goes through here: it stays byte-exact. */
#ifndef ACP_TOOL_SAFE_H
#define ACP_TOOL_SAFE_H

#include <stdio.h>

#include "acp/json.h"

typedef enum safe_mode {
    SAFE_TEXT, /* a message or a block: LF and TAB pass */
    SAFE_LINE, /* a field shown on one line (title, name, id, path): LF is \n, TAB passes */
} safe_mode;

/* Appends s[0..n) made safe to b: 0, or ACP_ENOMEM. */
int safe_append(acp_buf *b, const char *s, size_t n, safe_mode mode);
/* Writes s[0..n) made safe to f. */
void safe_write(FILE *f, const char *s, size_t n, safe_mode mode);
/* s made safe as one line (SAFE_LINE), for a printf argument; NULL stays NULL. The text lives
 * in one of SAFE_SLOTS buffers that later calls reuse in turn, so one printf may take up to
 * SAFE_SLOTS of them (acp is one thread). On allocation failure: "?". */
#define SAFE_SLOTS 8
const char *safe_line(const char *s);
/* Frees the buffers of safe_line (at exit; they are reused until then). */
void safe_free(void);

#endif
