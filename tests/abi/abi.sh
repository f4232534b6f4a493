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
grown=$(awk "
    /<class-decl name='/ { split(\$0, q, \"'\"); name = q[2]; first = 1; next }
    first && /<var-decl name='struct_size'/ { print name }
    /<var-decl / { first = 0 }" "$baseline" | sort -u | paste -sd '|')
grown="$grown|acp_client_reply|acp_update|acp_terminal_exit|acp_error"
{
    if [ -n "$grown" ]; then
        printf '[suppress_type]\n  type_kind = struct\n  name_regexp = ^(%s)$\n' "$grown"
        printf '  has_data_member_inserted_at = end\n  has_size_change = yes\n'
    fi
    printf '[suppress_type]\n  type_kind = struct\n  name_not_regexp = ^acp_\n'
} >"$tmp/allowed.suppr"

rc=0
abidiff --suppressions "$tmp/allowed.suppr" --no-show-locs "$baseline" "$tmp/now.abi" >"$tmp/diff" || rc=$?
cat "$tmp/diff"
# abidiff's exit status is a bit set: 1 error, 2 usage, 4 change, 8 incompatible change.
[ $((rc & 3)) = 0 ] || { echo "abi: abidiff failed (exit $rc)" >&2; exit 1; }
# Removed or changed functions and variables break programs; added ones do not.
broken=$(sed -nE 's/^(Functions|Variables) changes summary: ([0-9]+) Removed, ([0-9]+) Changed.*/\2 \3/p' "$tmp/diff" |
    awk '{ n += $1 + $2 } END { print n + 0 }')
if [ $((rc & 8)) != 0 ] || [ "$broken" != 0 ]; then
    echo "abi: INCOMPATIBLE with abi/libacp.abi (abidiff exit $rc): a program built against libacp.so.1 breaks." >&2
    echo "abi: revert the change, or, if a new major version is intended, see docs/abi.md and run make abi-baseline." >&2
    exit 1
fi
if [ $((rc & 4)) != 0 ]; then
    echo "abi: compatible additions since the baseline; record them with make abi-baseline"
else
    echo "abi: same ABI as abi/libacp.abi ($(grep -c '<elf-symbol ' "$baseline") functions)"
fi
