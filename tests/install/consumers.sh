#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds and runs tests/install/consumer.c against an installed libacp the ways an application
# does (for tests/install/check.sh: cmake --install; tests/deb/check.sh: unpacked packages):
#   - find_package(acp 1.0 REQUIRED COMPONENTS static) with CMAKE_PREFIX_PATH=PREFIX: acp::acp
#     and acp::acp_static;
#   - pkg-config --cflags --libs acp (the shared library);
#   - pkg-config --static --cflags --libs acp, after removing LIBDIR/libacp.so so that -lacp is
#     libacp.a: Requires.private/Libs.private must cover every object of it.
#   consumers.sh TMP PREFIX LIBDIR
# TMP: a scratch directory of the caller's. The caller exports PKG_CONFIG_PATH (and
# PKG_CONFIG_SYSROOT_DIR) for the installation. ACP_SAN_FLAGS: the sanitizer flags libacp was
# built with, so that programs linking it carry the same runtime.
set -eu
tmp=$1 prefix=$2 lib=$3
src=${ACP_SOURCE:?} san=${ACP_SAN_FLAGS:-}
consumer=$src/tests/install/consumer.c
fail() { echo "consumers: $*" >&2; exit 1; }

cmake -S "$src/tests/install/cmake" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" >"$tmp/cmake.log" 2>&1 ||
    { cat "$tmp/cmake.log" >&2; fail "find_package(acp) failed"; }
cmake --build "$tmp/cmake" >"$tmp/cmake-build.log" 2>&1 || { cat "$tmp/cmake-build.log" >&2; fail "the CMake consumer does not build"; }
LD_LIBRARY_PATH=$lib "$tmp/cmake/consumer_shared" "$tmp"
LD_LIBRARY_PATH=$lib ldd "$tmp/cmake/consumer_shared" | grep -q "libacp.so.1 => $lib/" || fail "acp::acp is not $lib/libacp.so.1"
"$tmp/cmake/consumer_static" "$tmp"
! ldd "$tmp/cmake/consumer_static" | grep -q libacp || fail "acp::acp_static links libacp.so"

# shellcheck disable=SC2046,SC2086
cc $san "$consumer" -o "$tmp/pc_shared" $(pkg-config --cflags --libs acp)
LD_LIBRARY_PATH=$lib "$tmp/pc_shared" "$tmp"
LD_LIBRARY_PATH=$lib ldd "$tmp/pc_shared" | grep -q "libacp.so.1 => $lib/" || fail "pkg-config: not linked with $lib/libacp.so.1"

rm "$lib/libacp.so"
# shellcheck disable=SC2046,SC2086
cc $san "$consumer" -o "$tmp/pc_static" $(pkg-config --static --cflags --libs acp)
! ldd "$tmp/pc_static" | grep -q libacp || fail "pkg-config --static: linked libacp.so"
"$tmp/pc_static" "$tmp"
