#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# own_curl.c built as an application builds it: libacp.a through `pkg-config --static` on this
# build tree's acp-uninstalled.pc, next to the program's own libcurl (pkg-config libcurl), and
# run. Skipped (77) in a tree without acp-uninstalled.pc.
# Usage: pkgconfig_static.sh BUILD_DIR CC [FLAGS...]   (FLAGS: the build's sanitizer flags)
set -eu
build=$1 cc=$2
shift 2
src=${ACP_SOURCE:-.}
[ -f "$build/acp-uninstalled.pc" ] || { echo "no $build/acp-uninstalled.pc: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

export PKG_CONFIG_PATH="$build${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
# -lacp would take libacp.so, which sits beside libacp.a: name the archive.
libs=$(pkg-config --static --libs acp | sed -E 's/(^| )-lacp( |$)/\1-l:libacp.a\2/')
# shellcheck disable=SC2046,SC2086
"$cc" "$@" -std=c17 -D_GNU_SOURCE $(pkg-config --cflags acp libcurl) -o "$tmp/own_curl" \
    "$src/tests/symbols/own_curl.c" $libs $(pkg-config --libs libcurl) -lpthread
if readelf -d "$tmp/own_curl" | grep -q 'NEEDED.*libacp'; then
    echo "pkgconfig_static: the program needs libacp.so: pkg-config did not give libacp.a" >&2
    exit 1
fi
"$tmp/own_curl"
