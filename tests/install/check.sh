#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install this build tree into a scratch prefix (cmake --install --prefix): its acp.pc names
# that prefix, and consumers.sh builds and runs programs against it through CMake and pkg-config
# (shared and static). Then acp-uninstalled.pc: PKG_CONFIG_PATH=<build tree> builds against the
# build tree itself.
# Nothing outside its own temporary directory is written but the build tree's install manifest.
# Environment: ACP_BUILD, ACP_SOURCE (the test environment), ACP_SAN_FLAGS (consumers.sh).
set -eu
build=${ACP_BUILD:?} src=${ACP_SOURCE:?} san=${ACP_SAN_FLAGS:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/acp-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
p=$tmp/prefix
cmake --install "$build" --prefix "$p" >/dev/null
pc=$(find "$p" -name acp.pc)
libdir=${pc%/pkgconfig/acp.pc}
export PKG_CONFIG_PATH="${pc%/acp.pc}"
fail() { echo "install: $*" >&2; exit 1; }

# The installed .pc names this prefix, not the configured one.
[ "$(pkg-config --variable=libdir acp)" = "$libdir" ] || fail "libdir $(pkg-config --variable=libdir acp) is not $libdir"
[ "$(pkg-config --variable=includedir acp)" = "$p/include" ] || fail "includedir is not $p/include"
[ "$(pkg-config --modversion acp)" = "$(sed -n 's/.*project(libacp VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
    fail "acp.pc's version is not the project's"

sh "$src/tests/install/consumers.sh" "$tmp" "$p" "$libdir"
# acpConfigVersion.cmake: 1.x serves 1.0 (above), not 2.0.
! cmake -S "$src/tests/install/cmake" -B "$tmp/cmake2" -DCMAKE_PREFIX_PATH="$p" -DACP_WANT=2.0 >"$tmp/cmake2.log" 2>&1 ||
    fail "find_package(acp 2.0) accepted libacp 1.x"
grep -q 'version: 1\.' "$tmp/cmake2.log" || { cat "$tmp/cmake2.log" >&2; fail "find_package(acp 2.0) failed for another reason"; }

# The build tree's uninstalled .pc: pkg-config picks acp-uninstalled.pc and says so.
export PKG_CONFIG_PATH="$build"
pkg-config --uninstalled acp || fail "pkg-config did not use $build/acp-uninstalled.pc"
# shellcheck disable=SC2046,SC2086
cc $san "$src/tests/install/consumer.c" -o "$tmp/pc_uninstalled" $(pkg-config --cflags --libs acp)
LD_LIBRARY_PATH="$build" "$tmp/pc_uninstalled" "$tmp"
LD_LIBRARY_PATH="$build" ldd "$tmp/pc_uninstalled" | grep -q "libacp.so.1 => $build/" || fail "not linked with the build tree's libacp.so.1"
echo "install: CMake package, acp.pc (shared and static) and acp-uninstalled.pc all build and run"
