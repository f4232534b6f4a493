#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make demo: a short scripted tour of `acp` against `acp-agent` on a fresh session store in a
# temporary directory. Prints each command and its output; exits non-zero if any step fails.
#   scripts/demo.sh BUILD_DIR
set -eu

build=$(cd "${1:?usage: scripts/demo.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
for f in "$build/acp" "$build/acp-agent"; do
    [ -x "$f" ] || { echo "demo: $f is missing; run 'make' first" >&2; exit 1; }
done
node="$root/node_modules/.bin/node"
[ -x "$node" ] || node=$(command -v node) || { echo "demo: node not found; run 'make npm'" >&2; exit 1; }
node=$(readlink -f "$node")
everything="$root/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$everything" ] || { echo "demo: $everything is missing; run 'make npm'" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/acp-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP PIPE
agent="'$build/acp-agent' --store '$work/sessions.db'"
mcp="everything=$node $everything"

# `acp` below is the real binary with the demo's agent and working directory. Diagnostics
# (the agent's and its MCP servers' stderr) go to a log that is shown if a step fails.
log="$work/stderr.log"
acp() {
    "$build/acp" --agent "$agent" --cwd "$work" "$@" 2>>"$log" && return 0
    echo "demo: step failed: acp $*" >&2
    cat "$log" >&2
    exit 1
}
if [ -t 1 ]; then bold='\033[1m' cyan='\033[36m' off='\033[0m'; else bold='' cyan='' off=''; fi
say() { printf "\n${bold}# %s${off}\n" "$*"; }
show() {
    printf "${cyan}\$ acp"
    for a in "$@"; do
        case $a in *" "*) printf " '%s'" "$a" ;; *) printf ' %s' "$a" ;; esac
    done
    printf "${off}\n"
}
step() { show "$@"; acp "$@"; }

printf 'libacp demo: acp-agent with a fresh store in %s\n' "$work"
printf '(acp = %s --agent "acp-agent --store %s/sessions.db")\n' "$build/acp" "$work"

say "What the agent is and what it can do"
step info

say "A new session with an MCP server (server-everything over stdio)"
show new --mcp "everything=node .../server-everything/dist/index.js"
id=$(acp new --mcp "$mcp")
echo "$id"

say "The session's MCP servers, as the agent sees them (resume sends them again)"
show prompt -s "$id" --mcp "everything=node .../server-everything/dist/index.js" /mcp
acp prompt -s "$id" --mcp "$mcp" /mcp

say "A prompt: the echo engine streams the text back"
step prompt -s "$id" "Hello from the libacp demo"

say "A title (session_info_update) and a plan"
step prompt -s "$id" /title Demo session
step prompt -s "$id" /plan

say "Modes and config options, changed from the agent's side and kept with the session"
step prompt -s "$id" /mode ask
step prompt -s "$id" /write notes.txt "not in ask mode"
step prompt -s "$id" /set model echo-large
step prompt -s "$id" "twice"

say "Capability gating: acp takes notices but no compaction updates, so compaction arrives as a message"
step prompt -s "$id" /notice Indexing finished
step prompt -s "$id" /compact

say "Sessions in this directory, newest first"
step sessions

say "The conversation, replayed by session/load"
step history "$id"

say "Remote ACP: the same store served over WebSocket and Streamable HTTP (acp-agent --listen)"
printf 'demo-token\n' >"$work/token"
printf "${cyan}\$ acp-agent --listen 127.0.0.1:0 --token-file token --store .../sessions.db &${off}\n"
"$build/acp-agent" --listen 127.0.0.1:0 --port-file "$work/port" --token-file "$work/token" \
    --store "$work/sessions.db" 2>>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
i=0
while [ ! -s "$work/port" ]; do
    i=$((i + 1))
    [ $i -lt 100 ] && kill -0 "$server" 2>/dev/null || { echo "demo: acp-agent --listen did not start" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
done
port=$(cat "$work/port")
racp() {
    show --agent "$@"
    url=$1
    shift
    ACP_TOKEN=demo-token "$build/acp" --agent "$url" --cwd "$work" "$@" 2>>"$log" && return 0
    echo "demo: step failed: acp --agent $url $*" >&2
    cat "$log" >&2
    exit 1
}
racp "ws://127.0.0.1:$port/acp" prompt -s "$id" "Hello over a WebSocket"
racp "http://127.0.0.1:$port/acp" history "$id"
printf "${cyan}\$ kill -TERM %%acp-agent${off}   (stop accepting, finish turns, commit, exit 0)\n"
kill -TERM "$server"
wait "$server"
trap 'rm -rf "$work"' EXIT

say "A model engine: acp-agent --engine openai, here against the tests' scripted OpenAI-compatible server"
"$node" "$root/tests/engine-openai/fake-openai.mjs" >"$work/model" 2>>"$log" &
model=$!
trap 'kill "$model" 2>/dev/null; rm -rf "$work"' EXIT
i=0
until grep -q '^listening' "$work/model" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 100 ] && kill -0 "$model" 2>/dev/null || { echo "demo: the scripted model server did not start" >&2; exit 1; }
    sleep 0.1
done
url=$(sed -n 's/^listening //p' "$work/model")
show --agent "acp-agent --engine openai --base-url $url --model demo" prompt "What is ACP?"
"$build/acp" --agent "'$build/acp-agent' --engine openai --base-url $url --model demo --store '$work/model.db'" \
    --cwd "$work" prompt "What is ACP?" 2>>"$log" || { echo "demo: step failed: the openai engine" >&2; cat "$log" >&2; exit 1; }
kill -TERM "$model"
wait "$model" || true
trap 'rm -rf "$work"' EXIT

say "The unstable session layer (acp-agent --unstable-off turns each part off): fork, title, archive, status"
show fork "$id"
fork=$(acp fork "$id")
echo "$fork"
step prompt -s "$fork" "Only in the fork"
step title "$fork" "A fork of the demo"
step archive "$fork"
step sessions --archived include
step status "$fork"
step delete "$fork"

say "acp check: the agent against the specification (MUST, SHOULD, MAY), here the session/list checks"
step check --no-prompt --only 'list.*'

say "Resume (no replay), close, delete"
step resume "$id"
step close "$id"
step delete "$id"
step sessions

printf '\ndemo: every step succeeded\n'
