#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# acp-agent with `--store PATH` swapped for a PostgreSQL store on a test cluster, so that the
# interop tests written with SQLite paths (tests/interop-agent) run unchanged against
# PostgreSQL: ctest runs them with ACP_AGENT pointing here. One PATH always maps to one
# schema (a hash of the path), so a test that starts two agents on one store file gets two
# agents on one PostgreSQL store. The agent is exec'd: signals (kill -9) reach it directly.
#   ACP_BUILD (required)   the build dir: its acp-agent and its <cluster>/conninfo
#   ACP_PG_CLUSTER         the cluster's state dir name under ACP_BUILD (default: pg)
set -eu
build=${ACP_BUILD:?ACP_BUILD must name the build directory}
base=$(cat "$build/${ACP_PG_CLUSTER:-pg}/conninfo")

store_for() {
    schema=s_$(printf '%s' "$1" | sha1sum | cut -c1-24)
    # Two agents of one test may start together: IF NOT EXISTS can still lose that race
    # with a unique violation, after which the schema exists, which is all we need.
    psql -X -q -v ON_ERROR_STOP=1 "$base" -c "CREATE SCHEMA IF NOT EXISTS $schema" \
        >/dev/null 2>&1 ||
        psql -X -q -v ON_ERROR_STOP=1 "$base" -c "CREATE SCHEMA IF NOT EXISTS $schema" >/dev/null
    printf "%s options='-c search_path=%s'" "$base" "$schema"
}

n=$#
i=0
while [ $i -lt $n ]; do
    a=$1
    shift
    i=$((i + 1))
    case $a in
    --store)
        set -- "$@" --store "$(store_for "$1")"
        shift
        i=$((i + 1))
        ;;
    --store=*) set -- "$@" --store "$(store_for "${a#--store=}")" ;;
    *) set -- "$@" "$a" ;;
    esac
done
exec "$build/acp-agent" "$@"
