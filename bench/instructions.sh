#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per unit of work on the paths `make bench` times, for two or more release builds
# side by side: what a change costs, measured in a way the machine's load does not move
# (valgrind --tool=callgrind: instructions the process itself executed, not the kernel's).
#
#   bench/instructions.sh BUILD... > table.md
#
# Each BUILD is a release tree with its bench programs (cmake -DCMAKE_BUILD_TYPE=Release; add
# -g to CMAKE_C_FLAGS_RELEASE to read the profiles with callgrind_annotate: it does not change
# the code). The client side of each path (acp-bench-driver, the rpc writer) is the last
# BUILD's for every build, so only the measured program differs. Every figure is the
# difference between two sizes of the same run divided by the difference in units, so what a
# process spends once (start, dynamic linking, SQLite's schema, exit) is not in it; starting
# costs are their own rows. Profiles stay in $TMPDIR/acp-instr.*/ for callgrind_annotate.
# Takes about 4 minutes a build on one core. Not a test: nothing is checked.
set -euo pipefail

[ $# -ge 1 ] || {
    echo "usage: bench/instructions.sh BUILD..." >&2
    exit 2
}
command -v valgrind >/dev/null || {
    echo "instructions.sh: needs valgrind" >&2
    exit 2
}
LAST=${!#}
DRV=$LAST/bench/acp-bench-driver
W=$LAST/bench/rpc_throughput
OUT=$(mktemp -d "${TMPDIR:-/tmp}/acp-instr.XXXXXX")
echo "instructions.sh: profiles in $OUT" >&2

# ir TAG CMD...: runs CMD, where the word @VG@ stands for valgrind under callgrind, and prints
# the instructions of the one process it profiled (the first, when a command profiles several).
ir() {
    local tag=$1 a=() w
    shift
    for w in "$@"; do
        if [ "$w" = @VG@ ]; then
            a+=(valgrind --tool=callgrind "--callgrind-out-file=$OUT/$tag.%p")
        else
            a+=("$w")
        fi
    done
    "${a[@]}" >"$OUT/$tag.out" 2>"$OUT/$tag.err" || {
        echo "instructions.sh: $tag failed: $(tail -n 3 "$OUT/$tag.err")" >&2
        return 1
    }
    local f
    f=$(ls -tr "$OUT/$tag".[0-9]* | head -n 1)
    sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$f" | head -n 1
}

# per TAG N1 N2 U1 U2 CMD... (CMD with @N@ for the size): instructions per unit.
per() {
    local tag=$1 n1=$2 n2=$3 u1=$4 u2=$5 i1 i2
    shift 5
    i1=$(ir "$tag.$n1" "${@//@N@/$n1}")
    i2=$(ir "$tag.$n2" "${@//@N@/$n2}")
    awk -v a="$i1" -v b="$i2" -v u="$u1" -v v="$u2" 'BEGIN { printf "%.0f\n", (b - a) / (v - u) }'
}

# Every figure of one build, one "key value" line each.
measure() {
    local b=$1 d=$OUT/$2 id n
    mkdir -p "$d"
    echo "reader $(per "$2.reader" 20000 100000 20000 100000 bash -c "'$W' writer @N@ | valgrind --tool=callgrind --callgrind-out-file='$OUT/$2.reader.@N@.%p' '$b/bench/rpc_throughput' reader")"
    echo "reader_tree $(per "$2.tree" 10000 50000 10000 50000 bash -c "'$W' writer @N@ | valgrind --tool=callgrind --callgrind-out-file='$OUT/$2.tree.@N@.%p' '$b/bench/rpc_throughput' reader tree")"
    echo "inproc $(per "$2.inproc" 20000 100000 20000 100000 @VG@ "$b/bench/rpc_throughput" inproc @N@)"
    echo "emit $(per "$2.emit" 20000 100000 20000 100000 @VG@ "$b/bench/rpc_throughput" emit @N@)"
    echo "stream $(per "$2.stream" 20000 100000 20000 100000 "$DRV" stream -n @N@ -b 200 -- @VG@ "$b/acp-agent" --store "$d/stream@N@.db")"
    echo "prompt $(per "$2.prompt" 500 2500 500 2500 "$DRV" fill -n @N@ -b 200 -- @VG@ "$b/acp-agent" --store "$d/prompt@N@.db")"
    echo "config $(per "$2.config" 500 2500 500 2500 "$DRV" config --no-kill -r 1 -n @N@ -- @VG@ "$b/acp-agent" --store "$d/config@N@.db")"
    echo "ping $(per "$2.ping" 500 2500 500 2500 "$DRV" config --ping -r 1 -n @N@ -- @VG@ "$b/acp-agent" --store "$d/ping@N@.db")"
    for n in 1000 5000 10000; do
        id=$("$DRV" fill -n $n -b 1250 -- "$b/acp-agent" --store "$d/replay$n.db" | sed -n 's/.*session=\([^ ]*\).*/\1/p')
        eval "id$n=$id"
    done
    local i1 i2
    i1=$(ir "$2.replay.1000" "$DRV" replay -s "$id1000" -- @VG@ "$b/acp-agent" --store "$d/replay1000.db")
    i2=$(ir "$2.replay.5000" "$DRV" replay -s "$id5000" -- @VG@ "$b/acp-agent" --store "$d/replay5000.db")
    echo "replay_row $(awk -v a="$i1" -v b="$i2" 'BEGIN { printf "%.0f\n", (b - a) / 8000 }')"
    echo "replay_20k $(ir "$2.replay.10000" "$DRV" replay -s "$id10000" -- @VG@ "$b/acp-agent" --store "$d/replay10000.db")"
    ir "$2.cold0" "$DRV" cold -r 1 -- @VG@ "$b/acp-agent" --store "$d/cold.db" >/dev/null
    echo "cold $(ir "$2.cold" "$DRV" cold -r 1 -- @VG@ "$b/acp-agent" --store "$d/cold.db")"
    echo "ingest $(per "$2.ingest" 20000 100000 20000 100000 @VG@ "$b/bench/client_ingest" @N@ 200 "$DRV" canned)"
    echo "acp_json $(per "$2.acp" 20000 100000 20000 100000 @VG@ "$b/acp" --agent "$DRV canned" --json prompt "/stream @N@ 200")"
}

k=0
for b in "$@"; do
    k=$((k + 1))
    echo "instructions.sh: $b" >&2
    measure "$b" "b$k" >"$OUT/figures.$k"
done

rows='reader|rpc reader through a pipe (rpc_throughput reader), per message
reader_tree|rpc reader, every params parsed with jansson (reader tree), per message
inproc|rpc in one process (inproc), per message
emit|rpc emission (emit), per session/update
stream|acp-agent /stream N 200, per update
prompt|acp-agent session/prompt of 200 bytes, stored, echoed, answered (fill -b 200), per prompt
config|acp-agent session/set_config_option, one at a time, per request
ping|acp-agent unknown method answered -32601 (config --ping), per request
replay_row|acp-agent session/load, per replayed update (sessions of 2,001 and 10,001)
replay_20k|acp-agent session/load of the 20,000-message session (the bench'"'"'s), whole process
cold|acp-agent cold start on an existing store (spawn, initialize, session/new), whole process
ingest|client library ingest from canned (client_ingest N 200), per update
acp_json|acp --json prompt from canned, per update'
printf '| path |'
for b in "$@"; do printf ' %s |' "$b"; done
[ $# -ge 2 ] && printf ' last vs first |'
printf '\n|---|'
for b in "$@"; do printf -- '---|'; done
[ $# -ge 2 ] && printf -- '---|'
printf '\n'
while IFS='|' read -r key label; do
    printf '| %s |' "$label"
    first='' v='' k=0
    for b in "$@"; do
        k=$((k + 1))
        v=$(sed -n "s/^$key //p" "$OUT/figures.$k")
        [ -n "$first" ] || first=$v
        printf ' %s |' "$(printf "%'d" "$v" 2>/dev/null || echo "$v")"
    done
    [ $# -ge 2 ] && awk -v a="$first" -v b="$v" 'BEGIN { printf " %+.1f%% |", 100 * (b - a) / a }'
    printf '\n'
done <<<"$rows"
