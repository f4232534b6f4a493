#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Debian packages as a distribution ships them: built with dpkg-buildpackage from a copy of
# the source (scripts/deb.sh, which fails on lintian errors), unpacked with dpkg -x into a
# scratch root (nothing is installed on the machine), then an application built against that
# root through pkg-config (PKG_CONFIG_SYSROOT_DIR; shared, then static with libacp.a) and through
# CMake (CMAKE_PREFIX_PATH; acp::acp and acp::acp_static), and run with LD_LIBRARY_PATH into it.
# Also: debian/control's build dependencies are all in scripts/deps.sh, and debian/changelog's
# version is the project's. Everything happens in its own temporary directory, removed at exit.
set -eu
src=${ACP_SOURCE:?}
fail() { echo "deb: $*" >&2; exit 1; }

# Build-Depends (minus debhelper-compat, which deps.sh's debhelper provides) ⊆ deps.sh's list.
deps=$(sed -n '/^pkgs="/,/"$/p' "$src/scripts/deps.sh" | tr -d '"' | sed 's/^pkgs=//')
for p in $(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$src/debian/control" | sed 's/^Build-Depends://; /^[A-Z]/d' |
    tr ',' '\n' | sed 's/(.*)//; s/[[:space:]]//g' | grep -v '^debhelper-compat$' | grep .); do
    echo " $deps " | tr '\n' ' ' | grep -q "[[:space:]]$p[[:space:]]" || fail "Build-Depends $p is not in scripts/deps.sh"
done
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
[ "$version" = "$(sed -n 's/.*project(libacp VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ] ||
    fail "debian/changelog's version $version is not CMakeLists.txt's"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/acp-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
JOBS=${JOBS:-2} "$src/scripts/deb.sh" "$tmp/out" "$tmp/build" >"$tmp/deb.log" 2>&1 || { cat "$tmp/deb.log" >&2; fail "scripts/deb.sh failed"; }
grep -E '^[EW]: ' "$tmp/deb.log" || true # lintian's warnings, for the log

root=$tmp/root
arch=$(dpkg --print-architecture)
for pkg in libacp1 libacp-dev acp-tools; do
    dpkg -x "$tmp/out/${pkg}_${version}_$arch.deb" "$root"
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=$root/usr/lib/$ma
for f in "$lib/libacp.so.1" "$lib/libacp.a" "$root/usr/bin/acp" "$root/usr/bin/acp-agent" \
    "$root/usr/share/man/man1/acp-agent.1.gz" "$root/usr/share/man/man1/acp.1.gz" \
    "$root/usr/share/man/man3/libacp.3.gz" "$root/usr/share/doc/libacp1/copyright" \
    "$root/usr/share/doc/libacp-dev/README.md" "$root/usr/share/doc/libacp-dev/agent.md" \
    "$root/usr/share/bash-completion/completions/acp" "$root/usr/share/zsh/vendor-completions/_acp"; do
    [ -e "$f" ] || [ -e "$f.gz" ] || fail "${f#"$root"} is in no package" # dh_compress: big docs gzipped
done
LD_LIBRARY_PATH=$lib "$root/usr/bin/acp-agent" --version | grep -q "acp-agent $version" || fail "acp-agent --version"

# pkg-config: the .pc says where Debian puts things; the sysroot maps them into the root.
export PKG_CONFIG_PATH="$lib/pkgconfig"
[ "$(pkg-config --variable=libdir acp)" = "/usr/lib/$ma" ] || fail "acp.pc: libdir is not /usr/lib/$ma"
[ "$(pkg-config --variable=includedir acp)" = "/usr/include" ] || fail "acp.pc: includedir is not /usr/include"
export PKG_CONFIG_SYSROOT_DIR="$root"

sh "$src/tests/install/consumers.sh" "$tmp" "$root/usr" "$lib"
echo "deb: libacp1, libacp-dev, acp-tools $version build lintian-clean and serve pkg-config and CMake consumers"
