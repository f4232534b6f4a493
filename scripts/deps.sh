#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages libacp needs, only those that are missing: to build and test it,
# and to build its own Debian packages (debian/control's Build-Depends are a subset of this list;
# tests/deb checks it). zsh: tests/tools checks that the zsh completions parse.
# Safe to run any number of times. Not root: prints the command instead.
set -eu

pkgs="build-essential cmake pkg-config clang libclang-rt-14-dev clang-format
      libjansson-dev libuv1-dev libcurl4-openssl-dev libsqlite3-dev sqlite3 libpq-dev
      libcmocka-dev postgresql valgrind nodejs tmux procps
      libnghttp2-dev libwslay-dev libssl-dev libedit-dev
      debhelper dpkg-dev lintian groff-base abigail-tools zsh"

missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
# npm may come from Debian or from Node's own installer; only the command matters.
command -v npm >/dev/null 2>&1 || missing="$missing npm"

[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "libacp needs:$missing" >&2
    echo "run: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
