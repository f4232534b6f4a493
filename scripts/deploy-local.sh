#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The reference deployment of docs/deploy.md on this machine: a throwaway PostgreSQL cluster
# (scripts/pg-test-cluster.sh), AGENTS acp-agent --listen on 127.0.0.1, haproxy in front of them
# terminating TLS with a self-signed certificate made for the run, one bearer token for all.
# Everything lives in one temp dir and stops on Ctrl-C / SIGTERM (or after --check).
#
#   scripts/deploy-local.sh [-n AGENTS] [-p PORT] [-b BUILD_DIR] [--check]
#
# --check: one initialize through the proxy (TLS, token, an agent's answer with its
# Acp-Connection-Id) and six more requests of that connection (each must reach the same agent),
# then stop everything; the exit status says whether it worked.
# Needs: haproxy, openssl, curl (for --check), a PostgreSQL server, acp-agent with --listen.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
agents=2
port=8443
build=$here/build
check=0
while [ $# -gt 0 ]; do
    case $1 in
    -n) agents=$2; shift 2 ;;
    -p) port=$2; shift 2 ;;
    -b) build=$2; shift 2 ;;
    --check) check=1; shift ;;
    *) echo "usage: $0 [-n AGENTS] [-p PORT] [-b BUILD_DIR] [--check]" >&2; exit 2 ;;
    esac
done
case $agents in '' | *[!0-9]* | 0) echo "deploy-local: -n takes a count of agents" >&2; exit 2 ;; esac
case $port in '' | *[!0-9]*) echo "deploy-local: -p takes a port" >&2; exit 2 ;; esac
for c in haproxy openssl; do
    command -v $c >/dev/null 2>&1 || { echo "deploy-local: needs $c (apt-get install $c)" >&2; exit 1; }
done
[ $check = 0 ] || command -v curl >/dev/null 2>&1 || { echo "deploy-local: --check needs curl" >&2; exit 1; }
agent=$build/acp-agent
[ -x "$agent" ] || { echo "deploy-local: no $agent (build first, or -b BUILD_DIR)" >&2; exit 1; }
"$agent" --help | grep -q -- --listen ||
    { echo "deploy-local: $agent has no --listen (remote ACP not built in)" >&2; exit 1; }

state=$(mktemp -d "${TMPDIR:-/tmp}/acp-deploy.XXXXXX")
pids=""
stop() {
    trap - EXIT INT TERM
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || true
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    "$here/scripts/pg-test-cluster.sh" stop "$state/pg" >/dev/null 2>&1 || true
    rm -rf "$state"
}
trap 'stop' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# PostgreSQL: the agents' one store.
"$here/scripts/pg-test-cluster.sh" start "$state/pg" >/dev/null
store=$(cat "$state/pg/uri")

# A certificate for the proxy (haproxy wants the chain and key in one file) and the token.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$state/key.pem" -out "$state/cert.pem" >/dev/null 2>&1
cat "$state/cert.pem" "$state/key.pem" >"$state/proxy.pem"
chmod 600 "$state/key.pem" "$state/proxy.pem"
(umask 077 && openssl rand -hex 32 >"$state/token")

# The agents, each on a port of its own choosing.
i=1
while [ $i -le "$agents" ]; do
    "$agent" --listen 127.0.0.1:0 --exposed --port-file "$state/agent$i.port" --store "$store" \
        --token-file "$state/token" --lease-ttl 5000 2>"$state/agent$i.log" &
    pids="$pids $!"
    i=$((i + 1))
done
servers=""
i=1
while [ $i -le "$agents" ]; do
    n=0
    while [ ! -s "$state/agent$i.port" ]; do
        n=$((n + 1))
        if [ $n -gt 100 ]; then
            echo "deploy-local: agent $i did not start:" >&2
            cat "$state/agent$i.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    servers="$servers
    server agent$i 127.0.0.1:$(cat "$state/agent$i.port")"
    i=$((i + 1))
done

# The proxy: TLS ends here; WebSocket and Streamable HTTP pass to the agents over HTTP/1.1; a
# Streamable HTTP connection's requests stick to the agent that issued its Acp-Connection-Id.
cat >"$state/haproxy.cfg" <<EOF
global
    log stderr format short local0 warning
defaults
    mode http
    log global
    timeout connect 5s
    timeout client 1h
    timeout server 1h
    timeout tunnel 1h
    timeout http-request 10s
frontend acp
    bind 127.0.0.1:$port ssl crt $state/proxy.pem alpn h2,http/1.1
    default_backend agents
backend agents
    balance leastconn
    stick-table type string len 64 size 100k expire 1h
    stick on req.hdr(acp-connection-id)
    stick store-response res.hdr(acp-connection-id)
$servers
EOF
haproxy -db -f "$state/haproxy.cfg" 2>"$state/haproxy.log" &
pids="$pids $!"

url=https://127.0.0.1:$port/acp
n=0
until curl -sk -o /dev/null "$url" 2>/dev/null || [ $n -gt 50 ]; do
    n=$((n + 1))
    sleep 0.1
done

if [ $check = 1 ]; then
    head=$(curl -sk -D - -o "$state/init.json" --http1.1 "$url" \
        -H "Authorization: Bearer $(cat "$state/token")" -H "Content-Type: application/json" \
        -H "Accept: application/json, text/event-stream" \
        -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}')
    cid=$(printf '%s' "$head" | tr -d '\r' | sed -n 's/^[Aa]cp-[Cc]onnection-[Ii]d: *//p')
    if [ -n "$cid" ] && grep -q '"protocolVersion":1' "$state/init.json"; then
        # The connection's later requests must reach the same agent (any other answers 404):
        # a few, so that a proxy without stickiness would be caught with two agents or more.
        i=0
        while [ $i -lt 6 ]; do
            code=$(curl -sk -o /dev/null -w '%{http_code}' --http1.1 "$url" \
                -H "Authorization: Bearer $(cat "$state/token")" \
                -H "Content-Type: application/json" -H "Acp-Connection-Id: $cid" \
                -H "Accept: application/json, text/event-stream" \
                -d '{"jsonrpc":"2.0","id":'$((i + 2))',"method":"session/list","params":{}}')
            if [ "$code" != 202 ]; then
                echo "deploy-local: a request of connection $cid was answered $code" >&2
                exit 1
            fi
            i=$((i + 1))
        done
        echo "deploy-local: ok: initialize through haproxy (TLS) reached an agent, and its" \
            "connection's requests stayed with it"
        exit 0
    fi
    echo "deploy-local: initialize through the proxy failed:" >&2
    printf '%s\n' "$head" >&2
    cat "$state/init.json" "$state/haproxy.log" "$state"/agent*.log >&2 2>/dev/null || true
    exit 1
fi

cat <<EOF
$agents agents on one PostgreSQL store behind haproxy (TLS, self-signed): Ctrl-C stops everything.
  WebSocket:        wss://127.0.0.1:$port/acp
  Streamable HTTP:  $url
  token:            $state/token  (ACP_TOKEN=\$(cat $state/token))
  certificate:      $state/cert.pem (trust it, e.g. SSL_CERT_FILE=$state/cert.pem)
  store:            psql "\$(cat $state/pg/conninfo)"  (SELECT id, lease_holder FROM acp_sessions)
  logs:             $state/agent*.log $state/haproxy.log
EOF
wait
