#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# libacp's ABI against the committed baseline abi/libacp.abi (docs/abi.md).
#   abi.sh check  LIBACP_SO GENERATED_INCLUDE_DIR   fails on an incompatible change
#   abi.sh update LIBACP_SO GENERATED_INCLUDE_DIR   rewrites the baseline (make abi-baseline)
# The .so needs DWARF (a Debug or RelWithDebInfo build; sanitizers make no difference to it).
# Only types declared in include/acp/ count (--headers-dir); absolute paths, line numbers and
# DT_NEEDED are left out so the baseline is the same from any checkout and any rebuild of one
# source, with or without ccache.
set -eu
mode=$1 so=$2 gen=$3
src=${ACP_SOURCE:-.}
baseline=$src/abi/libacp.abi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v abidw >/dev/null || { echo "abi: abidw not found: install abigail-tools (scripts/deps.sh)" >&2; exit 1; }

abidw --headers-dir "$src/include/acp" --headers-dir "$gen/acp" --drop-private-types \
    --no-corpus-path --no-comp-dir-path --no-show-locs --no-elf-needed --drop-undefined-syms \
    --type-id-style hash --out-file "$tmp/raw.abi" "$so"
# Each translation unit's path as the source tree names it (agent/agent.c), whether the compiler
# recorded it absolute or, under ccache's base_dir, relative to the build directory.
abs=$(cd "$src" && pwd) real=$(cd "$src" && pwd -P)
sed -E "/^ *<abi-instr /{s#path='($abs/|$real/|(\.\./)+)#path='#}" "$tmp/raw.abi" >"$tmp/now.abi"

if [ "$mode" = update ]; then
    mkdir -p "$(dirname "$baseline")"
    cp "$tmp/now.abi" "$baseline"
    echo "abi: wrote $baseline ($(grep -c '<elf-symbol ' "$baseline") functions, $(wc -c <"$baseline") bytes)"
    exit 0
fi
[ -f "$baseline" ] || { echo "abi: no baseline $baseline: run make abi-baseline" >&2; exit 1; }

# What may change within 1.x without breaking a program built against the baseline:
# - a struct that begins with struct_size (include/acp/api.h) grows at its end;
# - so does one the library allocates and hands out only by const pointer (api.h, "the
#   library's"): a program never has one of its own size;
# - other libraries' types (libuv's uv_loop_s, jansson's json_t) are theirs to version: ours
#   only ever hand them over by pointer.
# Structs that may grow at their end: those that begin with struct_size (acp/api.h) and the
# library's own, handed out by const pointer.
grown=$(awk "
    /<class-decl name='/ { split(\$0, q, \"'\"); name = q[2]; first = 1; next }
    first && /<var-decl name='struct_size'/ { print name }
    /<var-decl / { first = 0 }" "$baseline" | sort -u | paste -sd '|')
grown="$grown|acp_client_reply|acp_update|acp_terminal_exit|acp_error"
# Other libraries' types (uv_loop_s, json_t) are theirs to change.
printf '[suppress_type]\n  type_kind = struct\n  name_not_regexp = ^acp_\n' >"$tmp/allowed.suppr"

rc=0
abidiff --suppressions "$tmp/allowed.suppr" --no-show-locs "$baseline" "$tmp/now.abi" >"$tmp/diff" || rc=$?
cat "$tmp/diff"
[ $((rc & 3)) = 0 ] || { echo "abi: abidiff failed (exit $rc)" >&2; exit 1; }
removed=$(sed -nE 's/^(Functions|Variables) changes summary: ([0-9]+) Removed.*/\2/p' "$tmp/diff" |
    awk '{ n += $1 } END { print n + 0 }')
# abidiff calls a retyped member or a changed return type a change, not an incompatible one, and
# it reports a struct grown at its end the same way as one changed in the middle. So every line
# of the report is judged here: a struct may only change size, and take members at its end,
# when it is one of $grown; any member whose type, offset or name changed, any deletion, and
# any changed type of a function (return or parameter) breaks programs built against the
# baseline.
awk -v grown="^($grown)\$" '
    match($0, /\x27struct acp_[a-z0-9_]+\x27/) { cur = substr($0, RSTART + 8, RLENGTH - 9) }
    /type size changed from/ || /data members? insertion/ {
        if (cur !~ grown && !said[cur]++) print "abi: " cur " changed size or took a member, and it is frozen"
        next
    }
    /offset changed|type of .* changed|deletion|name changed|entity changed|return type changed|changed from|was removed/ {
        print "abi: " $0
    }' "$tmp/diff" >"$tmp/broken"
if [ $((rc & 8)) != 0 ] || [ "$removed" != 0 ] || [ -s "$tmp/broken" ]; then
    cat "$tmp/broken" >&2
    echo "abi: INCOMPATIBLE with abi/libacp.abi (abidiff exit $rc): a program built against libacp.so.1 breaks." >&2
    echo "abi: revert the change, or, if a new major version is intended, see docs/abi.md and run make abi-baseline." >&2
    exit 1
fi
if [ $((rc & 4)) != 0 ]; then
    echo "abi: compatible additions since the baseline; record them with make abi-baseline"
else
    echo "abi: same ABI as abi/libacp.abi ($(grep -c '<elf-symbol ' "$baseline") functions)"
fi
