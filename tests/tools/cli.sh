#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The command-line conventions of acp and acp-agent (issue 25 item 8): --opt=value for the
# options of every kind, --log-level debug tracing the wire with secrets redacted, and the
# bash and zsh completions (they load, complete a command and values, and name every option
# --help names). Usage: cli.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 bin=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/acp-cli.XXXXXX")
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
fail() { echo "cli: $*" >&2; exit 1; }

# --opt=value: a store, a size, milliseconds, a list, a level; then the server's options.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' |
    "$bin/acp-agent" --store="$tmp/s.db" --max-read=1M --lease-ttl=5000 --unstable-off=all \
        --log-level=error --engine=echo >"$tmp/out" 2>"$tmp/err" || fail "acp-agent --opt=value refused: $(cat "$tmp/err")"
grep -q '"protocolVersion":1' "$tmp/out" || fail "no initialize answer with --opt=value"
grep -q '"providers"' "$tmp/out" && fail "--unstable-off=all did not turn the unstable features off"
echo tok >"$tmp/token"
"$bin/acp-agent" --store="$tmp/s.db" --listen=127.0.0.1:0 --port-file="$tmp/port" \
    --token-file="$tmp/token" --max-message=1M --idle-timeout=2.5 --root="$tmp" \
    --allow-origin=http://x --log-level=warn 2>"$tmp/err" &
pid=$!
i=0
while [ ! -s "$tmp/port" ]; do
    i=$((i + 1)); [ $i -lt 300 ] || fail "acp-agent --listen=... did not listen: $(cat "$tmp/err")"
    sleep 0.1
done
kill -TERM "$pid"; wait "$pid" || fail "acp-agent --listen=... did not exit 0"
pid=
grep -q 'listening on' "$tmp/err" && fail "--log-level=warn still logs 'listening on'"
"$bin/acp-agent" --max-read=lots 2>/dev/null && fail "a bad --max-read= value was taken"
"$bin/acp-agent" --tls-cert=x 2>"$tmp/err" && fail "a server option without --listen was taken"
grep -q 'need --listen' "$tmp/err" || fail "no 'need --listen': $(cat "$tmp/err")"
"$bin/acp-agent" --store 2>"$tmp/err" && fail "--store without a value was taken"
grep -q -- '--store needs a value' "$tmp/err" || fail "no '--store needs a value'"

# --log-level debug: both directions on stderr, env and header values and tokens redacted.
cat >"$tmp/in" <<'JSON'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}
{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[{"name":"e","command":"/bin/false","args":[],"env":[{"name":"K","value":"SECRET-ENV"}]},{"type":"http","name":"h","url":"http://127.0.0.1:9/","headers":[{"name":"Authorization","value":"Bearer SECRET-HDR"}]}]}}
{"jsonrpc":"2.0","id":3,"method":"providers/set","params":{"id":"p","headers":{"X-Api-Key":"SECRET-PROV"},"apiKey":"SECRET-KEY"}}
JSON
"$bin/acp-agent" --store="$tmp/s.db" --log-level=debug <"$tmp/in" >/dev/null 2>"$tmp/err" || true
grep -q 'acp-agent: debug: <- {"jsonrpc":"2.0","id":1,"method":"initialize"' "$tmp/err" || fail "no '<-' trace line"
grep -q 'acp-agent: debug: -> {"jsonrpc":"2.0","id":1,"result"' "$tmp/err" || fail "no '->' trace line"
grep -q 'SECRET' "$tmp/err" && fail "a secret reached the trace: $(grep SECRET "$tmp/err")"
grep -q '<redacted>' "$tmp/err" || fail "nothing redacted"
HOME=$tmp "$bin/acp" --agent "$bin/acp-agent --store=$tmp/s.db" --log-level=debug info >/dev/null 2>"$tmp/err" ||
    fail "acp --log-level=debug info failed: $(cat "$tmp/err")"
grep -q 'acp: debug: -> {"jsonrpc":"2.0","id":0,"method":"initialize"' "$tmp/err" || fail "acp: no '->' trace line"
"$bin/acp" --log-level=loud info 2>/dev/null && fail "acp took --log-level=loud"

# bash: the completion loads and completes.
bash -c '
    . "$1/completions/acp.bash"; . "$1/completions/acp-agent.bash"
    COMP_WORDS=(acp prom); COMP_CWORD=1; _acp; [ "${COMPREPLY[*]}" = prompt ] || { echo "acp prom -> ${COMPREPLY[*]}"; exit 1; }
    COMP_WORDS=(acp --json tr); COMP_CWORD=2; _acp; [ "${COMPREPLY[*]}" = trace ] || { echo "acp --json tr -> ${COMPREPLY[*]}"; exit 1; }
    COMP_WORDS=(acp --log-level d); COMP_CWORD=2; _acp; [ "${COMPREPLY[*]}" = debug ] || { echo "--log-level d -> ${COMPREPLY[*]}"; exit 1; }
    COMP_WORDS=(acp --color=n); COMP_CWORD=1; _acp; [ "${COMPREPLY[*]}" = --color=never ] || { echo "--color=n -> ${COMPREPLY[*]}"; exit 1; }
    COMP_WORDS=(acp-agent --engine=o); COMP_CWORD=1; _acp_agent; [ "${COMPREPLY[*]}" = --engine=openai ] || { echo "--engine=o -> ${COMPREPLY[*]}"; exit 1; }
    COMP_WORDS=(acp-agent --unstable-off pro); COMP_CWORD=2; _acp_agent; [ "${COMPREPLY[*]}" = providers ] || { echo "--unstable-off pro -> ${COMPREPLY[*]}"; exit 1; }
    complete -p acp acp-agent >/dev/null
' sh "$src" || fail "bash completion"
# zsh: the functions parse.
zsh -n "$src/completions/_acp" && zsh -n "$src/completions/_acp-agent" || fail "zsh completion does not parse"
# Every option --help names is completed (by bash and by zsh).
for prog in acp acp-agent; do
    for opt in $("$bin/$prog" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
        grep -q -- "$opt\\b" "$src/completions/$prog.bash" || fail "$prog.bash lacks $opt"
        grep -q -- "'$opt[=[]" "$src/completions/_$prog" || grep -q -- "$opt=\\|$opt\\[" "$src/completions/_$prog" ||
            fail "_$prog lacks $opt"
    done
done
echo "cli: --opt=value, --log-level debug (redacted), bash and zsh completions"
