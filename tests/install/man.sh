#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The man pages the packages install render without a warning (groff -ww: all warnings), and
# each program's page is there.
set -eu
cd "${ACP_SOURCE:?}/docs"
for page in acp.1 acp-agent.1 libacp.3; do
    out=$(groff -man -ww -z "$page" 2>&1) || { echo "$page: groff failed" >&2; exit 1; }
    [ -z "$out" ] || { echo "$page:" >&2; echo "$out" >&2; exit 1; }
done
# Every option acp-agent's usage names is in its page (written \-\- there).
# (the server options' text is shared with acp serve: tools/common/serve_cli.c)
for opt in $(sed -n '/^static const char usage/,/;$/p;/^const char serve_cli_usage/,/;$/p' ../tools/acp-agent/main.c ../tools/common/serve_cli.c | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$(echo "$opt" | sed 's/-/\\\\-/g')" acp-agent.1 || { echo "acp-agent.1 lacks $opt" >&2; exit 1; }
done
echo "man pages: acp(1), acp-agent(1), libacp(3) render cleanly"
