#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install this build tree into a scratch prefix (cmake --install --prefix) and build and run
# tests/install/consumer.c against it the ways an application does:
#   - find_package(acp 1.0 REQUIRED COMPONENTS static): acp::acp and acp::acp_static;
#   - pkg-config --cflags --libs acp (the shared library);
#   - pkg-config --static --cflags --libs acp, with the installation's libacp.so removed so
#     that -lacp is libacp.a: Requires.private/Libs.private must cover every object of it;
#   - acp-uninstalled.pc: PKG_CONFIG_PATH=<build tree> builds against the build tree itself.
# Nothing outside its own temporary directory is written but the build tree's install manifest.
# Environment: ACP_BUILD, ACP_SOURCE (the test environment), ACP_SAN_FLAGS (the sanitizer flags
# the tree was built with, so that programs linking it carry the same runtime).
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

# CMake: a consumer project configured against the prefix, both targets.
cmake -S "$src/tests/install/cmake" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "find_package(acp) failed"; }
cmake --build "$tmp/cmake" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "the CMake consumer does not build"; }
LD_LIBRARY_PATH="$libdir" "$tmp/cmake/consumer_shared" "$tmp"
ldd "$tmp/cmake/consumer_shared" | grep -q "libacp.so.1 => $libdir/" || fail "acp::acp is not the installed libacp.so.1"
"$tmp/cmake/consumer_static" "$tmp"
! ldd "$tmp/cmake/consumer_static" | grep -q libacp || fail "acp::acp_static links libacp.so"

# pkg-config, shared.
# shellcheck disable=SC2046,SC2086
cc $san "$src/tests/install/consumer.c" -o "$tmp/pc_shared" $(pkg-config --cflags --libs acp)
LD_LIBRARY_PATH="$libdir" "$tmp/pc_shared" "$tmp"

# pkg-config, static: only libacp.a left to satisfy -lacp.
rm "$libdir/libacp.so"
# shellcheck disable=SC2046,SC2086
cc $san "$src/tests/install/consumer.c" -o "$tmp/pc_static" $(pkg-config --static --cflags --libs acp)
! ldd "$tmp/pc_static" | grep -q libacp || fail "the static link used libacp.so"
"$tmp/pc_static" "$tmp"

# The build tree's uninstalled .pc: pkg-config picks acp-uninstalled.pc and says so.
export PKG_CONFIG_PATH="$build"
pkg-config --uninstalled acp || fail "pkg-config did not use $build/acp-uninstalled.pc"
# shellcheck disable=SC2046,SC2086
cc $san "$src/tests/install/consumer.c" -o "$tmp/pc_uninstalled" $(pkg-config --cflags --libs acp)
LD_LIBRARY_PATH="$build" "$tmp/pc_uninstalled" "$tmp"
LD_LIBRARY_PATH="$build" ldd "$tmp/pc_uninstalled" | grep -q "libacp.so.1 => $build/" || fail "not linked with the build tree's libacp.so.1"
echo "install: CMake package, acp.pc (shared and static) and acp-uninstalled.pc all build and run"
