#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target one after the other, SECONDS in total (split evenly), from a
# working corpus seeded with the committed one. `make fuzz` calls it after building the
# fuzz_* targets into BUILD (default build/fuzz, configured with -DACP_FUZZ=ON and clang).
#
#   fuzz/run.sh SECONDS [BUILD] [TARGET...]
#
# New inputs go to BUILD/corpus/<target>/, crashes, leaks and timeouts to
# BUILD/crashes/<target>/. Exits 1 if any target found something (named on stderr): minimise
# it with `BUILD/fuzz_<target> -minimize_crash=1 FILE` and add it to fuzz/corpus/<target>/.
set -eu
seconds=${1:?usage: fuzz/run.sh SECONDS [BUILD] [TARGET...]}
src=$(cd "$(dirname "$0")" && pwd)
build=${2:-$src/../build/fuzz}
[ $# -ge 2 ] && shift 2 || shift $#
targets=${*:-"rpc_recv json_scan agent_recv agent_seq sse_parse openai_stream store_cursor roots_resolve client_recv mcp_recv cmdline_split ws_frames h2_request shttp_post http1_parse http1_serve"}

count=0
for t in $targets; do count=$((count + 1)); done
each=$((seconds / count))
[ "$each" -ge 1 ] || each=1

failed=
for t in $targets; do
    bin=$build/fuzz_$t
    if [ ! -x "$bin" ]; then
        echo "fuzz/run.sh: $bin is not built" >&2
        failed="$failed $t"
        continue
    fi
    case $t in
    agent_recv | rpc_recv) max_len=65536 ;;
    agent_seq) max_len=2048 ;; # 256 steps of a few bytes each
    h2_request) max_len=81920 ;; # room for hundreds of streams on one connection (issue 21)
    *) max_len=8192 ;;
    esac
    dict=
    [ -f "$src/$t.dict" ] && dict="-dict=$src/$t.dict"
    mkdir -p "$build/corpus/$t" "$build/crashes/$t"
    echo "== $t: ${each}s"
    # The committed corpus is read (and new finds merged into the working one), never written.
    if ! "$bin" -max_total_time="$each" -max_len="$max_len" -timeout=20 -print_final_stats=1 $dict \
        -artifact_prefix="$build/crashes/$t/" "$build/corpus/$t" "$src/corpus/$t"; then
        failed="$failed $t"
    fi
done
if [ -n "$failed" ]; then
    echo "fuzz/run.sh: findings in:$failed (see $build/crashes/)" >&2
    exit 1
fi
echo "fuzz/run.sh: no crash, leak or timeout in $seconds s"
