#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every tracked source file (C, headers, scripts, tests, build files) carries the SPDX line in
# its first lines, and LICENSE is the Apache-2.0 text. Run from the source tree.
set -eu
cd "${ACP_SOURCE:-.}"
grep -q 'Apache License' LICENSE && grep -q 'Version 2.0, January 2004' LICENSE || {
    echo "LICENSE is not the Apache-2.0 text" >&2; exit 1; }
bad=0
files=$(git ls-files 2>/dev/null || find . -type f -not -path './build/*' -not -path './node_modules/*')
for f in $files; do
    case "$f" in
    *.c | *.h | *.in | *.mjs | *.js | *.sh | *.py | *.cmake | */CMakeLists.txt | CMakeLists.txt | Makefile | .ci/run | debian/rules | *.1 | *.3) ;;
    *) continue ;;
    esac
    case "$f" in fuzz/corpus/* | tests/fixtures/*) continue ;; esac
    [ -f "$f" ] || continue
    head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || { echo "no SPDX line: $f" >&2; bad=1; }
done
[ "$bad" = 0 ] && echo "licence: every source file has its SPDX line"
exit "$bad"
