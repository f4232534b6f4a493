#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Examples are tests (issue 19, item 7): every ```c block of README.md and docs/*.md compiles, so
# a change to the API that breaks a documented example fails `make test`. The block's info
# string says what it is:
#   ```c            a complete program: compiled and linked against libacp (CFLAGS, LIBS)
#   ```c fragment   declarations and functions (no main): compiled, not linked, after every
#                   public header and <errno.h> <signal.h> <stdio.h> <stdlib.h> <string.h>
#   ```c file=PATH  the text of PATH (from the source root; its first line left out when it is
#                   the SPDX line), byte for byte; PATH is built and run by a test of its own
# Each block is compiled under a #line directive, so the compiler's messages name the document
# and line of the snippet itself (README.md:31: error: ...).
#
#   snippets.sh SRCDIR OUTDIR CC "CFLAGS" "LIBS"
# writes the k-th ```c block of DOC to OUTDIR/DOC-k.c ('/' in DOC as '_') and one line per block
# to OUTDIR/manifest (DOC LINE KIND FILE); then compares and compiles every block (a program
# into OUTDIR/DOC-k) and exits 1 naming each one that fails. CFLAGS: include directories
# (libacp's, jansson's, libuv's) and the library's sanitizers; the warnings are this script's.
set -u
src=$1 out=$2

extract() {
    rm -rf "$out" && mkdir -p "$out" && touch "$out/manifest" || exit 1
    (cd "$src" && ls README.md docs/*.md) | while read -r doc; do
        awk -v doc="$doc" -v out="$out" '
            # A fence opens a block of any language; only c blocks are kept.
            /^```/ && !open { open = 1; kept = 0
                if ($0 ~ /^```c( |$)/) {
                    info = substr($0, 5); sub(/^ +/, "", info)
                    kind = info == "" ? "program" : info
                    if (kind != "program" && kind != "fragment" && kind !~ /^file=/) {
                        printf "%s:%d: unknown info string \"```c %s\"\n", doc, FNR, info > "/dev/stderr"
                        bad = 1
                    }
                    name = doc; gsub("/", "_", name)
                    file = out "/" name "-" (++k) ".c"
                    printf "%s %d %s %s\n", doc, FNR + 1, kind, file >> (out "/manifest")
                    if (kind !~ /^file=/) printf "#line %d \"%s\"\n", FNR + 1, doc > file
                    else printf "" > file
                    kept = 1
                }
                next
            }
            /^```/ && open { open = 0; if (kept) close(file); next }
            open && kept { print > file }
            END { exit bad }' "$src/$doc" || exit 1
    done
}

extract || exit 1

cc=$3 cflags="-Wall -Wextra -Wno-unused-parameter -Werror $4" libs=$5
prelude=$out/prelude.h
{
    for h in "$src"/include/acp/*.h; do echo "#include \"acp/${h##*/}\""; done
    echo '#include "acp/version.h"'
    for h in errno signal stdio stdlib string; do echo "#include <$h.h>"; done
} >"$prelude"
failed=0
while read -r doc line kind file; do
    log=$file.log
    case $kind in
    program)
        # shellcheck disable=SC2086 # flags are words
        $cc $cflags "$file" -o "${file%.c}" $libs >"$log" 2>&1 ;;
    fragment)
        # shellcheck disable=SC2086
        $cc $cflags -Wno-unused-function -Wno-unused-variable -fsyntax-only \
            -include "$prelude" "$file" >"$log" 2>&1 ;;
    file=*)
        path=$src/${kind#file=}
        if head -n 1 "$path" | grep -q SPDX-License-Identifier; then
            tail -n +2 "$path"
        else
            cat "$path"
        fi | cmp -s - "$file" || {
            echo "differs from ${kind#file=}: the block is $file (diff them; the file is what is built and run)" >"$log"
            false
        } ;;
    esac
    if [ $? -ne 0 ]; then
        echo "$doc:$line: the \`\`\`c $kind block fails:"
        cat "$log"
        failed=$((failed + 1))
    else
        echo "$doc:$line: ok ($kind)"
    fi
done <"$out/manifest"
[ "$failed" -eq 0 ] || { echo "$failed snippet(s) fail"; exit 1; }
