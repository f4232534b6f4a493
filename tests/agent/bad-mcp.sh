#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A misbehaving MCP stdio server for proctree.test.mjs. It answers initialize (no tools, so the
# session opens at once), and first leaves processes behind the way real servers do:
#   doublefork  a child starts a daemon and exits (the daemon stays in our process group)
#   setsid      a child moves into its own session (the group kill misses it)
#   daemon      double fork + setsid + SIGTERM ignored
#   noterm      the server itself ignores SIGTERM and stays after its stdin closes
#   envclear    setsid with an empty environment: out of reach of the tag, only the agent's
#               subreaper catches it (at exit)
# $1 the kind, $2 a directory for pid files: NAME.pid, written once the process is in place.
# Every leftover runs `sleep 987654`, so the test can tell them from a reused pid.
kind=$1 dir=$2
echo $$ >"$dir/leader.tmp" && mv "$dir/leader.tmp" "$dir/leader.pid"
rec='echo $$ >"$0/$1.tmp" && mv "$0/$1.tmp" "$0/$1.pid" && exec sleep 987654'
case $kind in
doublefork) sh -c "sh -c '$rec' '$dir' daemon &" ;;
setsid) setsid sh -c "$rec" "$dir" escaped & ;;
daemon) (trap '' TERM && setsid sh -c "$rec" "$dir" daemon &) ;;
noterm) trap '' TERM ;;
envclear) env -i /usr/bin/setsid /bin/sh -c "$rec" "$dir" scrubbed & ;;
esac

while IFS= read -r line; do
    case $line in
    *'"method":"initialize"'*)
        id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
        printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"bad-%s","version":"0"}}}\n' "$id" "$kind"
        ;;
    esac
done
# stdin closed: a well-behaved server leaves now; this one does not.
if [ "$kind" = noterm ]; then
    while :; do sleep 1; done
fi
