#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The library never aborts or exits (include/acp/api.h): no object of a layer archive may call
# abort, exit, _exit, _Exit, quick_exit or __assert_fail. One exception: rt/spawn.c's child,
# between fork and exec, must leave with _exit (returning into the parent's code would run it
# twice), and only with _exit.
# Usage: no_abort.sh NM ARCHIVE...
nm=$1
shift
bad=0
for a in "$@"; do
    if [ ! -f "$a" ]; then
        echo "missing archive: $a" >&2
        exit 1
    fi
    # "archive:object: U symbol" lines for the forbidden names
    "$nm" -A --undefined-only "$a" | while IFS= read -r line; do
        sym=${line##* }
        obj=${line%%: *}
        obj=${obj##*:}
        case $sym in
        abort | exit | _Exit | quick_exit | __assert_fail) ;;
        _exit) [ "$obj" = spawn.c.o ] && continue ;;
        *) continue ;;
        esac
        echo "$a: $obj calls $sym" >&2
        echo x
    done
done | grep -q x && bad=1
if [ $bad -ne 0 ]; then
    echo "the library must return an error instead (see include/acp/api.h)" >&2
    exit 1
fi
echo "no abort/exit in: $*"
