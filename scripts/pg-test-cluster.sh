#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A throwaway PostgreSQL cluster for tests and benchmarks: initdb into a temp dir, the server on
# a unix socket only (listen_addresses=''), trust auth for the postgres role. Nothing outside the
# temp dir and STATE is touched, and nothing listens on TCP.
#
#   pg-test-cluster.sh start STATE [-c name=value ...]   new cluster; prints its conninfo
#   pg-test-cluster.sh stop STATE                        stops it and removes its files
#   pg-test-cluster.sh down STATE                        stops the server, keeps the data
#   pg-test-cluster.sh up STATE                          starts it again (same socket, same data)
#   pg-test-cluster.sh conninfo STATE                    prints the conninfo again
#
# STATE is a directory of ours (e.g. build/pg): it receives `conninfo` (libpq key=value),
# `uri` (postgresql://...) and `dir` (the temp dir, which holds data/, the socket and log).
# Binaries: $PG_BINDIR, else the newest /usr/lib/postgresql/*/bin, else $PATH. As root the
# server runs as the `postgres` OS user (PostgreSQL refuses to run as root).
# Exit status 77 means "no PostgreSQL server installed" (ctest SKIP_RETURN_CODE).
set -eu

usage() {
    echo "usage: $0 start|stop|down|up|conninfo STATE [-c name=value ...]" >&2
    exit 2
}
[ $# -ge 2 ] || usage
cmd=$1
state=$2
shift 2

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
if [ -z "$bindir" ] && command -v initdb >/dev/null 2>&1; then
    bindir=$(dirname "$(command -v initdb)")
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ] || [ ! -x "$bindir/pg_ctl" ]; then
    echo "pg-test-cluster: no PostgreSQL server binaries (initdb, pg_ctl) found" >&2
    exit 77
fi

# Run a server binary as the owner of the cluster.
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

port=5432 # the socket lives in our own directory, so the usual port never collides

server_up() {
    dir=$1
    shift
    as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 -s \
        -o "-k $dir -c listen_addresses='' -p $port $*" start >/dev/null
}

server_down() {
    dir=$1
    as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 -s stop >/dev/null 2>&1 ||
        as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate -w -t 60 -s stop >/dev/null 2>&1 ||
        true
}

# Stops the cluster recorded in STATE, if any, and removes its files and the record.
forget() {
    [ -f "$state/dir" ] || return 0
    old=$(cat "$state/dir")
    [ -d "$old/data" ] && server_down "$old"
    rm -rf "$old"
    rm -f "$state/dir" "$state/conninfo" "$state/uri"
}

state_dir() {
    [ -f "$state/dir" ] || {
        echo "pg-test-cluster: no cluster recorded in $state" >&2
        exit 1
    }
    cat "$state/dir"
}

case $cmd in
start)
    mkdir -p "$state"
    forget # a cluster left behind by an interrupted run
    # Under /tmp, short: a unix socket path must fit in 107 bytes.
    dir=$(mktemp -d /tmp/acp-pg.XXXXXX)
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
    if ! as_pg "$bindir/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 --no-sync \
        --locale=C >"$dir/initdb.log" 2>&1; then
        cat "$dir/initdb.log" >&2
        rm -rf "$dir"
        exit 1
    fi
    # Extra server options given after STATE are kept for `up`.
    printf '%s\n' "$*" >"$dir/options"
    if ! server_up "$dir" "$@"; then
        cat "$dir/log" >&2 || true
        server_down "$dir"
        rm -rf "$dir"
        exit 1
    fi
    printf '%s\n' "$dir" >"$state/dir"
    printf 'host=%s port=%s user=postgres dbname=postgres\n' "$dir" "$port" >"$state/conninfo"
    printf 'postgresql://postgres@/postgres?host=%s&port=%s\n' "$dir" "$port" >"$state/uri"
    cat "$state/conninfo"
    ;;
stop)
    forget
    ;;
down)
    dir=$(state_dir)
    as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 -s stop >/dev/null
    ;;
up)
    dir=$(state_dir)
    # shellcheck disable=SC2046
    server_up "$dir" $(cat "$dir/options")
    ;;
conninfo)
    state_dir >/dev/null
    cat "$state/conninfo"
    ;;
*)
    usage
    ;;
esac
