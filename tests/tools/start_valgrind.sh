#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The programs' start and stop paths under valgrind, on a release build without sanitizers
# (issue 21, item 1): a libuv handle whose memory is reused before its close callback runs
# (a block-scoped handle, one freed in the close call) aborts in uv__finish_close or shows as
# an invalid read here, while ASan's bigger frames hid it. Builds acp-agent and acp in
# BUILD/valgrind-tools (ccache makes every run after the first quick).
# usage: start_valgrind.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1
out=$2/valgrind-tools
command -v valgrind >/dev/null || { echo "valgrind is not installed (scripts/deps.sh)"; exit 1; }
launcher=
command -v ccache >/dev/null && launcher=-DCMAKE_C_COMPILER_LAUNCHER=ccache
cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=Release -DACP_ASAN=OFF $launcher >"$out.log" 2>&1 ||
    { cat "$out.log"; exit 1; }
cmake --build "$out" --target acp-agent acp_tool -j2 >>"$out.log" 2>&1 || { tail -50 "$out.log"; exit 1; }

tmp=$(mktemp -d)
pids=
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
vg="valgrind -q --error-exitcode=99 --exit-on-first-error=yes --track-fds=no"
fails=0

# runs NAME CMD...: the command must exit 0 with no valgrind error.
check() {
    name=$1
    shift
    if "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; then
        echo "ok   $name"
    else
        echo "FAIL $name (exit $?)"
        tail -30 "$tmp/$name.err"
        fails=$((fails + 1))
    fi
}

# listen NAME ARGS...: starts acp-agent --listen under valgrind, waits for its port file,
# then SIGTERM; it must exit 0.
listen() {
    name=$1
    shift
    # A long path (the crash needed 25+ characters: main's later locals reused the slot).
    pf="$tmp/a-port-file-with-a-rather-long-name-$name.port"
    $vg "$out/acp-agent" --store "$tmp/$name.db" --listen 127.0.0.1:0 --port-file "$pf" "$@" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" &
    p=$!
    pids="$pids $p"
    i=0
    while [ ! -s "$pf" ] && kill -0 "$p" 2>/dev/null && [ $i -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    sleep 0.3
    kill -TERM "$p" 2>/dev/null || true
    if wait "$p" && [ -s "$pf" ]; then
        echo "ok   $name"
    else
        echo "FAIL $name"
        tail -30 "$tmp/$name.err"
        fails=$((fails + 1))
    fi
}

openai="--engine openai --base-url http://127.0.0.1:1/v1 --model m"
listen listen-echo
listen listen-openai $openai
check stdio-echo sh -c "$vg '$out/acp-agent' --store '$tmp/e.db' </dev/null"
check stdio-openai sh -c "$vg '$out/acp-agent' --store '$tmp/o.db' $openai </dev/null"
check acp-version $vg "$out/acp" --version
check acp-info $vg "$out/acp" --agent "$out/acp-agent --store $tmp/i.db" info
[ $fails = 0 ]
