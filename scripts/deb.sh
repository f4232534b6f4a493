#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian packages (libacp1, libacp-dev, acp-tools) from a copy of the source tree and
# checks them with lintian; errors fail, warnings are printed.
#   scripts/deb.sh OUTDIR [WORKDIR]
# dpkg-buildpackage writes its results into the parent of the tree it builds, so the tree is a
# copy in WORKDIR (default OUTDIR/work; removed afterwards): nothing is written beside the
# source, and two builds with different WORKDIRs never meet. OUTDIR receives the .deb, .changes
# and .buildinfo files. JOBS: parallel compiles (default: nproc). ccache is used when present.
set -eu
out=${1:?usage: scripts/deb.sh OUTDIR [WORKDIR]}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${2:-$out/work}
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
tree=$work/libacp-$version
rm -rf "$work"
mkdir -p "$tree"
trap 'rm -rf "$work"' EXIT INT TERM

# The source as it is in the worktree (uncommitted edits included), without builds or npm's tree.
tar -C "$src" --exclude=./build --exclude=./node_modules --exclude=./.git -cf - . | tar -C "$tree" -xf -

launcher=""
command -v ccache >/dev/null 2>&1 && launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache"
(
    cd "$tree"
    DEB_BUILD_OPTIONS="parallel=${JOBS:-$(nproc)} ${DEB_BUILD_OPTIONS:-}" ACP_DEB_CMAKE_ARGS="$launcher" \
        dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1
) || { tail -n 60 "$work/build.log" >&2; echo "deb.sh: dpkg-buildpackage failed" >&2; exit 1; }

arch=$(dpkg --print-architecture)
changes=libacp_${version}_$arch.changes
for f in "$work"/*.deb "$work/$changes" "$work"/libacp_"${version}"_"$arch".buildinfo; do
    mv "$f" "$out/"
done

# lintian: exit status 2 on errors; warnings and below are shown but pass.
lintian --fail-on error --tag-display-limit 0 "$out/$changes" || {
    echo "deb.sh: lintian reports errors" >&2
    exit 1
}
ls "$out"/*.deb
