#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# DESIGN.md: an engine is built on nothing but the public headers; what it needs and agent.h
# lacks is a gap in the API, fixed there. So every #include in engines/NAME/ names a public
# header (acp/...), the engine's own (engines/NAME/...) or a system one; a header of ours from
# anywhere else (agent/internal.h, rpc/lasterr.h, another engine's) fails, naming file and line.
#   usage: public_headers.sh SRCDIR
src=$1 bad=0
for f in "$src"/engines/*/*.[ch]; do
    e=${f#"$src"/engines/}
    e=${e%%/*}
    awk -v e="$e" -v f="${f#"$src"/}" '
        /^[ \t]*#[ \t]*include[ \t]*["<]/ {
            p = $0; sub(/^[^"<]*["<]/, "", p); q = $0 ~ /include[ \t]*"/; sub(/[">].*/, "", p)
            if (p ~ /^acp\// || index(p, "engines/" e "/") == 1) next
            if (q || p ~ /^(rpc|rt|store|net|mcp|agent|client|tools|engines|fuzz|bench|tests)\//) {
                printf "%s:%d: includes \"%s\", not a public header (include/acp/)\n", f, FNR, p
                bad = 1
            }
        }
        END { exit bad }' "$f" || bad=1
done
exit $bad
