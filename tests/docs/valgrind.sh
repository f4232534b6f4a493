#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The README's agent and docs/client.md's shortest client (the first ```c block of each, as
# snippets.sh builds them) run under valgrind with nothing definitely or possibly lost, each
# in a real exchange: the agent driven by the official SDK (initialize, session/new, a prompt,
# EOF), the client against acp-agent. valgrind cannot run sanitized code, so both are built
# against a libacp of their own without sanitizers, configured here beside the ASan build.
#   usage: valgrind.sh SRCDIR WORKDIR ACP_AGENT_DIR NODE CC [LAUNCHER]
set -eu
src=$1 work=$2 agent_dir=$3 node=$4 cc=$5 launcher=${6:-}
plain=$work/plain
mkdir -p "$work"
cmake -S "$src" -B "$plain" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER="$cc" \
    ${launcher:+-DCMAKE_C_COMPILER_LAUNCHER=$launcher} >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; exit 1; }
cmake --build "$plain" --target acp -j 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
# The examples built as docs_snippets builds them, here against this libacp.
sh "$src/tests/docs/snippets.sh" "$src" "$work/snippets" "$cc" \
    "-g -I$src/include -I$plain/include $(pkg-config --cflags libuv jansson)" \
    "$plain/libacp.so -Wl,-rpath,$plain $(pkg-config --libs libuv jansson)" >"$work/snippets.log" ||
    { cat "$work/snippets.log"; exit 1; }
hello=$work/snippets/README.md-1 client=$work/snippets/docs_client.md-1
vg="valgrind --leak-check=full --errors-for-leak-kinds=definite,possible --error-exitcode=1 \
--track-origins=yes --child-silent-after-fork=yes"
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
fail=0
# The agent keeps sessions.db, and the client's acp-agent demo.db, in this fresh working
# directory: nothing another run left in /tmp can reach them.
echo "== README.md's agent, driven by the official SDK"
if ! out=$(cd "$run" && "$node" "$src/tests/docs/drive-agent.mjs" $vg "$hello"); then
    echo "FAIL: the README's agent (valgrind or the exchange failed; its report is above)"
    fail=1
fi
echo "$out"
case $out in *"hello"*"stop: end_turn"*) ;; *) echo "FAIL: no hello from the README's agent"; fail=1 ;; esac
echo "== docs/client.md's client against acp-agent"
if ! out=$(cd "$run" && PATH=$agent_dir:$PATH $vg "$client"); then
    echo "FAIL: the client (valgrind or the exchange failed; its report is above)"
    fail=1
fi
echo "$out"
case $out in *"stop: end_turn"*) ;; *) echo "FAIL: the client's prompt did not end"; fail=1 ;; esac
exit $fail
